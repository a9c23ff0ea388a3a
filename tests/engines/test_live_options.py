"""Live mode speaks the other commands' options: ``--ports P,P`` (the old repeatable ``--port`` still
works), and its Prometheus endpoint stays on this host unless told otherwise."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd

from kdissect.engines.live_metrics import LiveMetrics
from tests.engines.live_helpers import KDISSECT, free_port

CAPTURE = Path(__file__).resolve().parents[2] / "captures" / "librdkafka-produce-consume.pcap"


def live(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*KDISSECT, "live", "--read", str(CAPTURE), "--no-follow", "--quiet", *args],
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def test_ports_is_one_spelling_everywhere(tmp_path: Path) -> None:
    assert "--ports P,P,..." in subprocess.run([*KDISSECT, "live", "--help"], capture_output=True, text=True).stdout
    new = live("--ports", "9092,9093", "--out", str(tmp_path / "new"))
    old = live("--port", "9092", "--port", "9093", "--out", str(tmp_path / "old"))
    assert new.returncode == old.returncode == 0, new.stderr + old.stderr
    columns = ["connection_id", "correlation_id", "api_name", "status"]
    exchanges = [pd.read_parquet(tmp_path / d / "exchanges.parquet")[columns] for d in ("new", "old")]
    assert len(exchanges[0]) > 0 and exchanges[0].equals(exchanges[1])


def test_bad_ports_are_refused_like_analyze_s() -> None:
    out = live("--ports", "9092,abc")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "--ports" in out.stderr


def _listening(port: int) -> set[str]:
    """The local IPv4 addresses listening on ``port`` (from /proc/net/tcp, state 0A)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, hex_port = local.split(":")
        if state == "0A" and int(hex_port, 16) == port:
            found.add(".".join(str(int(address[i : i + 2], 16)) for i in (6, 4, 2, 0)))
    return found


def test_metrics_listen_on_localhost_by_default() -> None:
    port = free_port()
    LiveMetrics(10).serve(port)
    assert _listening(port) == {"127.0.0.1"}
    other = free_port()
    LiveMetrics(10).serve(other, "0.0.0.0")
    assert _listening(other) == {"0.0.0.0"}
