"""A report on a shipped capture prints one line, nothing on stderr: on a capture whose traffic fits in
one instant, matplotlib used to widen the time axis to four years and warn (AutoDateLocator)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CAPTURES = Path(__file__).resolve().parents[2] / "captures"


@pytest.mark.parametrize("name", ["kafka-python-admin.pcap", "librdkafka-admin.pcapng"])
def test_report_stderr_is_empty(tmp_path: Path, name: str) -> None:
    out = subprocess.run([sys.executable, "-m", "kdissect.cli", "report", str(CAPTURES / name), "-o",
                          str(tmp_path / "r.html")], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout.startswith("wrote ")
