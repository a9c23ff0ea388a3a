"""Run the command line on a generated hostile capture in a child process and measure it.

Time is the child's CPU time (user + system, from ``os.wait4``), which other processes on a
shared machine disturb less than wall time; memory is the child's peak RSS. Only ratios between
two sizes are asserted, never absolute times.

The child is started by a small launcher process, which measures it: Linux counts in a process's
peak RSS the memory of the process it was forked from, up to its ``exec``, so a command forked
from the test process (hundreds of MB in a long test session) would report the tests' memory.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from kdissect.testing.hostile import BUILDERS

MiB = 1 << 20


@dataclass(frozen=True)
class Run:
    cpu_s: float
    peak_rss: int  # bytes
    stdout: str
    returncode: int


_MARK = "@@measured"
_LAUNCHER = f"""
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stderr=subprocess.STDOUT)
_, status, usage = os.wait4(child.pid, 0)
print("\\n{_MARK}", os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime, usage.ru_maxrss, flush=True)
"""


def run_cli(capture: Path, *args: str) -> Run:
    """``kdissect analyze CAPTURE ARGS`` (or another command when ``args`` starts with one)."""
    command = list(args) if args and args[0] in ("analyze", "show", "report") else ["analyze", *args]
    argv = [sys.executable, "-m", "kdissect.cli", command[0], str(capture), *command[1:]]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    launched = subprocess.run([sys.executable, "-c", _LAUNCHER, *argv], capture_output=True, text=True, env=env)
    out, _, measured = launched.stdout.rpartition(_MARK)
    assert measured, launched.stderr
    returncode, cpu_s, maxrss_kib = measured.split()
    return Run(float(cpu_s), int(maxrss_kib) * 1024, out, int(returncode))


def hostile(tmp: Path, name: str, n: int, suffix: str = ".pcap") -> Path:
    path = tmp / f"{name}-{n}{suffix}"
    path.write_bytes(BUILDERS[name](n))
    return path


def baseline(tmp: Path) -> Run:
    """The CLI on a tiny capture: start-up time and memory, subtracted before comparing sizes."""
    return run_cli(hostile(tmp, "short_connections", 1))


def two_sizes(tmp: Path, name: str, small: int, *args: str, suffix: str = ".pcap") -> tuple[Run, Run, Run]:
    """Runs at ``small`` and ``2 * small`` and the start-up baseline; each must exit 0."""
    runs = (
        baseline(tmp),
        run_cli(hostile(tmp, name, small, suffix), *args),
        run_cli(hostile(tmp, name, 2 * small, suffix), *args),
    )
    for run in runs:
        assert run.returncode == 0, run.stdout[-2000:]
    return runs


def assert_linear(runs: tuple[Run, Run, Run], slack: float = 3.0) -> None:
    """Doubling the input at most ~doubles the work beyond start-up (``slack`` covers noise)."""
    base, small, large = runs
    floor = 0.05  # seconds: below this the difference is noise
    work_small = max(small.cpu_s - base.cpu_s, floor)
    work_large = max(large.cpu_s - base.cpu_s, floor)
    assert work_large <= slack * work_small, f"2x input: {work_small:.2f}s -> {work_large:.2f}s of CPU"


def assert_costs_like(runs: tuple[Run, Run, Run], ordinary: Run, times: float) -> None:
    """The larger run's work beyond start-up is at most ``times`` that of ``ordinary``, a run on
    ordinary input of the same size in the same test (a ratio of CPU, not a time)."""
    base, _, large = runs
    floor = 0.05  # seconds: below this the difference is noise
    work, usual = large.cpu_s - base.cpu_s, max(ordinary.cpu_s - base.cpu_s, floor)
    assert work <= times * usual, f"{work:.2f}s of CPU, ordinary input of the same size {usual:.2f}s"


GiB = 1 << 30


def assert_bounded(runs: tuple[Run, Run, Run], budget: int = GiB, flat: bool = False) -> None:
    """Peak RSS under ``budget`` at both sizes; with ``flat``, doubling the input adds little."""
    base, small, large = runs
    assert small.peak_rss < budget and large.peak_rss < budget, (small.peak_rss >> 20, large.peak_rss >> 20)
    if flat:
        grew = (large.peak_rss - small.peak_rss) >> 20
        assert grew < 48 + (small.peak_rss - base.peak_rss) // MiB // 2, f"peak RSS grew {grew} MiB for 2x input"


def assert_flat(runs: tuple[Run, Run, Run], grow: int) -> None:
    """Doubling the input adds less than ``grow`` bytes of peak RSS (a tighter ``flat``)."""
    _, small, large = runs
    assert large.peak_rss - small.peak_rss < grow, f"peak RSS {small.peak_rss >> 20} -> {large.peak_rss >> 20} MiB"


def anomaly_count(stdout: str, kind: str) -> int:
    """How many anomalies of ``kind`` the summary printed."""
    found = re.search(rf"^  {kind}: ([\d,]+)", stdout, re.M)
    assert found, stdout
    return int(found.group(1).replace(",", ""))
