"""Events the TCP reassembler emits, in stream order per direction.

A connection has two directions: 0 is from endpoint ``a`` to endpoint ``b`` and 1 the
reverse. ``a`` is the endpoint that sent the SYN when the handshake was captured, else the
sender of the first segment seen. Offsets count payload bytes from the start of the
direction as captured (the byte after the SYN, or the first byte seen mid-stream).
"""

from __future__ import annotations

from dataclasses import field
from typing import Protocol

from kdissect.dataclass import dataclass

Endpoint = tuple[str, int]


@dataclass(frozen=True, slots=True)
class StreamStart:
    """A new connection (or a new use of a 4-tuple after the old one ended)."""

    conn_id: int
    a: Endpoint
    b: Endpoint
    ts_ns: int
    syn_seen: bool  # True when ``a`` is known to be the initiator


@dataclass(frozen=True, slots=True)
class StreamData:
    """Contiguous in-order bytes of one direction, carrying the capture time of the
    segment they arrived in (bytes of one segment are never split across timestamps)."""

    conn_id: int
    direction: int
    offset: int
    data: bytes
    ts_ns: int


@dataclass(frozen=True, slots=True)
class StreamGap:
    """Bytes of one direction that will never be delivered.

    ``length`` is None when unknown: the direction was picked up mid-stream (reason
    ``"midstream"``), so bytes before ``offset`` were never seen. Other reasons:
    ``"lost"`` (a hole the peer acknowledged, or never filled by the end),
    ``"window"`` (out-of-order data beyond the per-direction buffer bound was dropped),
    ``"snaplen"`` (the capture cut the packet short).
    """

    conn_id: int
    direction: int
    offset: int
    length: int | None
    ts_ns: int
    reason: str


@dataclass(frozen=True, slots=True)
class StreamConflict:
    """A retransmitted or overlapping copy of bytes already kept carried other bytes at
    ``[offset, offset + length)`` (the first and last that differ); the first copy was kept."""

    conn_id: int
    direction: int
    offset: int
    length: int
    ts_ns: int


@dataclass(slots=True)
class DirectionStats:
    """Counters for one direction, reported when the connection ends."""

    segments: int = 0
    bytes: int = 0  # payload bytes delivered in order
    retransmissions: int = 0  # segments whose bytes had all been seen before
    overlap_bytes: int = 0  # bytes received again (dropped, first copy kept)
    out_of_order: int = 0  # segments that arrived ahead of a hole
    keepalives: int = 0
    gaps: int = 0  # holes in what was captured (a direction picked up mid-stream is not one)
    gap_bytes: int = 0  # known-length gap bytes
    zero_window_probes: int = 0
    conflicts: int = 0  # copies of bytes already kept that carried other bytes (first copy kept)
    anomalies: int = 0  # segments contradicting the stream: data past the FIN, a second FIN, RST payload...
    ignored_bytes: int = 0  # payload bytes of those segments, not part of the stream


@dataclass(frozen=True, slots=True)
class StreamEnd:
    """The connection is over: FIN from both sides, RST, a new SYN reusing the 4-tuple,
    or the end of the capture (``flush``)."""

    conn_id: int
    ts_ns: int
    # "fin", "rst", "reuse", "eof"; also "idle" (no segment for the reassembler's idle timeout)
    # and "evicted" (the connection table was full): both mean "gave up waiting", like "eof".
    reason: str
    stats: tuple[DirectionStats, DirectionStats] = field(default=(DirectionStats(), DirectionStats()))


ReassemblyEvent = StreamStart | StreamData | StreamGap | StreamConflict | StreamEnd


class RunSink(Protocol):
    """The seam between byte runs and Kafka framing: what consumes one connection's runs.

    Plain runs come from the reassembler; decrypted runs come from the TLS stage (``kdissect.tls``),
    which is itself a ``RunSink`` wrapping the Kafka one. Kafka framing (``KafkaConnection``, and
    the native path that mirrors it) cannot tell the two apart, so the contract is the same:

    - ``data``: contiguous in-order bytes of one direction. ``offset`` counts the bytes of the
      stream *this sink sees* (for a decrypted run: plaintext bytes, from the first plaintext byte
      delivered), so ``offset + len(data)`` is the next call's offset unless a ``gap`` comes between.
      ``ts_ns`` is the capture time of the packet that completed the bytes (for TLS: the record).
    - ``gap``: bytes that will never come; ``length`` None when unknown (a direction picked up
      mid-stream, or TLS records that could not be decrypted, whose plaintext length is unknown);
      ``reason`` as :class:`StreamGap`'s, plus ``"undecrypted"`` for TLS records not decrypted.
    - ``end``: the connection is over; returns the final events including its summary.

    Each call returns the events it produced (``kdissect.events.KafkaEvent``) in order.
    """

    def data(self, direction: int, offset: int, data: bytes, ts_ns: int) -> list: ...

    def gap(self, direction: int, offset: int, length: int | None, ts_ns: int, reason: str) -> list: ...

    def end(self, ts_ns: int, reason: str, stats: tuple[DirectionStats, DirectionStats] | None = None) -> list: ...
