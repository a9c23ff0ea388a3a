"""``kdissect analyze`` over several files, some of them not captures or missing: each bad file is
one line on stderr and one ``anomalies`` row naming it, the others are analysed (as the Spark
engine does); exit status 0 when anything was read, 1 when nothing could be."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd

CAPTURE = Path(__file__).resolve().parents[2] / "captures" / "kafka-python-admin.pcap"


def _analyze(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kdissect.cli", "analyze", *args], capture_output=True, text=True)


def test_bad_files_are_reported_and_the_others_analysed(tmp_path: Path) -> None:
    junk, missing = tmp_path / "notes.txt", tmp_path / "gone.pcap"
    junk.write_text("not a capture at all\n")
    out = _analyze(str(junk), str(CAPTURE), str(missing), "--out", str(tmp_path / "out"))
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == [
        f"kdissect: {junk}: not a pcap or pcapng capture: starts with 6e 6f 74 20 61 20 63 61",
        f"kdissect: cannot read {missing}: No such file or directory",
    ]
    assert "Metadata" in out.stdout
    anomalies = pd.read_parquet(tmp_path / "out" / "anomalies.parquet")
    files = anomalies[anomalies.connection_id.isna()][["kind", "source_file"]].astype(str)
    assert set(map(tuple, files.to_numpy())) >= {("not_a_capture", str(junk)), ("unreadable_file", str(missing))}
    exchanges = pd.read_parquet(tmp_path / "out" / "exchanges.parquet")
    assert len(exchanges) and set(exchanges.source_file) == {str(CAPTURE)}


def test_nothing_readable_is_exit_status_1_with_a_line_per_file(tmp_path: Path) -> None:
    junk, missing = tmp_path / "notes.txt", tmp_path / "gone.pcap"
    junk.write_text("not a capture at all\n")
    out = _analyze(str(junk), str(missing))
    assert out.returncode == 1 and out.stdout == ""
    assert len(out.stderr.splitlines()) == 2 and "Traceback" not in out.stderr
    usage = _analyze(str(CAPTURE), "--tables", "nope")
    assert usage.returncode == 2 and "unknown table" in usage.stderr
