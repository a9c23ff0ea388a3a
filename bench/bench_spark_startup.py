"""By hand: where a small Spark run's fixed cost goes, on a loaded machine where wall time says little.
Runs one kdissect command with Spark's event log on, samples the JVM's threads' CPU seconds from /proc
every 0.05 s, and prints the JVM's CPU per thread kind (py4j threads serving the driver's calls, the
JIT compilers, the main thread, the executor's task threads, the collector) and the Spark jobs, with
each task's run time and JVM CPU time::

    python bench/bench_spark_startup.py -- analyze $PWD/captures/kafka-python-admin.pcap --out /tmp/o \
        --engine spark --master 'local[1]'

(`bench/bench_command.py` gives the CPU seconds per process kind, beside another version.)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import zstandard


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def _jvm_threads(root: int, seen: dict[tuple[int, str], tuple[str, float]]) -> None:
    """The latest CPU seconds of every thread of every JVM under ``root``, by (pid, tid)."""
    tick = os.sysconf("SC_CLK_TCK")
    for pid in _descendants(root):
        try:
            if "java" not in os.readlink(f"/proc/{pid}/exe"):
                continue
            for tid in os.listdir(f"/proc/{pid}/task"):
                stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
                fields = stat.rsplit(")", 1)[1].split()
                name = re.sub(r"\d+", "N", stat[stat.index("(") + 1 : stat.rindex(")")])
                seen[(pid, tid)] = (name, (int(fields[11]) + int(fields[12])) / tick)
        except OSError:
            continue


def _jobs(log_dir: Path) -> None:
    for path in log_dir.glob("*/events_*"):
        with path.open("rb") as raw:
            text = zstandard.ZstdDecompressor().stream_reader(raw).read().decode()
        start = 0
        for line in filter(None, text.splitlines()):
            event = json.loads(line)
            kind = event["Event"]
            if kind == "SparkListenerApplicationStart":
                start = event["Timestamp"]
            elif kind == "SparkListenerJobStart":
                names = [stage.get("Stage Name") for stage in event["Stage Infos"]]
                print(f"job {event['Job ID']} at {(event['Submission Time'] - start) / 1e3:.2f} s: {names}")
            elif kind == "SparkListenerTaskEnd":
                info, metrics = event["Task Info"], event.get("Task Metrics", {})
                took = (info["Finish Time"] - info["Launch Time"]) / 1e3
                print(f"  task of stage {event['Stage ID']}: {took:.2f} s, "
                      f"JVM CPU {metrics.get('Executor CPU Time', 0) / 1e9:.2f} s")  # fmt: skip
            elif kind == "SparkListenerApplicationEnd":
                print(f"application ended at {(event['Timestamp'] - start) / 1e3:.2f} s")


def main() -> None:
    command = sys.argv[1:]
    command = command[1:] if command[:1] == ["--"] else command
    if not command:
        sys.exit(__doc__)
    with tempfile.TemporaryDirectory() as log_dir:
        conf = ["--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir=file://{log_dir}"]
        run = subprocess.Popen([sys.executable, "-m", "kdissect.cli", *command, *conf], stdout=subprocess.DEVNULL)
        seen: dict[tuple[int, str], tuple[str, float]] = {}
        while run.poll() is None:
            _jvm_threads(run.pid, seen)
            time.sleep(0.05)
        by_kind: Counter[str] = Counter()
        for name, cpu in seen.values():
            by_kind[name] += cpu
        kinds = ", ".join(f"{k} {v:.2f}" for k, v in by_kind.most_common(12))
        print(f"JVM CPU {sum(by_kind.values()):.2f} s: {kinds}")
        _jobs(Path(log_dir))


if __name__ == "__main__":
    main()
