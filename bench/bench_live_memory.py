"""By hand: a real capture replayed into the live engine until N exchanges (default a million), with
RSS, rows held and figures held printed at each checkpoint. The CI test runs the same loop smaller.

    python bench/bench_live_memory.py [--exchanges 1000000] [--capture captures/librdkafka-produce-consume.pcap]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from live_longrun import long_run

MB = 1 << 20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--exchanges", type=int, default=1_000_000)
    ap.add_argument(
        "--capture",
        type=Path,
        default=Path(__file__).resolve().parent.parent / "captures" / "librdkafka-produce-consume.pcap",
    )
    ap.add_argument("--broker-port", type=int, default=9092)
    args = ap.parse_args()
    start, cpu = time.monotonic(), time.process_time()
    run = long_run(args.capture, {args.broker_port}, args.exchanges)
    wall, cpu = time.monotonic() - start, time.process_time() - cpu
    print(f"{run.exchanges:,} exchanges in {wall:.0f} s wall, {cpu:.0f} s CPU ({run.exchanges / cpu:,.0f}/s of CPU)")
    print("rows written:", dict(run.rows_spilled))
    print("RSS MB:", [r // MB for r in run.rss])
    print("rows held:", run.rows_held)
    print("figure values held:", run.figures_held)
    print("connections held:", run.connections_held)


if __name__ == "__main__":
    main()
