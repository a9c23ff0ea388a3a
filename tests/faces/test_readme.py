"""The README's Quick start must stay true: two commands, the second is what CI runs."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _quick_start() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Quick start\s+```sh\n(.*?)```", text, re.S)
    assert block, "README must open with a Quick start code block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_quick_start_has_exactly_two_commands() -> None:
    assert len(_quick_start()) == 2


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert _quick_start()[1] in ci.splitlines()


def test_quick_start_main_job_runs() -> None:
    install, _, job = _quick_start()[0].partition(" && ")
    assert install.startswith("pip install")
    argv = shlex.split(job)
    assert argv[0] == "kdissect"
    out = subprocess.run(
        [sys.executable, "-m", "kdissect.cli", *argv[1:]], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr
    assert argv[1] == "analyze", "the main job is analysing a capture"
    assert (ROOT / argv[2]).is_file(), "the capture must ship in captures/"
    assert "Produce" in out.stdout and "Fetch" in out.stdout, out.stdout
