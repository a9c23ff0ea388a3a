"""Packets read twice: the same packet in two inputs (a capture read with a copy of part of it,
rotation sets that overlap, two people's copies of one capture).

A copy is recognised by everything a packet carries: the same connection and direction, sequence
and acknowledgement numbers, flags, bytes and capture time (a retransmission differs at least in
time). The local and Spark engines merge their inputs by time (:mod:`kdissect.sources.interleave`),
so a copy comes right after its original; ``live --read`` of a rotated set reads the files one after
the other, so an overlap's copies come after the end of the previous file. Both are met by remembering
the last ``MAX_REMEMBERED`` packets (a fingerprint each, never their bytes). Without dropping them, a
copy replayed its connection: answers became orphans, requests unanswered, or a second connection
counted every exchange twice.
"""

from __future__ import annotations

from collections import Counter, deque

from kdissect.sources.segment import TcpSegment

MAX_REMEMBERED = 1 << 15  # packets remembered (a fingerprint each): an overlap longer than this is read again
DUPLICATE_PACKETS = "duplicate_packets"  # the anomaly kind that reports them


def _endpoint(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


class DuplicateFilter:
    """Pass each segment with the name of its input; a copy of one passed from another input is not."""

    __slots__ = ("_order", "_seen", "dropped")

    def __init__(self) -> None:
        # the last packets' fingerprints (a hash of every field the copy shares, an int: no payload kept
        # alive, nothing for the garbage collector to walk) -> the input they came from; oldest first
        self._seen: dict[int, str | None] = {}
        self._order: deque[int] = deque()
        # (input, input it repeats, connection endpoints) -> packets dropped; per connection, so engines
        # that split the work by connection (Spark) report the same rows
        self.dropped: Counter[tuple[str | None, str | None, tuple[str, int], tuple[str, int]]] = Counter()

    def keep(self, seg: TcpSegment, source: str | None) -> bool:
        key = hash((seg.ts_ns, seg.src_ip, seg.src_port, seg.dst_ip, seg.dst_port, seg.seq, seg.ack, seg.flags,
                    seg.payload))
        seen = self._seen
        first = seen.get(key, seen)
        if first is seen:  # not among the last packets
            seen[key] = source
            self._order.append(key)
            if len(self._order) > MAX_REMEMBERED:
                del seen[self._order.popleft()]
            return True
        if first == source:  # twice in one input: the wire's own duplicate, the reassembler's to judge
            return True
        ends = (seg.src_ip, seg.src_port), (seg.dst_ip, seg.dst_port)
        self.dropped[(source, first, min(ends), max(ends))] += 1
        return False

    def report(self) -> list[tuple[str | None, str, int]]:
        """(input, what it repeated: connection and input, packets dropped), in the order first met."""
        return [(source, f"{_endpoint(*a)} <-> {_endpoint(*b)} of {first}", n)
                for (source, first, a, b), n in self.dropped.items()]  # fmt: skip
