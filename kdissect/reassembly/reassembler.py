"""TCP reassembly for a whole capture: connections by 4-tuple, each made of two half-streams.

Connection rules (the per-direction byte rules live in ``halfstream``):
- A connection opens on a SYN or on a segment carrying payload. Bare ACK/FIN/RST segments
  of an unknown 4-tuple open nothing (they are counted in ``ignored_segments``): they are
  almost always the tail of a connection that just ended or began before the capture.
- ``a`` is the SYN sender; a SYN-ACK seen first makes its receiver ``a``; otherwise ``a`` is
  the sender of the opening segment.
- A SYN whose sequence number contradicts the connection's handshake (or any SYN once a
  connection without a seen handshake carried data or a FIN) starts a new connection; the
  old one ends with "fin" if both FINs were seen, else "reuse".
- Both FINs with every byte before them accounted for end a connection with "fin"; a RST
  ends it at once with "rst" (its payload is not stream data). Held data is delivered and
  remaining holes become "lost" gaps before every ``StreamEnd``.
- An ended 4-tuple is remembered in a bounded table so late retransmissions of the old
  connection are dropped instead of opening a phantom one; a SYN forgets it.
- At most ``max_connections`` connections are open: opening one more ends the least
  recently active connection that never carried payload (SYN floods, scans), else the
  least recently active one, with reason "evicted". With ``idle_timeout_ns``, connections
  silent that long in capture time end with reason "idle" (checked every 1/16 of it).
  "eof", "evicted" and "idle" ends carry the time of the connection's last segment.
"""

from __future__ import annotations

from collections import OrderedDict
from operator import attrgetter

from kdissect.reassembly.halfstream import HalfStream
from kdissect.reassembly.seqnum import SEQ_MASK, seq_delta
from kdissect.reassembly.streams import Endpoint, ReassemblyEvent, StreamEnd, StreamStart
from kdissect.sources.segment import ACK, RST, SYN, TcpSegment

FlowKey = tuple[str, int, str, int]  # (src_ip, src_port, dst_ip, dst_port): one direction

# A segment on an ended 4-tuple this close (in sequence space) to where the old connection's
# sender stopped is a straggler of that connection, not a new one whose SYN was missed.
STRAGGLER_WINDOW = 1 << 26


class _Connection:
    __slots__ = ("a", "active", "b", "conn_id", "halves", "keys", "last_ts")

    def __init__(self, conn_id: int, a: Endpoint, b: Endpoint, ts: int, halves: tuple[HalfStream, ...]):
        self.conn_id = conn_id
        self.a = a
        self.b = b
        self.keys: tuple[FlowKey, FlowKey] = ((*a, *b), (*b, *a))
        self.halves = halves
        self.active = False  # carried payload: evicted after connections that never did
        self.last_ts = ts

    @property
    def both_fin(self) -> bool:
        return self.halves[0].has_fin and self.halves[1].has_fin

    def restarted_by(self, direction: int, syn_seq: int) -> bool:
        """True when a SYN sent in ``direction`` cannot belong to this connection."""
        half = self.halves[direction]
        if half.isn is not None:
            return syn_seq != half.isn  # the same ISN is a retransmitted SYN
        if half.base is not None:
            return (syn_seq + 1) & SEQ_MASK != half.base
        return self.active or self.halves[0].has_fin or self.halves[1].has_fin


class TcpReassembler:
    """Segments in (``feed``), stream events out; ``flush`` at the end of input.

    Pure state machine: never raises on segment content. Memory is bounded per direction
    by ``max_buffer_bytes`` (held out-of-order data, charged with per-chunk overhead), in
    connections by ``max_connections`` and in remembered ended 4-tuples by ``max_closed``.
    """

    def __init__(
        self,
        *,
        max_buffer_bytes: int = 8 << 20,
        settle_segments: int = 4,
        max_connections: int = 1 << 16,
        idle_timeout_ns: int | None = None,
        max_closed: int = 1 << 14,
    ) -> None:
        if max_buffer_bytes < 0 or settle_segments < 1 or max_connections < 1 or max_closed < 0:
            raise ValueError("buffer size and max_closed must be >= 0, other limits >= 1")
        if idle_timeout_ns is not None and idle_timeout_ns <= 0:
            raise ValueError("idle_timeout_ns must be positive or None")
        self._max_buffer = max_buffer_bytes
        self._settle_segments = settle_segments
        self._max_connections = max_connections
        self._idle_ns = idle_timeout_ns
        self._max_closed = max_closed
        self._flows: dict[FlowKey, tuple[_Connection, int]] = {}
        # Open connections by conn_id, least recently active first.
        self._quiet: OrderedDict[int, _Connection] = OrderedDict()  # no payload yet
        self._active: OrderedDict[int, _Connection] = OrderedDict()
        self._closed: OrderedDict[FlowKey, int | None] = OrderedDict()  # sender's end seq
        self._next_id = 0
        self._next_sweep = 0
        self.ignored_segments = 0  # segments that belonged to no connection

    @property
    def open_connections(self) -> int:
        return len(self._quiet) + len(self._active)

    def sweeps_at(self, ts: int) -> bool:
        """Whether a segment at capture time ``ts`` would run the idle sweep (an engine that feeds only
        some connections tells the time of the others by feeding a segment only then)."""
        return self._idle_ns is not None and ts >= self._next_sweep

    def sweep_due(self) -> int | None:
        """The capture time from which a segment runs the idle sweep (None: never; ``sweeps_at`` for many
        times at once)."""
        return None if self._idle_ns is None else self._next_sweep

    def feed(self, seg: TcpSegment) -> list[ReassemblyEvent]:
        """Take one segment; return the events it completes, in order.

        The per-segment work is written inline here rather than split into helpers: this
        runs once per captured packet and Python function calls are a large part of its cost.
        """
        out: list[ReassemblyEvent] = []
        flags = seg.flags
        ts = seg.ts_ns
        found = self._flows.get((seg.src_ip, seg.src_port, seg.dst_ip, seg.dst_port))
        if found is not None and flags & SYN and not flags & RST:
            conn = found[0]
            if conn.restarted_by(found[1], seg.seq & SEQ_MASK):
                self._end(conn, "fin" if conn.both_fin else "reuse", ts, out)
                found = None
        if found is None:
            found = self._open(seg, out)
        if found is not None:
            conn, d = found
            payload = seg.payload
            wire = seg.payload_len
            if wire < len(payload):  # link-layer padding captured past the TCP payload
                wire = max(wire, 0)
                payload = payload[:wire]
            conn.last_ts = ts
            if conn.active:
                self._active.move_to_end(conn.conn_id)
            elif wire:
                del self._quiet[conn.conn_id]
                self._active[conn.conn_id] = conn
                conn.active = True
            else:
                self._quiet.move_to_end(conn.conn_id)
            me = conn.halves[d]
            peer = conn.halves[d ^ 1]
            me.stats.segments += 1
            if flags & RST:
                if wire:
                    me.stats.anomalies += 1
                    me.stats.ignored_bytes += wire
                self._end(conn, "rst", ts, out)
            else:
                if flags & ACK:
                    ack = seg.ack & SEQ_MASK
                    if flags & SYN:
                        peer.learn_base(ack, ts, out)
                    peer.acknowledge(ack, seg.window, ts, out)
                me.receive(seg.seq & SEQ_MASK, flags, payload, wire, ts, out)
                if me.fin_off is not None and peer.fin_off is not None and me.finished and peer.finished:
                    self._end(conn, "fin", ts, out)
        if self._idle_ns is not None and ts >= self._next_sweep:
            self._expire(ts, self._idle_ns, out)
        return out

    def flush(self) -> list[ReassemblyEvent]:
        """End of input: every open connection delivers what it holds and ends with "eof"."""
        out: list[ReassemblyEvent] = []
        for conn in sorted([*self._quiet.values(), *self._active.values()], key=attrgetter("conn_id")):
            self._end(conn, "eof", conn.last_ts, out)
        self._closed.clear()
        return out

    # -- connection lifecycle ------------------------------------------------------------

    def _open(self, seg: TcpSegment, out: list[ReassemblyEvent]) -> tuple[_Connection, int] | None:
        flags = seg.flags
        key = (seg.src_ip, seg.src_port, seg.dst_ip, seg.dst_port)
        if flags & RST or not (flags & SYN or seg.payload_len > 0):
            self.ignored_segments += 1
            return None
        if key in self._closed:
            if not flags & SYN and self._is_straggler(key, seg.seq):
                self.ignored_segments += 1
                return None
            self._closed.pop(key)
            self._closed.pop((seg.dst_ip, seg.dst_port, seg.src_ip, seg.src_port), None)
        if self.open_connections >= self._max_connections:
            victim = next(iter((self._quiet or self._active).values()))
            self._end(victim, "evicted", victim.last_ts, out)
        src: Endpoint = (seg.src_ip, seg.src_port)
        dst: Endpoint = (seg.dst_ip, seg.dst_port)
        a, b = (dst, src) if flags & SYN and flags & ACK else (src, dst)
        cid = self._next_id
        self._next_id += 1
        halves = tuple(HalfStream(cid, d, self._max_buffer, self._settle_segments) for d in (0, 1))
        conn = _Connection(cid, a, b, seg.ts_ns, halves)
        self._flows[conn.keys[1]] = (conn, 1)
        self._flows[conn.keys[0]] = (conn, 0)  # a self-connection (a == b) has one key: direction 0
        self._quiet[cid] = conn
        out.append(StreamStart(cid, a, b, seg.ts_ns, syn_seen=bool(flags & SYN)))
        return self._flows[key]

    def _is_straggler(self, key: FlowKey, seq: int) -> bool:
        end_seq = self._closed[key]
        return end_seq is not None and abs(seq_delta(seq, end_seq)) < STRAGGLER_WINDOW

    def _end(self, conn: _Connection, reason: str, ts: int, out: list[ReassemblyEvent]) -> None:
        for half in conn.halves:
            half.close(ts, out)
        out.append(StreamEnd(conn.conn_id, ts, reason, (conn.halves[0].stats, conn.halves[1].stats)))
        for key in conn.keys:
            self._flows.pop(key, None)
        del (self._active if conn.active else self._quiet)[conn.conn_id]
        if reason in ("fin", "rst") and self._max_closed:
            closed = self._closed
            for key, half in zip(conn.keys, conn.halves, strict=True):
                closed[key] = half.end_seq()
                closed.move_to_end(key)
            while len(closed) > 2 * self._max_closed:
                closed.popitem(last=False)

    def _expire(self, now: int, idle_ns: int, out: list[ReassemblyEvent]) -> None:
        self._next_sweep = now + max(1, idle_ns // 16)
        horizon = now - idle_ns
        for table in (self._quiet, self._active):
            while table:
                conn = next(iter(table.values()))
                if conn.last_ts >= horizon:
                    break
                self._end(conn, "idle", conn.last_ts, out)
