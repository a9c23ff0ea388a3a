"""One direction of a TCP connection: sequence-numbered segments in, offset-ordered data and gaps out.

Offsets are 64-bit stream positions; a 32-bit sequence number is mapped to the offset
nearest to the delivery point, which is what makes wrap-around across 2**32 invisible.

Rules (the *why* lives next to each method):
- first copy wins: bytes already delivered or held are never replaced or delivered again; a copy
  whose bytes differ from the one kept is reported (``StreamConflict``, see ``conflicts``);
- a hole becomes a gap when the peer's ACK proves the receiver got bytes past it ("lost"),
  when held out-of-order data would exceed the buffer bound ("window"), or at close ("lost");
- a segment the snap length cut short delivers its captured bytes and a "snaplen" gap;
- a direction picked up mid-stream waits for a few segments ("settling") and starts at the
  lowest sequence number among them, after a ``StreamGap(0, None, "midstream")``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from ..sources.segment import FIN, SYN
from .conflicts import RECENT_CHUNK, RECENT_CHUNKS, differing
from .ooo_buffer import CHUNK_OVERHEAD, OutOfOrderBuffer
from .seqnum import SEQ_HALF, SEQ_MASK, seq_delta
from .streams import DirectionStats, ReassemblyEvent, StreamConflict, StreamData, StreamGap

# The largest window TCP can advertise (65535 << 14). Data or an ACK further ahead of the
# delivery point cannot belong to this stream, so it is ignored rather than trusted.
MAX_AHEAD = 1 << 30

_Pending = tuple[int, bytes, int, int]  # (seq, captured payload, wire length, ts_ns)


class HalfStream:
    """State of one direction; ``receive`` takes its segments, ``acknowledge`` the peer's ACKs."""

    __slots__ = (
        "_buf",
        "_max_buffer",
        "_pending",
        "_pending_cost",
        "_recent",
        "_settle_segments",
        "base",
        "conn_id",
        "direction",
        "fin_off",
        "high_off",
        "isn",
        "next_off",
        "peer_ack",
        "peer_window",
        "stats",
    )

    def __init__(self, conn_id: int, direction: int, max_buffer: int, settle_segments: int) -> None:
        self.conn_id = conn_id
        self.direction = direction
        self.stats = DirectionStats()
        self.isn: int | None = None  # sequence number of this side's SYN, when seen
        self.base: int | None = None  # sequence number of offset 0, once known
        self.next_off = 0  # every offset below is delivered or inside a gap
        self.high_off = 0  # end of the highest data offset seen
        self.fin_off: int | None = None  # offset the FIN occupies (= stream length)
        self.peer_ack: int | None = None  # latest ACK number the peer sent for this direction
        self.peer_window: int | None = None  # latest window the peer advertised
        self._buf = OutOfOrderBuffer()
        self._max_buffer = max_buffer
        self._settle_segments = settle_segments
        self._pending: list[_Pending] = []  # data seen before ``base`` is known
        self._pending_cost = 0
        # The last few delivered chunks (of at most RECENT_CHUNK bytes), to compare retransmissions with.
        self._recent: deque[tuple[int, bytes]] = deque(maxlen=RECENT_CHUNKS)

    @property
    def finished(self) -> bool:
        """True once the FIN was seen and every byte before it is delivered or a gap."""
        return self.fin_off is not None and self.next_off >= self.fin_off

    @property
    def has_fin(self) -> bool:
        return self.fin_off is not None

    def end_seq(self) -> int | None:
        """Sequence number just past everything this side was seen to send (None if unknown)."""
        if self.base is None:
            return None
        end = max(self.next_off, self.high_off)
        if self.fin_off is not None:
            end = max(end, self.fin_off + 1)
        return (self.base + end) & SEQ_MASK

    # -- input -------------------------------------------------------------------------

    def receive(self, seq: int, flags: int, payload: bytes, wire: int, ts: int, out: list[ReassemblyEvent]) -> None:
        """Take one segment sent in this direction (RST is the connection's business)."""
        base = self.base
        if wire > 1 and not flags & (SYN | FIN) and base is not None:
            nxt = self.next_off
            if (
                not (seq - base - nxt) & SEQ_MASK
                and not self._buf.cost
                and wire == len(payload)
                and self.fin_off is None
            ):
                # The hot path: exactly the next bytes, nothing held, nothing cut by the snap
                # length, no FIN yet. (Nothing held means nothing was seen beyond ``nxt``.)
                out.append(StreamData(self.conn_id, self.direction, nxt, payload, ts))
                if wire <= RECENT_CHUNK:
                    self._recent.append((nxt, payload))
                self.stats.bytes += wire
                self.next_off = self.high_off = nxt + wire
            else:
                self._ingest(self._offset(seq), payload, wire, ts, out)
            return
        if flags & SYN:
            if self.isn is None:
                self.isn = seq
                if self.base is None:
                    self._establish((seq + 1) & SEQ_MASK, ts, out, midstream=False)
            elif not wire and not flags & FIN:
                self.stats.retransmissions += 1
            seq = (seq + 1) & SEQ_MASK  # a SYN occupies one sequence number before the data
        elif wire <= 1 and not flags & FIN and self._is_probe(seq, wire):
            return
        if self.base is None:
            if wire:
                self._pending.append((seq, payload, wire, ts))
                self._pending_cost += len(payload) + CHUNK_OVERHEAD
            if not (
                flags & FIN or len(self._pending) >= self._settle_segments or self._pending_cost > self._max_buffer
            ):
                return
            self._settle(seq, ts, out)
        elif wire:
            self._ingest(self._offset(seq), payload, wire, ts, out)
        if flags & FIN:
            self._set_fin(self._offset(seq) + wire, wire)

    def acknowledge(self, ack: int, window: int, ts: int, out: list[ReassemblyEvent]) -> None:
        """Take an ACK the peer sent: bytes it acknowledges but the capture never showed are lost.

        (Wireshark's "ACKed unseen segment".) The ACK of an unseen FIN would look like one
        lost byte after the data, so a lone one-byte excess with nothing held is not a gap.
        """
        self.peer_ack = ack
        self.peer_window = window
        if self.base is None:
            if not self._pending or not self._acks_pending(ack):
                return
            self._settle(ack, ts, out)
        nxt = self.next_off
        d = (ack - self.base - nxt) & SEQ_MASK
        if d == 0 or d > MAX_AHEAD:
            return
        if self.fin_off is not None:
            limit = min(nxt + d, self.fin_off)
        elif d == 1 and not self._buf.cost:
            return
        else:
            limit = nxt + d
        if limit > nxt:
            self._skip_to(limit, "lost", ts, out)

    def learn_base(self, seq: int, ts: int, out: list[ReassemblyEvent]) -> None:
        """The peer's SYN-ACK acknowledged our SYN, so ``seq`` is offset 0 even if the SYN was missed."""
        if self.base is None:
            self._establish(seq, ts, out, midstream=False)

    def close(self, ts: int, out: list[ReassemblyEvent]) -> None:
        """No more input: deliver what is held and turn every remaining hole into a "lost" gap."""
        if self.base is None:
            if not self._pending:
                return
            self._settle(0, ts, out)  # data is held, so the fallback is not used
        target = self.high_off if self.fin_off is None else max(self.high_off, self.fin_off)
        if target > self.next_off:
            self._skip_to(target, "lost", ts, out)

    # -- sequence space ------------------------------------------------------------------

    def _offset(self, seq: int) -> int:
        nxt = self.next_off
        return nxt + ((seq - self.base - nxt + SEQ_HALF) & SEQ_MASK) - SEQ_HALF

    def _is_probe(self, seq: int, wire: int) -> bool:
        """Count keep-alives and zero-window probes; True when the segment carries no stream data.

        A keep-alive sits one byte before what the sender has sent so far, with 0 or 1
        garbage byte. While the peer advertises a zero window, a probe either sits one byte
        before the peer's ACK (Linux) or carries the next new byte (BSD, Windows), which is
        then delivered like any other. Before ``base`` is known, the peer's ACK number
        stands in for "sent so far".
        """
        if self.base is not None:
            sent: int | None = (self.base + max(self.high_off, self.next_off)) & SEQ_MASK
        else:
            sent = self.peer_ack
        if self.peer_window == 0 and self.peer_ack is not None:
            if seq == (self.peer_ack - 1) & SEQ_MASK:
                self.stats.zero_window_probes += 1
                return True
            if wire == 1 and seq == sent:
                self.stats.zero_window_probes += 1
            return False
        if sent is not None and seq == (sent - 1) & SEQ_MASK:
            self.stats.keepalives += 1
            return True
        return False

    # -- mid-stream start ----------------------------------------------------------------

    def _acks_pending(self, ack: int) -> bool:
        """True when ``ack`` covers a held segment: reordering before it is over."""
        return any(0 <= seq_delta(ack, seq + wire) <= MAX_AHEAD for seq, _, wire, _ in self._pending)

    def _settle(self, fallback_seq: int, ts: int, out: list[ReassemblyEvent]) -> None:
        """Fix offset 0 of a direction first seen mid-stream.

        The rule: offset 0 is the lowest sequence number among the data segments held so
        far. Holding stops at ``settle_segments`` data segments, when the peer ACKs one of
        them, at this side's FIN, when the held bytes reach the buffer bound, or at close.
        With no data held (a bare FIN), ``fallback_seq`` becomes offset 0.
        """
        pending = self._pending
        if not pending:
            self._establish(fallback_seq, ts, out, midstream=False)
            return
        ref = pending[0][0]
        first = min(pending, key=lambda p: seq_delta(p[0], ref))
        self._establish(first[0], first[3], out, midstream=True)

    def _establish(self, base: int, ts: int, out: list[ReassemblyEvent], *, midstream: bool) -> None:
        self.base = base
        pending, self._pending = self._pending, []
        self._pending_cost = 0
        if midstream:
            self._gap(0, None, "midstream", ts, out)
        for seq, payload, wire, seg_ts in pending:
            self._ingest(self._offset(seq), payload, wire, seg_ts, out)

    # -- data path -----------------------------------------------------------------------

    def _ingest(self, off: int, payload: bytes, wire: int, ts: int, out: list[ReassemblyEvent]) -> None:
        """Place ``wire`` stream bytes at ``off`` (``payload`` = the captured ones): deliver or hold."""
        st = self.stats
        end = off + wire
        fin = self.fin_off
        if fin is not None and end > fin:
            st.anomalies += 1
            st.ignored_bytes += end - max(off, fin)
            if off >= fin:
                return
            end = fin
            payload = payload[: end - off]
        nxt = self.next_off
        if end <= nxt:
            st.retransmissions += 1
            st.overlap_bytes += end - off
            self._compare(off, payload, self._recent, ts, out)
            return
        if end - nxt > MAX_AHEAD:
            st.anomalies += 1
            st.ignored_bytes += end - off
            return
        if end > self.high_off:
            self.high_off = end
        buf = self._buf
        if off < nxt:
            self._compare(off, payload[: nxt - off], self._recent, ts, out)
        if off <= nxt and (not buf.cost or end <= buf.first_start):
            if off < nxt:
                st.overlap_bytes += nxt - off
                payload = payload[nxt - off :]
                off = nxt
            self._deliver(off, end, payload, ts, out)
            self.next_off = end
            if buf.cost:
                self._drain(out)
            return
        span = end - off
        if off < nxt:
            payload = payload[nxt - off :]
            off = nxt
        if buf.cost:
            self._compare(off, payload, buf.held(off, end), ts, out)
        kept = buf.insert(off, end, payload, ts)
        if not kept:
            st.retransmissions += 1
            st.overlap_bytes += span
            return
        st.overlap_bytes += span - kept
        if off > nxt:
            st.out_of_order += 1
        else:
            self._drain(out)
        while buf.cost > self._max_buffer:
            self._skip_to(buf.first_start, "window", ts, out)

    def _set_fin(self, fin_off: int, wire: int) -> None:
        st = self.stats
        if self.fin_off is None:
            if fin_off < self.high_off:  # data beyond the FIN was already seen
                st.anomalies += 1
            else:
                self.fin_off = fin_off
        elif fin_off != self.fin_off:
            st.anomalies += 1
        elif not wire:
            st.retransmissions += 1

    def _skip_to(self, limit: int, reason: str, ts: int, out: list[ReassemblyEvent]) -> None:
        """Advance the delivery point to at least ``limit``: holes become gaps, held data is delivered."""
        buf = self._buf
        while self.next_off < limit:
            stop = min(limit, buf.first_start) if buf.cost else limit
            self._gap(self.next_off, stop - self.next_off, reason, ts, out)
            self.next_off = stop
            self._drain(out)

    def _drain(self, out: list[ReassemblyEvent]) -> None:
        for start, end, data, ts in self._buf.take_contiguous(self.next_off):
            self._deliver(start, end, data, ts, out)
            self.next_off = end

    def _deliver(self, off: int, end: int, data: bytes, ts: int, out: list[ReassemblyEvent]) -> None:
        n = len(data)
        if n:
            out.append(StreamData(self.conn_id, self.direction, off, data, ts))
            if n <= RECENT_CHUNK:
                self._recent.append((off, data))
            self.stats.bytes += n
        if off + n < end:
            self._gap(off + n, end - off - n, "snaplen", ts, out)

    def _compare(self, off: int, data: bytes, kept: Iterable[tuple[int, bytes]], ts: int,
                 out: list[ReassemblyEvent]) -> None:
        """A copy of bytes already kept (``kept``: chunks of them): report where it differs."""
        found = differing(off, data, kept)
        if found is not None:
            self.stats.conflicts += 1
            out.append(StreamConflict(self.conn_id, self.direction, found[0], found[1] - found[0], ts))

    def _gap(self, off: int, length: int | None, reason: str, ts: int, out: list[ReassemblyEvent]) -> None:
        out.append(StreamGap(self.conn_id, self.direction, off, length, ts, reason))
        if reason != "midstream":  # a late start is no hole in what was captured
            self.stats.gaps += 1
        if length:
            self.stats.gap_bytes += length
