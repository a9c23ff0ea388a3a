"""The report's memory at a fleet's many client addresses, and the JSON it streams (issue #20).

A capture of N short real kcat connections, each from its own address (the capture of
``bench/bench_inventory.py``, which measures 25k to 400k): the report's peak memory, measured in a
child process, grows by a bounded number of bytes per client. Before the tables' column lists were
freed as they became frames and the JSON was written piece by piece, it grew ~5.5 KB per client
(1.9 GB at 400k); the bound below leaves room for noise, not for that.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kdissect.analysis.frames import analysis_frames, taken_frames
from kdissect.engines import local
from kdissect.report.build import build_document, render, write_report

from ..bounds_helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from bench_inventory import make_capture  # noqa: E402

CAPTURES = ROOT / "captures"
PER_CLIENT = 4_200  # bytes of peak RSS per client address between 10k and 20k: ~3.35 KB now, ~5.5 KB before


def test_report_memory_grows_by_a_bounded_amount_per_client(tmp_path: Path) -> None:
    small, large = 10_000, 20_000
    peaks = []
    for clients in (small, large):
        run = run_cli(make_capture(clients, tmp_path), "report", "-o", str(tmp_path / f"r{clients}.json"))
        assert run.returncode == 0, run.stdout[-2000:]
        peaks.append(run.peak_rss)
    per_client = (peaks[1] - peaks[0]) / (large - small)
    assert per_client < PER_CLIENT, f"{per_client:,.0f} bytes of peak memory per client"


@pytest.mark.parametrize("name", ["librdkafka-transactions.pcap", "kafka-python-admin.pcap", "sasl-scram-logins.pcap"])
def test_the_streamed_json_report_is_json_dumps_text_of_the_same_tables(tmp_path: Path, name: str) -> None:
    """Frames taken table by table equal the frames made from a run's tables left in place, and the
    file written piece by piece is exactly ``json.dumps``'s text of the report."""
    capture = CAPTURES / name
    run = local.analyze([capture])
    kept = analysis_frames(run.tables)
    taken = taken_frames(dict(run.tables))
    assert kept.keys() == taken.keys()
    for table in kept:
        assert kept[table].equals(taken[table]), table
    out = write_report(taken, run.summary, [str(capture)], tmp_path / "report.json")
    text = out.read_text(encoding="ascii")
    assert text == json.dumps(json.loads(text), indent=1, ensure_ascii=True, allow_nan=False)
    assert text.encode() == render(build_document(kept, run.summary, [str(capture)]), "json")
