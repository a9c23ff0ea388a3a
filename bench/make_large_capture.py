"""Make a large real-traffic capture for the pipeline benchmark (bench/bench_pipeline.py).

A tansu broker on 127.0.0.1 and real clients, started and captured with the corpus harness
(captures/harness.py): in rounds, confluent-kafka, kafka-python and aiokafka each produce JSON events with every
codec (one producer per codec) to a fresh 3-partition topic, then a consumer group of each client reads
the round back with auto-commit, until the capture file reaches the size asked for. aiokafka speaks
Produce v7 / Fetch v11, old enough for tshark 4.0 to decode its records too (it skips newer versions).
The capture is taken with tcpdump on loopback, so segments are up to 64 KB; bench/resegment.py gives
the NIC shape.

    PYTHON=.venv/bin/python bash captures/setup.sh          # once: tansu, clients, tcpdump
    python bench/make_large_capture.py --megabytes 60       # -> bench/out/large-60MB.pcap

Files go to bench/out/ (git-ignored). Broker ports are kept to 49092-49099, away from the corpus's.
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
CLIENTS = ("confluent", "kafka-python", "aiokafka")
PORTS = range(49092, 49100)
PARTITIONS = 3
WORKLOAD_TIMEOUT = 300.0


def workload(command: str, client: str, port: int, topic: str, work: Path, *extra: str) -> Workload:
    """A volume workload process; captures/ goes on its path so it can import the corpus' workloads."""
    name = f"{topic}-{command}-{client}"
    argv = [sys.executable, str(HERE / "volume_workload.py"), command, "--client", client, "--port", str(port),
            "--topic", topic, "--out", str(work / f"{name}.json"), *extra]
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(CAPTURES_DIR), os.environ.get("PYTHONPATH")]))}
    return Workload(argv, work / f"{name}.log", env=env)


def records(work: Path, topic: str, command: str, client: str) -> int:
    return json.loads((work / f"{topic}-{command}-{client}.json").read_text())["records"]


def one_round(broker: Broker, topic: str, megabytes: float, work: Path) -> int:
    """Produce with each client, then consume it all with one group per client at once; records produced."""
    broker.create_topic(topic, PARTITIONS)
    for client in CLIENTS:
        workload("produce", client, broker.port, topic, work, "--megabytes", str(megabytes)).run(WORKLOAD_TIMEOUT)
    produced = sum(records(work, topic, "produce", client) for client in CLIENTS)
    consumers = [workload("consume", client, broker.port, topic, work, "--group", f"{topic}-{client}-group",
                          "--expect", str(produced)).start() for client in CLIENTS]
    try:
        for consumer in consumers:
            consumer.finish(WORKLOAD_TIMEOUT)
    finally:
        for consumer in consumers:
            consumer.stop()
    return produced


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--megabytes", type=float, default=60, help="stop once the capture file is this big")
    ap.add_argument("--round-megabytes", type=float, default=6,
                    help="JSON value bytes each client produces per round (split over the codecs)")
    ap.add_argument("--port", type=int, default=PORTS[0], choices=PORTS)
    ap.add_argument("--out", type=Path, help="capture file (default bench/out/large-<MB>MB.pcap)")
    args = ap.parse_args()
    path = args.out or OUT / f"large-{args.megabytes:g}MB.pcap"
    work = OUT / "work" / path.stem
    work.mkdir(parents=True, exist_ok=True)
    started, produced, rounds = time.monotonic(), 0, 0
    with Broker(args.port, work / "broker.log") as broker, \
            Capture(CaptureSpec(), args.port, path, work / "capture.log") as capture:
        while path.stat().st_size < args.megabytes * 1e6:
            produced += one_round(broker, f"events-{rounds}", args.round_megabytes, work)
            rounds += 1
            print(f"round {rounds}: {path.stat().st_size / 1e6:.1f} MB, {produced:,} records produced", flush=True)
    stats = capture.stats()
    print(f"{path}: {path.stat().st_size / 1e6:.1f} MB, {rounds} rounds, {produced:,} records produced and read "
          f"back by {len(CLIENTS)} groups, {stats['packets_captured']} packets captured, "
          f"{stats['packets_dropped']} dropped by the kernel, {time.monotonic() - started:.0f} s")
    if stats["packets_dropped"]:
        raise SystemExit("the kernel dropped packets: the capture has gaps; run again on a quieter machine")


if __name__ == "__main__":
    main()
