"""Packets read twice: the same packet in two inputs (a capture read with a copy of part of it,
rotation sets that overlap, two people's copies of one capture).

A copy is recognised by everything a packet carries: the same connection and direction, sequence
and acknowledgement numbers, flags, bytes and capture time. The engines merge their inputs by time
(:mod:`kdissect.sources.interleave`), so a packet's copy comes among the packets of the same
instant: only those are remembered, so memory is bounded by what one instant holds (and by
``MAX_REMEMBERED``). Without dropping them, a copy read after the original replayed the
connection: its answers became orphans, its requests unanswered, or a second connection counted
every exchange twice.
"""

from __future__ import annotations

from collections import Counter

from kdissect.sources.segment import TcpSegment

MAX_REMEMBERED = 1 << 14  # packets of one instant remembered; past this, later copies are read again
DUPLICATE_PACKETS = "duplicate_packets"  # the anomaly kind that reports them


def _endpoint(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


class DuplicateFilter:
    """Pass each segment with the name of its input; a copy of one passed from another input is not."""

    __slots__ = ("_seen", "_ts", "dropped")

    def __init__(self) -> None:
        self._ts: int | None = None
        self._seen: dict[tuple, str | None] = {}  # the packets of instant ``_ts`` -> the input they came from
        # (input, input it repeats, connection) -> packets dropped; per connection, so engines that
        # split the work by connection (Spark) report the same rows
        self.dropped: Counter[tuple[str | None, str | None, tuple[str, int], tuple[str, int]]] = Counter()

    def keep(self, seg: TcpSegment, source: str | None) -> bool:
        if seg.ts_ns != self._ts:
            self._ts = seg.ts_ns
            self._seen.clear()
        # the payload by length and hash: holding the bytes would keep every payload of the instant alive
        key = (seg.src_ip, seg.src_port, seg.dst_ip, seg.dst_port, seg.seq, seg.ack, seg.flags, len(seg.payload),
               hash(seg.payload))
        first = self._seen.get(key, key)
        if first is key:  # not seen this instant
            if len(self._seen) < MAX_REMEMBERED:
                self._seen[key] = source
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
