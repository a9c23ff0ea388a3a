"""The analyze summary speaks plainly: no reassembler jargon, and its closing ``kdissect report`` hint
repeats the captures as they were named (a directory stays a directory), without files it just
reported unreadable."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

CAPTURE = Path(__file__).resolve().parents[2] / "captures" / "kafka-python-admin.pcap"


def analyze(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kdissect.cli", "analyze", *map(str, paths)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def hint(out: subprocess.CompletedProcess) -> str:
    last = out.stdout.splitlines()[-1]
    assert last.startswith("more (groups, lag, transactions, topology, plots): kdissect report "), last
    return last.split(": ", 1)[1]


def test_no_jargon_for_the_segments_around_a_close() -> None:
    out = analyze(CAPTURE)
    assert "segments of no connection" not in out.stdout
    assert "bare ACK/FIN/RST segments outside any connection (normal around a close)" in out.stdout


def test_a_directory_is_not_expanded_into_its_files(tmp_path: Path) -> None:
    folder = tmp_path / "caps"
    folder.mkdir()
    shutil.copy(CAPTURE, folder / "a.pcap")
    shutil.copy(CAPTURE, folder / "b.pcap")
    (folder / "junk.pcap").write_text("not a capture")
    out = analyze(folder)
    assert out.returncode == 0, out.stderr
    assert hint(out) == f"kdissect report {folder} -o report.html"


def test_files_reported_unreadable_are_left_out(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pcap"
    junk.write_text("not a capture")
    out = analyze(junk, CAPTURE)
    assert f"skipped {junk}" in out.stderr
    assert hint(out) == f"kdissect report {CAPTURE} -o report.html"
