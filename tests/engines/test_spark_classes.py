"""The class archive a local Spark run keeps in the user's cache: the first command-line run writes
it (its JVM exits to write it; with -v the run says so, without it stderr stays quiet), the next ones
find it and say nothing, and the answers are the same either way."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kdissect.engines.spark_classes import class_archive, spark_install
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


def test_an_archive_is_not_reused_once_the_spark_jars_are_installed_again(tmp_path: Path) -> None:
    """The JVM silently ignores an archive whose jars changed: a venv made again in the same place (same
    pyspark version) must get a new archive, not slow starts with the stale one."""
    jars = tmp_path / "pyspark" / "jars"
    jars.mkdir(parents=True)
    os.utime(jars, ns=(1_000_000_000, 1_000_000_000))
    before = spark_install("3.5.0", str(jars.parent))
    os.utime(jars, ns=(2_000_000_000, 2_000_000_000))  # reinstalled
    after = spark_install("3.5.0", str(jars.parent))
    assert before != after
    assert spark_install("3.5.0", str(jars.parent)) == after  # the same install keeps its archive


def test_a_killed_run_s_half_written_archive_is_removed_by_the_next_run(tmp_path: Path, monkeypatch) -> None:
    """A run killed while its JVM wrote the archive leaves ``*.jsa.<pid>.tmp``: the next run removes it
    once that process is gone, and leaves the one a live run is writing (and anything else) alone."""
    require_tool("java")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cache = tmp_path / "kdissect"
    cache.mkdir()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    killed = cache / f"spark-classes-0123456789abcdef.jsa.{gone.pid}.tmp"
    writing = cache / f"spark-classes-0123456789abcdef.jsa.{os.getpid()}.tmp"
    other = cache / "notes.tmp"
    for path in (killed, writing, other):
        path.write_bytes(b"half an archive")
    archive = class_archive(spark_install("3.5.0", str(tmp_path / "pyspark")))
    assert archive is not None and archive.writing is not None
    assert not killed.exists() and writing.exists() and other.exists()
