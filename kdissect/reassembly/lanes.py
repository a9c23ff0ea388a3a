"""The reassembly stage's native path (``_native.c``): in-order segments of settled connections.

Why: on chatty traffic (a packet or two per Kafka message) the reassembler's Python hot path and
the pipeline's dispatch of each byte run cost more than the bytes' framing. A connection in the
common case — both directions settled, nothing held out of order, no FIN — becomes a *lane*: the
next in-order segments of it (and bare ACKs) are taken by one C call per batch, which advances the
few counters they change and hands the bytes straight to the connection's ``RunSink``.

Rules (``_native.c`` states the C side's):
- Adoption (:meth:`NativeLanes.offer`), after the Python reference handled a segment: the
  connection carried payload, both directions have their offset 0 (``base``), hold nothing out of
  order and saw no FIN, its two directions are distinct 4-tuples, and the pipeline built its
  connection state (or tracks none for it).
- Hand-back: a segment of a lane that is not the hot case releases the lane *before* the reference
  sees it; the state the lane advanced (delivery points, peer ACK and window, counters, the recent
  chunks kept for conflict checks) is written into the Python half-streams, which are then exactly
  what the reference would have built. Every lane is released before anything that may end or
  judge connections other than the segment's own: the idle sweep, an eviction (the connection
  table is full), the end of input.
- While a lane owns a connection, its ``HalfStream`` objects are stale except for what the lane
  keeps current itself (the connection's ``last_ts`` and its place in the least-recently-active
  order): only the reassembler reads them, and only after a release.
"""

from __future__ import annotations

from typing import Any

from kdissect.native import native_module
from kdissect.reassembly.reassembler import TcpReassembler, _Connection
from kdissect.reassembly.streams import StreamStart
from kdissect.sources.segment import TcpSegment

_native = native_module("reassembly._native")

_State = tuple[int, int, int | None, int | None, int, int, int, list[tuple[int, bytes]]]


class NativeLanes:
    """The lanes of one reassembler; ``run`` takes what it can of a batch of segments."""

    __slots__ = ("_lanes", "_owned", "_reassembler")

    def __init__(self, reassembler: TcpReassembler) -> None:
        assert _native is not None
        self._lanes = _native.Lanes()
        self._reassembler = reassembler
        self._owned: dict[int, tuple[_Connection, Any]] = {}  # conn_id -> (connection, its RunSink or None)

    @staticmethod
    def available() -> bool:
        return _native is not None

    def __len__(self) -> int:
        return len(self._owned)

    def run(self, segments: list[TcpSegment], start: int, out: list[Any], ats: list[int] | None = None) -> int:
        """Take segments from ``start`` natively, their connections' events appended to ``out`` (and with
        ``ats``, as long as ``out``, the index of the segment of each); returns the index of the first one
        not taken (``len(segments)`` when all were), whose lane (if it had one) is already handed back, so
        the reference can take it."""
        r = self._reassembler
        while True:
            index, released, before = self._lanes.run(
                segments, start, out, r._next_sweep if r._idle_ns is not None else None, r._active.move_to_end, ats)
            if released is not None:
                self._hand_back(*released)
            if before:
                break
            start = index  # the lane was handed back after the segment before: go on with the rest
        if released is None and index < len(segments) and self._owned and (
                r.open_connections >= r._max_connections
                or (r._idle_ns is not None and segments[index].ts_ns >= r._next_sweep)):
            self.release_all()  # the segment may evict, or the sweep end, any connection
        return index

    def offer(self, seg: TcpSegment, connections: dict[int, Any]) -> None:
        """After the reference took ``seg``: its connection becomes a lane if it is in the common case.
        A sink that can have its framing done by the lane says so (``lane_framing``: the Kafka
        connection, ``kafka/session.py``); the lane then hands it frames instead of bytes."""
        found = self._reassembler._flows.get((seg.src_ip, seg.src_port, seg.dst_ip, seg.dst_port))
        if found is None:
            return
        conn = found[0]
        if not conn.active or conn.conn_id in self._owned or conn.keys[0] == conn.keys[1]:
            return
        states = []
        for half in conn.halves:
            if half.base is None or half.fin_off is not None or half._buf.cost:
                return
            states.append((half.base, half.next_off, half.high_off, half.peer_ack, half.peer_window))
        sink = connections.get(conn.conn_id)
        if isinstance(sink, StreamStart):
            return  # its state is built at its first bytes, by the reference
        framing_of = getattr(sink, "lane_framing", None)
        framing = framing_of((states[0][1], states[1][1])) if framing_of is not None else None
        self._lanes.adopt(conn.conn_id, conn, *conn.keys, None if sink is None else sink.data, *states, framing,
                          framing_of if framing is None else None)
        self._owned[conn.conn_id] = (conn, sink)

    def release_all(self) -> None:
        for released in self._lanes.release_all():
            self._hand_back(*released)

    def _hand_back(self, conn_id: int, states: tuple[_State, _State], framing: tuple | None) -> None:
        conn, sink = self._owned.pop(conn_id)
        for half, state in zip(conn.halves, states, strict=True):
            half.next_off, half.high_off, half.peer_ack, half.peer_window, segments, nbytes, keepalives, recent = state
            half.stats.segments += segments
            half.stats.bytes += nbytes
            half.stats.keepalives += keepalives
            half._recent.extend(recent)
        if framing is not None:
            sink.release_framing(framing)
