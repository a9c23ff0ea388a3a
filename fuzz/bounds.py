#!/usr/bin/env python3
"""Fuzz the resource bounds: hostile captures, mutated by hypothesis, through the command line
in a child process whose address space is capped with ``resource.setrlimit``.

``python -m fuzz.bounds --examples 200 --rss-mb 1024`` runs that many generated inputs (a builder
of ``kdissect.testing.hostile`` at a random size, then random byte flips, splices and cuts) through
``kdissect analyze`` (summary, or ``--out`` in a temporary directory). Any exit other than 0, a
traceback, or a child killed by the memory ceiling is a failure: hypothesis shrinks it and prints
the input. Run by hand, like everything else in ``fuzz/``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdissect.testing.hostile import BUILDERS

# Sizes per builder that keep one run to a few seconds.
_SIZES = {
    "ip_fragments": 20_000,
    "pipelined_requests": 6_000,
    "lz4_tiny_frames": 100_000,
    "legacy_crc_storm": 60_000,
    "gzip_wrapper_storm": 200_000,
    "gzip_of_zeros": 4_096,
    "short_connections": 10_000,
    "frame_heads": 512,
    "long_walks": 2048,
    "midstream_traffic": 4096,
    "out_of_order_segments": 20_000,
    "inflating_batch": 24,
    "many_exchanges": 20_000,
    "many_brokers": 200,
}


def _limit(ceiling: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))

    return apply


def run_capture(path: Path, ceiling: int, out: Path | None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "kdissect.cli", "analyze", str(path)]
    if out is not None:
        argv += ["--out", str(out)]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.run(argv, capture_output=True, text=True, preexec_fn=_limit(ceiling), env=env, timeout=600)


@st.composite
def hostile_captures(draw: st.DrawFn) -> bytes:
    name = draw(st.sampled_from(sorted(BUILDERS)))
    n = draw(st.integers(1, _SIZES[name]))
    data = bytearray(BUILDERS[name](n))
    for _ in range(draw(st.integers(0, 8))):
        at = draw(st.integers(0, max(0, len(data) - 1)))
        action = draw(st.sampled_from(("flip", "splice", "cut")))
        if action == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif action == "splice":
            data[at:at] = draw(st.binary(min_size=1, max_size=64))
        elif action == "cut" and at > 24:
            del data[at : at + draw(st.integers(1, 4096))]
    return bytes(data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=100)
    ap.add_argument("--rss-mb", type=int, default=1024, help="memory ceiling (RLIMIT_AS) of each run, MiB")
    args = ap.parse_args()
    # Address space, not RSS: the interpreter, numpy and pyarrow reserve ~1 GB they never touch.
    ceiling = (args.rss_mb + 1024) << 20
    stats = {"runs": 0, "seconds": 0.0}

    @settings(max_examples=args.examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(capture=hostile_captures(), with_out=st.booleans())
    def check(capture: bytes, with_out: bool) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "input.pcap"
            path.write_bytes(capture)
            start = time.monotonic()
            done = run_capture(path, ceiling, Path(tmp) / "out" if with_out else None)
            stats["runs"] += 1
            stats["seconds"] += time.monotonic() - start
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        assert done.returncode in (0, 1, 2), (done.returncode, done.stderr[-3000:])  # 1/2: a one-line error

    check()
    ceiling_text = f"ceiling {args.rss_mb} MiB + 1 GiB of address space"
    print(f"{stats['runs']} runs, {stats['seconds']:.0f} s, no failure ({ceiling_text})")


if __name__ == "__main__":
    main()
