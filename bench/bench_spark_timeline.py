"""By hand: where a Spark run's cores idle, from Spark's event log. Runs one kdissect command with the
event log on (or reads the log of one already run: ``--log DIR``) and prints, per stage, its wall time,
how busy its task slots were (task seconds over slots x wall), the tail where fewer tasks ran than
there are slots (until the stage ended), and its tasks' times in start order; then the time the
driver spent between jobs, before the first and after the last::

    python bench/bench_spark_timeline.py --slots 2 -- analyze /captures/ --out /tmp/o \
        --engine spark --master 'local[2]'

Timing on a shared machine says little by itself; the shape (a stage whose last task runs alone) does,
and so do CPU seconds: while the command runs, every process under it is sampled from /proc every 0.1 s,
and each stage (and the time outside the jobs) is given the CPU seconds the driver's Python, the JVM (its
executor task threads apart) and Spark's Python workers took in it.
``python -m kdissect.cli`` imports the kdissect of the current directory first: run it from the tree
to time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import zstandard
from bench_spark_startup import _descendants

KINDS = ("driver", "jvm", "jvm tasks", "workers")
Sample = tuple[float, dict[str, float]]  # (epoch s, CPU s so far by kind)


@dataclass
class Stage:
    job: int
    start: float = 0.0
    end: float = 0.0
    tasks: list[tuple[float, float]] = field(default_factory=list)  # (launch, finish), s


def events(log_dir: Path) -> Iterator[dict]:
    for path in sorted(log_dir.glob("*/events_*")):
        with path.open("rb") as raw:
            text = zstandard.ZstdDecompressor().stream_reader(raw).read() if path.suffix == ".zstd" else raw.read()
        yield from (json.loads(line) for line in text.decode().splitlines() if line.strip())


def tail(stage: Stage, slots: int) -> float:
    """Seconds from when fewer than ``slots`` tasks last began to run until the stage ended."""
    changes = sorted([(t0, 1) for t0, _ in stage.tasks] + [(t1, -1) for _, t1 in stage.tasks])
    running, since = 0, stage.start
    for at, step in changes:
        if running >= slots > running + step:
            since = at
        running += step
    return stage.end - since


def _cpu(path: str) -> float:
    fields = Path(path).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sample(root: int, seen: dict[tuple[int, int], tuple[str, float]]) -> dict[str, float]:
    """CPU seconds so far by kind: each process's (and each JVM executor task thread's) latest figure,
    kept in ``seen`` after it ends (a worker's CPU is not lost when it exits between samples)."""
    for pid in _descendants(root):
        try:
            java = "java" in os.readlink(f"/proc/{pid}/exe")
            seen[(pid, 0)] = ("driver" if pid == root else "jvm" if java else "workers", _cpu(f"/proc/{pid}/stat"))
            for tid in os.listdir(f"/proc/{pid}/task") if java else ():
                if Path(f"/proc/{pid}/task/{tid}/comm").read_text().startswith("Executor task"):
                    seen[(pid, int(tid))] = ("jvm tasks", _cpu(f"/proc/{pid}/task/{tid}/stat"))
        except (OSError, ValueError, IndexError):
            continue
    totals = dict.fromkeys(KINDS, 0.0)
    for kind, cpu in seen.values():
        totals[kind] += cpu
    return totals


def _cpu_at(samples: list[Sample], at: float) -> dict[str, float]:
    """The CPU seconds by kind at epoch ``at``: the last sample taken by then."""
    last = samples[0][1]
    for when, totals in samples:
        if when > at:
            break
        last = totals
    return last


def _cpu_between(samples: list[Sample], t0: float, t1: float) -> str:
    a, b = _cpu_at(samples, t0), _cpu_at(samples, t1)
    jvm = b["jvm"] - a["jvm"]
    tasks = b["jvm tasks"] - a["jvm tasks"]
    return (f"CPU s: driver {b['driver'] - a['driver']:.2f}, JVM {jvm:.2f} (task threads {tasks:.2f}), "
            f"workers {b['workers'] - a['workers']:.2f}")  # fmt: skip


def report(log_dir: Path, slots: int, samples: list[Sample] | None = None) -> None:
    start = end = 0.0
    jobs: dict[int, tuple[float, float]] = {}
    stages: dict[int, Stage] = {}
    job_of: dict[int, int] = {}
    for event in events(log_dir):
        kind = event["Event"]
        if kind == "SparkListenerApplicationStart":
            start = event["Timestamp"] / 1e3
        elif kind == "SparkListenerApplicationEnd":
            end = event["Timestamp"] / 1e3 - start
        elif kind == "SparkListenerJobStart":
            jobs[event["Job ID"]] = (event["Submission Time"] / 1e3 - start, 0.0)
            job_of.update(dict.fromkeys(event["Stage IDs"], event["Job ID"]))
        elif kind == "SparkListenerJobEnd":
            jobs[event["Job ID"]] = (jobs[event["Job ID"]][0], event["Completion Time"] / 1e3 - start)
        elif kind == "SparkListenerStageCompleted" and "Submission Time" in (info := event["Stage Info"]):
            stage = stages.setdefault(info["Stage ID"], Stage(job_of.get(info["Stage ID"], -1)))
            stage.start, stage.end = info["Submission Time"] / 1e3 - start, info["Completion Time"] / 1e3 - start
        elif kind == "SparkListenerTaskEnd":
            task = event["Task Info"]
            stages.setdefault(event["Stage ID"], Stage(job_of.get(event["Stage ID"], -1))).tasks.append(
                (task["Launch Time"] / 1e3 - start, task["Finish Time"] / 1e3 - start))
    busy_all = 0.0
    for number, stage in sorted(stages.items(), key=lambda item: item[1].start):
        wall = stage.end - stage.start
        busy = sum(t1 - t0 for t0, t1 in stage.tasks)
        busy_all += busy
        took = " ".join(f"{t1 - t0:.1f}" for t0, t1 in sorted(stage.tasks)[:24])
        print(f"job {stage.job:2d} stage {number:2d}: {stage.start:7.2f}-{stage.end:7.2f} s, wall {wall:6.2f}, "
              f"{len(stage.tasks):3d} tasks, slots busy {busy / (slots * wall) if wall else 0:4.2f}, "
              f"tail {tail(stage, slots):5.2f} s; tasks (s, in start order) {took}")  # fmt: skip
        if samples:
            print(f"    {_cpu_between(samples, start + stage.start, start + stage.end)}")
    spans = sorted(jobs.values())
    gaps = sum(max(0.0, b[0] - a[1]) for a, b in pairwise(spans))
    in_jobs = sum(t1 - t0 for t0, t1 in spans)
    print(f"run {end:.2f} s: before the first job {spans[0][0]:.2f} s, in jobs {in_jobs:.2f} s (slots busy "
          f"{busy_all / (slots * in_jobs):.2f}), driver between jobs {gaps:.2f} s, after the last "
          f"{end - spans[-1][1]:.2f} s")  # fmt: skip
    if samples:
        print(f"before the first job: {_cpu_between(samples, 0, start + spans[0][0])}")
        outside = [(a[1], b[0]) for a, b in pairwise(spans)] + [(spans[-1][1], float("inf"))]
        print(f"between and after the jobs: {sum_between(samples, start, outside)}")
        print(f"whole run: {_cpu_between(samples, 0, float('inf'))}")


def sum_between(samples: list[Sample], start: float, spans: list[tuple[float, float]]) -> str:
    """The CPU seconds by kind in these spans (seconds after ``start``) together (jobs that overlap leave
    no span between them)."""
    got = dict.fromkeys(KINDS, 0.0)
    for t0, t1 in spans:
        if t1 <= t0:
            continue
        a, b = _cpu_at(samples, start + t0), _cpu_at(samples, start + t1)
        for kind in KINDS:
            got[kind] += b[kind] - a[kind]
    return (f"CPU s: driver {got['driver']:.2f}, JVM {got['jvm']:.2f} (task threads {got['jvm tasks']:.2f}), "
            f"workers {got['workers']:.2f}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slots", type=int, default=2, help="task slots (local[N]: N)")
    ap.add_argument("--log", type=Path, help="an event log directory to read instead of running a command")
    ap.add_argument("command", nargs="*", help="kdissect's arguments, after --")
    args = ap.parse_args()
    if args.log:
        report(args.log, args.slots)
        return
    with tempfile.TemporaryDirectory(prefix="kdissect-events-") as log_dir:
        conf = ["--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir=file://{log_dir}"]
        run = subprocess.Popen([sys.executable, "-m", "kdissect.cli", *args.command, *conf],
                               stdout=subprocess.DEVNULL)  # fmt: skip
        seen: dict[tuple[int, int], tuple[str, float]] = {}
        samples: list[Sample] = []
        while run.poll() is None:
            samples.append((time.time(), sample(run.pid, seen)))
            time.sleep(0.1)
        if run.returncode:
            sys.exit(f"the command ended with status {run.returncode}")
        report(Path(log_dir), args.slots, samples)


if __name__ == "__main__":
    main()
