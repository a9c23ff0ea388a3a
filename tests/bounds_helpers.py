"""Run the command line on a generated hostile capture in a child process and measure it.

Time is the child's CPU time (user + system, from ``os.wait4``), which other processes on a
shared machine disturb less than wall time; memory is the child's peak RSS. Only ratios between
two sizes are asserted, never absolute times. Load on a shared machine only ever adds CPU time
(a start-up of ~0.5 s moves by ±0.2 s, as much as the work measured), so a ratio that fails is
measured again, keeping the least CPU seen per capture, before it is reported: a program that
really grows faster than its input fails every time.

The child is started by a small launcher process, which measures it: Linux counts in a process's
peak RSS the memory of the process it was forked from, up to its ``exec``, so a command forked
from the test process (hundreds of MB in a long test session) would report the tests' memory.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import overload

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


MEASUREMENTS = 3  # times a CPU ratio is measured before it fails


class Measured:
    """The CLI run on one capture, which can be run again: its CPU time is the least seen so far,
    the rest (output, exit status, peak RSS) the first run's."""

    def __init__(self, capture: Path, *args: str) -> None:
        self.capture, self.args = capture, args
        self.run = run_cli(capture, *args)

    def again(self) -> None:
        cpu_s = run_cli(self.capture, *self.args).cpu_s
        if cpu_s < self.run.cpu_s:
            self.run = replace(self.run, cpu_s=cpu_s)


class Runs:
    """The start-up baseline, a run at ``small`` and one at ``2 * small``: indexable as three ``Run``."""

    def __init__(self, measured: tuple[Measured, Measured, Measured]) -> None:
        self.measured = measured

    @overload
    def __getitem__(self, index: int) -> Run: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Run, ...]: ...
    def __getitem__(self, index: int | slice) -> Run | tuple[Run, ...]:
        return tuple(m.run for m in self.measured)[index]

    def __iter__(self) -> Iterator[Run]:
        return (m.run for m in self.measured)

    def again(self, *others: Measured) -> None:
        for measured in (*self.measured, *others):
            measured.again()


def hostile(tmp: Path, name: str, n: int, suffix: str = ".pcap") -> Path:
    path = tmp / f"{name}-{n}{suffix}"
    path.write_bytes(BUILDERS[name](n))
    return path


def two_sizes(tmp: Path, name: str, small: int, *args: str, suffix: str = ".pcap") -> Runs:
    """Runs at ``small`` and ``2 * small`` and the start-up baseline (the CLI on a tiny capture, whose
    time is subtracted before comparing sizes); each must exit 0."""
    runs = Runs(
        (
            Measured(hostile(tmp, "short_connections", 1)),
            Measured(hostile(tmp, name, small, suffix), *args),
            Measured(hostile(tmp, name, 2 * small, suffix), *args),
        )
    )
    for run in runs:
        assert run.returncode == 0, run.stdout[-2000:]
    return runs


FLOOR = 0.05  # seconds of work: below this a difference is noise


def assert_linear(runs: Runs, slack: float = 3.0) -> None:
    """Doubling the input at most ~doubles the work beyond start-up (``slack`` covers noise)."""
    for measurement in range(MEASUREMENTS):
        base, small, large = runs
        work_small = max(small.cpu_s - base.cpu_s, FLOOR)
        work_large = max(large.cpu_s - base.cpu_s, FLOOR)
        if work_large <= slack * work_small or measurement == MEASUREMENTS - 1:
            break
        runs.again()
    assert work_large <= slack * work_small, f"2x input: {work_small:.2f}s -> {work_large:.2f}s of CPU"


def assert_costs_like(runs: Runs, ordinary: Path, times: float) -> None:
    """The larger run's work beyond start-up is at most ``times`` that of the CLI on ``ordinary``,
    ordinary input of the same size in the same test (a ratio of CPU, not a time)."""
    usual_run = Measured(ordinary)
    for measurement in range(MEASUREMENTS):
        base, _, large = runs
        work, usual = large.cpu_s - base.cpu_s, max(usual_run.run.cpu_s - base.cpu_s, FLOOR)
        if work <= times * usual or measurement == MEASUREMENTS - 1:
            break
        runs.again(usual_run)
    assert work <= times * usual, f"{work:.2f}s of CPU, ordinary input of the same size {usual:.2f}s"


GiB = 1 << 30


def assert_bounded(runs: Runs, budget: int = GiB, flat: bool = False) -> None:
    """Peak RSS under ``budget`` at both sizes; with ``flat``, doubling the input adds little."""
    base, small, large = runs
    assert small.peak_rss < budget and large.peak_rss < budget, (small.peak_rss >> 20, large.peak_rss >> 20)
    if flat:
        grew = (large.peak_rss - small.peak_rss) >> 20
        assert grew < 48 + (small.peak_rss - base.peak_rss) // MiB // 2, f"peak RSS grew {grew} MiB for 2x input"


def assert_flat(runs: Runs, grow: int) -> None:
    """Doubling the input adds less than ``grow`` bytes of peak RSS (a tighter ``flat``)."""
    _, small, large = runs
    assert large.peak_rss - small.peak_rss < grow, f"peak RSS {small.peak_rss >> 20} -> {large.peak_rss >> 20} MiB"


def anomaly_count(stdout: str, kind: str) -> int:
    """How many anomalies of ``kind`` the summary printed."""
    found = re.search(rf"^  {kind}: ([\d,]+)", stdout, re.M)
    assert found, stdout
    return int(found.group(1).replace(",", ""))
