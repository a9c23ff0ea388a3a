"""Make a chatty real-traffic capture for bench/bench_chatty.py: many small requests, as a busy broker sees.

A tansu broker on 127.0.0.1 and real clients (bench/chatty_workload.py: confluent-kafka producers with
``linger.ms=0``, one small record per Produce; a consumer group polling; an admin client), started and
captured with the corpus harness (captures/harness.py, tcpdump on loopback) until the capture file
reaches the size asked for. Files go to bench/out/ (git-ignored); broker ports 19400-19409.

    python bench/make_chatty_capture.py                    # -> bench/out/chatty-60MB.pcap
    python bench/make_chatty_capture.py --megabytes 2      # a small one (tests, quick looks)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "captures"))

from harness import CAPTURES_DIR, Broker, Capture, CaptureSpec, Workload  # noqa: E402

OUT = HERE / "out"
PORTS = range(19400, 19410)
PARTITIONS = 1  # one partition: every Produce request names one batch of one record
TIMEOUT = 900.0  # seconds the capture may take to reach its size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--megabytes", type=float, default=60, help="stop once the capture file is this big")
    ap.add_argument("--port", type=int, default=PORTS[0], choices=PORTS)
    ap.add_argument("--producers", type=int, default=3)
    ap.add_argument("--rate", type=float, default=1500.0,
                    help="records per second per producer (faster loses packets on a busy machine)")
    ap.add_argument("--out", type=Path, help="capture file (default bench/out/chatty-<MB>MB.pcap)")
    args = ap.parse_args()
    path = args.out or OUT / f"chatty-{args.megabytes:g}MB.pcap"
    work = OUT / "work" / path.stem
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(CAPTURES_DIR), os.environ.get("PYTHONPATH")]))}
    argv = [sys.executable, str(HERE / "chatty_workload.py"), "--port", str(args.port), "--topic", "chatty",
            "--out", str(work / "counts.json"), "--producers", str(args.producers),
            "--rate", str(args.rate)]
    with Broker(args.port, work / "broker.log") as broker, \
            Capture(CaptureSpec(), args.port, path, work / "capture.log") as capture:
        broker.create_topic("chatty", PARTITIONS)
        load = Workload(argv, work / "workload.log", env=env).start(interactive=True)
        try:
            load.wait_for_line("flowing", 60)
            deadline = time.monotonic() + TIMEOUT
            while path.stat().st_size < args.megabytes * 1e6 and time.monotonic() < deadline:
                time.sleep(0.5)
            load.tell("stop")
            load.finish(120)
        finally:
            load.stop()
    stats = capture.stats()
    counts = json.loads((work / "counts.json").read_text())
    print(f"{path}: {path.stat().st_size / 1e6:.1f} MB, {stats['packets_captured']} packets captured, "
          f"{stats['packets_dropped']} dropped by the kernel, clients {counts}, {time.monotonic() - started:.0f} s")
    if stats["packets_dropped"]:
        raise SystemExit("the kernel dropped packets: the capture has gaps; run again on a quieter machine")


if __name__ == "__main__":
    main()
