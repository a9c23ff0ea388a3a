"""Where output goes is checked before any input is read: a bad path or an unsupported format is one
plain line on stderr (no errno text) and exit status 2, and nothing is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CAPTURE = Path(__file__).resolve().parents[2] / "captures" / "librdkafka-produce-consume.pcap"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kdissect.cli", *args], capture_output=True, text=True, timeout=300)


def assert_refused(out: subprocess.CompletedProcess, *words: str) -> None:
    assert out.returncode == 2, out.stderr
    assert out.stdout == "" and out.stderr.count("\n") == 1, out.stderr
    assert "Errno" not in out.stderr and "Traceback" not in out.stderr
    assert all(w in out.stderr for w in words), out.stderr


def test_report_into_a_missing_directory(tmp_path: Path) -> None:
    assert_refused(cli("report", str(CAPTURE), "-o", str(tmp_path / "nonexistent" / "r.html")), "does not exist")


def test_report_in_an_unsupported_format_says_which_are(tmp_path: Path) -> None:
    out = cli("report", str(CAPTURE), "-o", str(tmp_path / "r.pdf"))
    assert_refused(out, ".pdf", "html", "md", "json")
    assert not (tmp_path / "r.pdf").exists()


def test_report_format_from_the_extension_or_forced(tmp_path: Path) -> None:
    assert cli("report", str(CAPTURE), "-o", str(tmp_path / "r.pdf"), "--format", "md").returncode == 0
    assert (tmp_path / "r.pdf").read_text().startswith("#")


def test_report_onto_a_directory(tmp_path: Path) -> None:
    assert_refused(cli("report", str(CAPTURE), "-o", str(tmp_path)), "is a directory")


@pytest.mark.parametrize("command", [["analyze", "--out"], ["show", "--save-frames"]])
def test_tables_or_frames_into_an_existing_file(tmp_path: Path, command: list[str]) -> None:
    existing = tmp_path / "existing"
    existing.write_text("keep me")
    name, option = command
    assert_refused(cli(name, str(CAPTURE), option, str(existing)), "is a file")
    assert existing.read_text() == "keep me"


def test_live_outputs_are_checked_before_reading(tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent"
    for option, target in (("--write", missing / "raw.pcapng"), ("--report", missing / "r.html")):
        extra = ["--write", str(tmp_path / "raw.pcapng")] if option == "--report" else []
        out = cli("live", "--read", str(CAPTURE), "--no-follow", "--quiet", *extra, option, str(target))
        assert_refused(out, option, "does not exist")
