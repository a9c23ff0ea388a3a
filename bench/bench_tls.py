#!/usr/bin/env python3
"""TLS decryption throughput: kdissect against tshark, same capture, same key log, one run.

    python bench/bench_tls.py --exchanges 3000 --payload 16000 --rounds 3
    python bench/bench_tls.py --tls 1.2 --ciphers ECDHE-RSA-AES256-SHA384    # CBC + HMAC-SHA384

Builds (once per size and suite) ``bench/out/tls-N-P-SUITE.pcap`` and its key log: one real OpenSSL
session (TLS 1.3 AES-256-GCM by default, in-process, kdissect/testing/tls_session.py) carrying N Metadata and N
Produce round trips with P-byte record payloads, plus ``tls-N-P.plain.pcap``, the same frames in
the clear. Then, alternating, measures the CPU seconds (user + system of the child, so other
engineers' load on the machine matters less than wall time would) of:

- ``kdissect analyze TLS --tls-keylog KEYS`` (summary only),
- ``kdissect analyze PLAIN`` (the same work without TLS: the difference is the TLS stage),
- ``tshark -r TLS -o tls.keylog_file:KEYS -d tcp.port==9092,tls -d tls.port==9092,kafka -Y kafka``
  printing one field per Kafka PDU (decryption and Kafka dissection, like kdissect's),

and prints the median of each, MB/s of capture per CPU second, and the ratios. Run by hand.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
sys.path.insert(0, str(TREE))

from kdissect.testing.conversation import tcp_conversation  # noqa: E402
from kdissect.testing.pcapwrite import write_capture  # noqa: E402
from kdissect.testing.synthetic import kafka_messages  # noqa: E402
from kdissect.testing.tls_session import tls_session  # noqa: E402

OUT = HERE / "out"


def build(n: int, payload: int, version: str, ciphers: str | None) -> tuple[Path, Path, Path]:
    OUT.mkdir(exist_ok=True)
    stem = OUT / f"tls-{n}-{payload}-{version}-{ciphers or 'default'}"
    cap, plain, keys = (stem.parent / f"{stem.name}{suffix}" for suffix in (".pcap", ".plain.pcap", ".keys.log"))
    if not (cap.exists() and plain.exists() and keys.exists()):
        session = tls_session(kafka_messages(n, payload=payload), version=version, ciphers=ciphers)
        cap.write_bytes(write_capture(tcp_conversation(session.records)))
        plain.write_bytes(write_capture(tcp_conversation(session.plain)))
        keys.write_bytes(session.keylog)
    return cap, plain, keys


def cpu_seconds(argv: list[str]) -> float:
    """User + system CPU of one child run (its output discarded)."""
    before = os.times()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exchanges", type=int, default=3000, help="Metadata and Produce round trips, each")
    ap.add_argument("--payload", type=int, default=16000, help="record payload bytes per Produce")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tls", choices=("1.2", "1.3"), default="1.3")
    ap.add_argument("--ciphers", help="TLS 1.2 suite (OpenSSL name), e.g. ECDHE-RSA-AES256-SHA384")
    args = ap.parse_args()
    cap, plain, keys = build(args.exchanges, args.payload, args.tls, args.ciphers)
    size_mb = cap.stat().st_size / 1e6
    kd = [sys.executable, "-m", "kdissect.cli", "analyze"]
    runs = {
        "kdissect TLS": [*kd, str(cap), "--tls-keylog", str(keys)],
        "kdissect plain": [*kd, str(plain)],
        "tshark TLS": ["tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-d", "tcp.port==9092,tls",
                       "-d", "tls.port==9092,kafka", "-Y", "kafka", "-T", "fields", "-e", "kafka.correlation_id"],
    }  # fmt: skip
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, argv in runs.items():
            times[name].append(cpu_seconds(argv))
    suite = args.ciphers or ("AES-256-GCM" if args.tls == "1.3" else "OpenSSL's default")
    print(f"capture: {cap.name}, {size_mb:.1f} MB, {2 * args.exchanges} exchanges, TLS {args.tls} {suite}")
    median = {name: statistics.median(t) for name, t in times.items()}
    for name, t in median.items():
        each = ", ".join(f"{x:.2f}" for x in times[name])
        print(f"{name:15s} {t:7.2f} CPU s  {size_mb / t:7.1f} MB/s   (runs: {each})")
    print(f"tshark / kdissect TLS CPU: {median['tshark TLS'] / median['kdissect TLS']:.2f}x; "
          f"TLS stage overhead: {median['kdissect TLS'] / median['kdissect plain']:.2f}x the plaintext run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
