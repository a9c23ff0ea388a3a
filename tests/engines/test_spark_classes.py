"""The class archive a local Spark run keeps in the user's cache: the first command-line run writes
it (its JVM exits to write it; with -v the run says so, without it stderr stays quiet), the next ones
find it and say nothing, and the answers are the same either way."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import require_tool
from tests.engines.spark_helpers import REAL_CAPTURES


def analyze(cache: Path, out: Path, *verbose: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    return subprocess.run([sys.executable, "-m", "kdissect.cli", "analyze", REAL_CAPTURES[0], "--out", str(out),
                           "--engine", "spark", "--master", "local[1]", *verbose],
                          capture_output=True, text=True, env=env, timeout=600, check=True)  # fmt: skip


def test_the_first_local_run_writes_the_class_archive_and_later_runs_use_it(tmp_path: Path) -> None:
    require_tool("java")
    cache = tmp_path / "cache"
    first = analyze(cache, tmp_path / "first", "-v")
    archives = list((cache / "kdissect").iterdir())
    assert [p.suffix for p in archives] == [".jsa"] and archives[0].stat().st_size > 1 << 20  # no .tmp left
    assert "class archive" in first.stderr
    second = analyze(cache, tmp_path / "second", "-v")
    assert "class archive" not in second.stderr and list((cache / "kdissect").iterdir()) == archives
    assert second.stdout.replace("second", "first") == first.stdout


def test_writing_the_class_archive_leaves_stderr_quiet_without_verbose(tmp_path: Path) -> None:
    require_tool("java")
    first = analyze(tmp_path / "cache", tmp_path / "out")
    assert [p.suffix for p in (tmp_path / "cache" / "kdissect").iterdir()] == [".jsa"]
    assert "class archive" not in first.stderr
