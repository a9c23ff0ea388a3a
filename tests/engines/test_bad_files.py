"""A file that is not a capture among good ones: skipped with one line, and its ``anomalies`` row
names it in ``source_file`` (as the Spark engine's does), while the good file's rows name theirs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd

CAPTURE = Path(__file__).resolve().parents[2] / "captures" / "kafka-python-admin.pcap"


def test_a_skipped_file_is_named_in_source_file(tmp_path: Path) -> None:
    junk = tmp_path / "notes.pcap"
    junk.write_text("not a capture at all\n")
    out = subprocess.run([sys.executable, "-m", "kdissect.cli", "analyze", str(junk), str(CAPTURE), "--out",
                          str(tmp_path / "out")], capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert len(out.stderr.splitlines()) == 1 and "skipped" in out.stderr and str(junk) in out.stderr
    anomalies = pd.read_parquet(tmp_path / "out" / "anomalies.parquet")
    files = anomalies[anomalies.kind == "unreadable_file"]
    assert list(files.source_file.astype(str)) == [str(junk)]
    exchanges = pd.read_parquet(tmp_path / "out" / "exchanges.parquet")
    assert len(exchanges) and set(exchanges.source_file) == {str(CAPTURE)}
