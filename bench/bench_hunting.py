#!/usr/bin/env python3
"""What hunting for frame boundaries costs on crafted input, against ordinary traffic, one run.

    python bench/bench_hunting.py --kib 2048 --rounds 3
    python bench/bench_hunting.py --kib 2048 --rounds 1 --other /path/to/another/tree

Builds (in a temporary directory) captures of ``kdissect/testing/hostile.py``'s ``frame_heads``
(plausible request heads claiming megabytes), ``long_walks`` (heads whose proofs would each walk
~60,000 topics) and ``midstream_traffic`` (ordinary Produce traffic picked up mid-stream) of
``--kib`` KiB each, runs ``kdissect analyze`` (the summary) on each with this tree's code (and
``--other``'s), and prints the median CPU time (user + system of the child) beyond start-up, per
MiB, and its ratio to ordinary traffic's. Run by hand; nothing here is a test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
sys.path.insert(0, str(TREE))

from bench_bounds import run  # noqa: E402

from kdissect.testing.hostile import BUILDERS  # noqa: E402

INPUTS = ("midstream_traffic", "frame_heads", "long_walks")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kib", type=int, default=2048, help="size of each capture's payload, KiB")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--other", type=Path, help="another kdissect tree to run too (e.g. the code before a change)")
    args = ap.parse_args()
    trees = {"this": TREE, **({"other": args.other} if args.other else {})}
    with tempfile.TemporaryDirectory() as tmp:
        captures = {"start-up": Path(tmp) / "start-up.pcap"}
        captures["start-up"].write_bytes(BUILDERS["short_connections"](1))
        for name in INPUTS:
            captures[name] = Path(tmp) / f"{name}.pcap"
            captures[name].write_bytes(BUILDERS[name](args.kib))
        cpu = {
            (tree, name): statistics.median(run(path, capture, summary=True)[0] for _ in range(args.rounds))
            for tree, path in trees.items()
            for name, capture in captures.items()
        }
    mib = args.kib / 1024
    print(f"{args.kib} KiB per input, median of {args.rounds}, CPU beyond start-up per MiB")
    for tree, path in trees.items():
        print(f"  {tree} ({path}): start-up {cpu[tree, 'start-up']:.2f} s")
        ordinary = max(cpu[tree, INPUTS[0]] - cpu[tree, "start-up"], 0.001) / mib
        for name in INPUTS:
            work = (cpu[tree, name] - cpu[tree, "start-up"]) / mib
            print(f"    {name:18} {work * 1000:8.0f} ms/MiB  {work / ordinary:6.1f}x ordinary")


if __name__ == "__main__":
    main()
