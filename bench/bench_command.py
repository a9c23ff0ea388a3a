"""By hand: the cost of one kdissect command (any engine), as peak memory and CPU seconds per process
kind, optionally beside another version of the code, alternating runs (give absolute paths: a
baseline runs from its own tree). This is how the report's memory at 1x and 4x a corpus and the
Spark engine's fixed cost are measured::

    python bench/bench_command.py -- report /work/benchdata/mixed-1g -o /tmp/r.json
    python bench/bench_command.py --runs 3 --baseline /tmp/main-tree -- analyze captures/kafka-python-admin.pcap \
        --out /tmp/o --engine spark --master 'local[1]'

Memory is sampled from /proc every 0.1 s (the driver's Python and the JVM apart); CPU seconds are
per kind: the driver's Python, the JVM, Spark's Python workers (``bench_spark.timed``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench_spark import KINDS, SYSTEM, timed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1, help="runs of each version, alternating")
    ap.add_argument("--baseline", type=Path, help="another version of the code (a tree holding kdissect/)")
    ap.add_argument("--every", type=float, help="print the peaks so far every this many seconds (long runs)")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="kdissect's arguments, after --")
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("give kdissect's arguments after --")
    versions: list[tuple[str, Path | None]] = [("this", None)]
    if args.baseline is not None:
        versions.append(("baseline", args.baseline.resolve()))
    for _ in range(args.runs):
        for label, code in versions:
            wall, driver, jvm, kinds, _ = timed([sys.executable, "-m", "kdissect.cli", *command], code, args.every)
            cpu = " ".join(f"{kind} {kinds[kind]:.2f} (system {kinds[SYSTEM[kind]]:.2f})" for kind in KINDS)
            print(f"{label:8} wall {wall:7.1f} s  CPU {sum(kinds[kind] for kind in KINDS):7.2f} s ({cpu})  "
                  f"peak RSS: driver {driver:,.0f} MB, JVM {jvm:,.0f} MB", flush=True)


if __name__ == "__main__":
    main()
