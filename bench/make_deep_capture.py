"""A capture of producers pipelining deep behind a slow broker, as librdkafka's defaults allow.

Each connection sends ``--requests`` Produce requests, each answered (in order) only once ``--in-flight``
more were sent: a connection holds that many requests waiting from its start to its end, which a native
pairing must hold to pair them itself (issue #21). The connections run side by side, their packets
interleaved by time, so that many deep connections wait at once.

    python bench/make_deep_capture.py /tmp/deep.pcap --connections 20 --requests 2000 --in-flight 300
    kdissect analyze /tmp/deep.pcap --out /tmp/deep-out --tables exchanges
"""

from __future__ import annotations

import argparse
import heapq
from pathlib import Path

from kdissect.sources.segment import TcpSegment
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.kafka_frames import produce_request, produce_response
from kdissect.testing.pcapwrite import write_capture

MS = 1_000_000


def connection(index: int, requests: int, in_flight: int) -> list[TcpSegment]:
    """One producer's connection: a request every ms, its answer ``in_flight`` requests later."""
    t0 = index * 37_000  # (the connections' packets interleave, none at the same instant)
    messages = [(0, produce_request(cid, records=b"r" * (100 + cid % 300)), t0 + 2 * cid * MS)
                for cid in range(requests)]  # fmt: skip
    messages += [(1, produce_response(cid), t0 + (2 * (cid + in_flight) + 1) * MS) for cid in range(requests)]
    return tcp_conversation(sorted(messages, key=lambda m: m[2]), client=("10.0.0.1", 30000 + index))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--connections", type=int, default=20)
    parser.add_argument("--requests", type=int, default=2000, help="Produce requests per connection")
    parser.add_argument("--in-flight", type=int, default=300, help="requests each connection has waiting")
    args = parser.parse_args()
    conns = [connection(k, args.requests, args.in_flight) for k in range(args.connections)]
    segments = list(heapq.merge(*conns, key=lambda s: s.ts_ns))
    args.out.write_bytes(write_capture(segments))
    print(f"{args.out}: {len(segments):,} segments")


if __name__ == "__main__":
    main()
