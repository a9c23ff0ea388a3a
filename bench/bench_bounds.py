#!/usr/bin/env python3
"""Do the resource bounds cost anything on a normal capture? This tree against another, one run.

    python bench/bench_bounds.py --other /work/main --rounds 5
    python bench/bench_bounds.py --other /work/main --rounds 1 --exchanges 100000 --summary

Builds (once) ``bench/out/normal-bounds.pcap``: 16 connections of producers sending JSON records
in every codec, 1,448-byte segments, answered by the broker, with Metadata in between (~40 MB).
Then runs ``kdissect analyze CAPTURE --out DIR`` (every table, payloads kept) with this tree's
code and with ``--other``'s, alternating, and prints the median CPU time (user + system of the
child) and peak RSS of each, and the ratio. ``--exchanges N`` measures ``many_exchanges(N)`` of
``kdissect/testing/hostile.py`` instead (N answered Produce requests), ``--summary`` the run
without ``--out``. Run by hand; nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
sys.path.insert(0, str(TREE))

from kdissect.decoders.codecs import CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, CODEC_ZSTD  # noqa: E402
from kdissect.testing.conversation import tcp_conversation  # noqa: E402
from kdissect.testing.encoder import encode_request, encode_response  # noqa: E402
from kdissect.testing.hostile import many_exchanges  # noqa: E402
from kdissect.testing.pcapwrite import write_capture  # noqa: E402
from kdissect.testing.records_encode import encode_batch, new_record  # noqa: E402

T0 = 1_700_000_000_000_000_000
MS = 1_000_000
CODECS = (CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD)


def _produce(cid: int, codec: int, first: int) -> tuple[bytes, bytes]:
    records = [
        new_record(f"key-{first + i}".encode(), json.dumps({"id": first + i, "v": "x" * (i % 200)}).encode(), offset=i)
        for i in range(100)
    ]
    body = {
        "acks": -1,
        "timeout_ms": 30000,
        "topic_data": [
            {"name": "events", "partition_data": [{"index": cid % 6, "records": encode_batch(records, codec=codec)}]}
        ],
    }
    answer = {
        "responses": [
            {"name": "events", "partition_responses": [{"index": cid % 6, "error_code": 0, "base_offset": first}]}
        ]
    }
    return encode_request(0, 9, body, correlation_id=cid, client_id="bench"), encode_response(
        0, 9, answer, correlation_id=cid
    )


def _metadata(cid: int) -> tuple[bytes, bytes]:
    body = {"topics": [{"name": "events"}], "allow_auto_topic_creation": False}
    answer = {
        "brokers": [{"node_id": 1, "host": "broker", "port": 9092}],
        "controller_id": 1,
        "topics": [
            {
                "error_code": 0,
                "name": "events",
                "partitions": [{"partition_index": p, "leader_id": 1} for p in range(6)],
            }
        ],
    }
    return encode_request(3, 9, body, correlation_id=cid, client_id="bench"), encode_response(
        3, 9, answer, correlation_id=cid
    )


def build(path: Path, connections: int = 16, exchanges: int = 600) -> None:
    segments = []
    for c in range(connections):
        messages = []
        ts = T0 + c * MS
        for cid in range(exchanges):
            request, response = _metadata(cid) if cid % 50 == 0 else _produce(cid, CODECS[cid % 5], cid * 100)
            messages += [(0, request, ts), (1, response, ts + 2 * MS)]
            ts += 5 * MS
        segments += tcp_conversation(messages, client=("10.0.0.1", 40000 + c), server=("10.0.0.2", 9092))
    segments.sort(key=lambda s: s.ts_ns)
    path.write_bytes(write_capture(segments))


def run(tree: Path, capture: Path, summary: bool = False) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as out:
        argv = [sys.executable, "-m", "kdissect.cli", "analyze", str(capture), *([] if summary else ["--out", out])]
        proc = subprocess.Popen(argv, cwd=tree, stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(tree)})
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status):
            sys.exit(f"kdissect in {tree} failed on {capture}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--other", type=Path, required=True, help="another kdissect tree (e.g. /work/main)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--capture", type=Path, default=HERE / "out" / "normal-bounds.pcap")
    ap.add_argument("--exchanges", type=int, help="measure many_exchanges(N) of kdissect.testing.hostile")
    ap.add_argument("--summary", action="store_true", help="the run without --out")
    ap.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.exchanges:
        args.capture = HERE / "out" / f"many-exchanges-{args.exchanges}.pcap"
    if args.build_only:
        args.capture.parent.mkdir(parents=True, exist_ok=True)
        args.capture.write_bytes(many_exchanges(args.exchanges)) if args.exchanges else build(args.capture)
        return
    if not args.capture.exists():  # built by a child: a child forked from a big process counts its memory
        subprocess.run([sys.executable, __file__, *sys.argv[1:], "--build-only"], check=True)
    size = args.capture.stat().st_size
    results: dict[str, list[tuple[float, int]]] = {"this": [], "other": []}
    for _ in range(args.rounds):
        results["this"].append(run(TREE, args.capture, args.summary))
        results["other"].append(run(args.other, args.capture, args.summary))
    mode = "analyze (the summary)" if args.summary else "analyze --out (every table)"
    print(f"{args.capture.name}: {size / 1e6:.1f} MB, {args.rounds} rounds, {mode}")
    for name, tree in (("this", TREE), ("other", args.other)):
        cpu = statistics.median(r[0] for r in results[name])
        rss = max(r[1] for r in results[name]) >> 20
        runs = ", ".join(f"{r[0]:.2f}" for r in results[name])
        print(f"  {name:5} {tree}: median CPU {cpu:.2f} s ({runs}), peak RSS {rss} MiB")
    ratio = statistics.median(r[0] for r in results["this"]) / statistics.median(r[0] for r in results["other"])
    print(f"  CPU this / other: {ratio:.3f}")


if __name__ == "__main__":
    main()
