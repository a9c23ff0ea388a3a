"""``show`` of legacy (magic 0) messages, which carry no timestamp: it ended in a TypeError
(found by ``bench/shapes_sweep.py`` on the corpus, issue #20)."""

from __future__ import annotations

from pathlib import Path

from kdissect.cli import main

CAPTURE = Path(__file__).resolve().parents[2] / "captures" / "kcat-legacy-protocol.pcap"


def test_show_of_messages_without_a_timestamp_exits_0(capsys) -> None:
    assert main(["show", str(CAPTURE)]) == 0
    assert "Traceback" not in capsys.readouterr().out
