"""Throughput of TcpReassembler on synthetic traffic (run by hand; prints figures).

    python bench/bench_reassembly.py [--scale 1.0] [--profile]

Scenarios: one connection of in-order 64 KiB segments, one of in-order 1448-byte segments,
and 64 interleaved connections of 1448-byte segments with 1% lost (retransmitted later),
2% swapped with their neighbour and 0.5% duplicated. The receiver ACKs every second
segment, as delayed ACKs do. Segments are built before timing; only ``feed``/``flush`` count.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import time
from itertools import zip_longest

from kdissect.reassembly.reassembler import TcpReassembler
from kdissect.sources.segment import ACK, PSH, SYN, TcpSegment

SERVER = ("10.0.0.2", 9092)


def _connection(port: int, seg_size: int, order: list[tuple[int, bool]], ts0: int) -> list[TcpSegment]:
    """Handshake, then data segments sent in ``order`` (segment index, seen by the capture).

    The receiver gets every segment (the capture may miss some) and ACKs every second
    arrival cumulatively, as delayed ACKs do, so ACKs stall behind network reordering.
    """
    client = ("10.0.1.1", port)
    payload = bytes(range(256)) * (seg_size // 256) + bytes(seg_size % 256)
    c0, s_isn = (port * 7919) & 0xFFFFFFFF, 1
    out = [
        TcpSegment(ts0, *client, *SERVER, c0 - 1, 0, SYN, 65535, b"", 0),
        TcpSegment(ts0 + 1, *SERVER, *client, s_isn, c0, SYN | ACK, 65535, b"", 0),
    ]
    received: set[int] = set()
    acked = 0  # receiver's next expected segment index
    for n, (i, seen) in enumerate(order):
        ts = ts0 + 2 + n
        if seen:
            seq = (c0 + i * seg_size) & 0xFFFFFFFF
            out.append(TcpSegment(ts, *client, *SERVER, seq, s_isn + 1, ACK | PSH, 65535, payload, seg_size))
        received.add(i)
        while acked in received:
            received.discard(acked)
            acked += 1
        if n % 2:
            ack = (c0 + acked * seg_size) & 0xFFFFFFFF
            out.append(TcpSegment(ts, *SERVER, *client, s_isn + 1, ack, ACK, 65535, b"", 0))
    return out


def in_order(seg_size: int, count: int) -> list[TcpSegment]:
    return _connection(40000, seg_size, [(i, True) for i in range(count)], 0)


def _lossy_order(count: int, rng: random.Random) -> list[tuple[int, bool]]:
    """2% swapped with the next, 0.5% missed by the capture, 1% lost in the network and
    retransmitted 20 segments later, 0.5% duplicated."""
    order: list[tuple[int, bool]] = []
    late: dict[int, int] = {}
    i = 0
    while i < count:
        r = rng.random()
        if r < 0.02 and i + 1 < count:
            order += [(i + 1, True), (i, True)]
            i += 1
        elif r < 0.025:
            order.append((i, False))
        elif r < 0.035:
            late[i + 20] = i
        else:
            order.append((i, True))
            if r < 0.04:
                order.append((i, True))
        if i in late:
            order.append((late.pop(i), True))
        i += 1
    order += [(j, True) for j in late.values()]
    return order


def lossy_mix(count: int, connections: int = 64, seed: int = 1) -> list[TcpSegment]:
    """Interleaved connections with reordering, loss and duplicates."""
    rng = random.Random(seed)
    per_conn = count // connections
    streams = [_connection(41000 + c, 1448, _lossy_order(per_conn, rng), c) for c in range(connections)]
    # Round-robin across connections, the way a busy capture interleaves them.
    return [s for group in zip_longest(*streams) for s in group if s is not None]


def measure(name: str, segments: list[TcpSegment], profile: bool) -> None:
    payload = sum(s.payload_len for s in segments)
    r = TcpReassembler()
    prof = cProfile.Profile() if profile else None
    if prof:
        prof.enable()
    t0 = time.perf_counter()
    feed = r.feed
    n_events = 0
    for s in segments:
        n_events += len(feed(s))
    n_events += len(r.flush())
    dt = time.perf_counter() - t0
    if prof:
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(8)
    print(
        f"{name:<28} {len(segments):>9,} segs {dt:7.3f} s  {len(segments) / dt:>11,.0f} seg/s  "
        f"{payload / dt / 1e6:>9,.1f} MB/s  {n_events:>9,} events"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply segment counts")
    parser.add_argument("--profile", action="store_true", help="print the top functions by own time")
    args = parser.parse_args()
    n = args.scale
    measure("in-order 64 KiB segments", in_order(65536, int(40_000 * n)), args.profile)
    measure("in-order 1448 B segments", in_order(1448, int(400_000 * n)), args.profile)
    measure("lossy/reordered 1448 B x64", lossy_mix(int(400_000 * n)), args.profile)


if __name__ == "__main__":
    main()
