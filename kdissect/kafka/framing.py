"""Cut one direction of a TCP stream into Kafka's 4-byte-size-prefixed frames.

A pure state machine: feed it in-order byte runs and gaps (from the reassembler), get back
frames and framing anomalies. After a gap, a mid-stream start or an absurd size field it
*hunts*: it slides over the buffered bytes and only resumes at a boundary a validator
proves (a frame that decodes exactly; see :mod:`kdissect.kafka.session`), so one lost segment
costs the frames it touched, not the rest of the connection.

Memory is bounded: in normal mode by the frame being assembled (never more than
``max_frame`` + 4 bytes, and nothing is allocated for a size before its bytes arrive); in
hunting mode by ``max_hunt`` bytes, beyond which the oldest bytes are given up, and by
``MAX_WAITING`` remembered candidates. Time is linear: hunting judges each position once,
plus once more when the bytes a candidate waited for arrive, and the proofs of all candidates
together spend at most ``PROOF_CREDIT`` decoding steps per byte hunted, however much each claims.
"""

from __future__ import annotations

import heapq
import struct
from bisect import bisect_right
from collections.abc import Iterator

from kdissect.dataclass import dataclass
from kdissect.decoders.scan import size_fields
from kdissect.options import DEFAULT_MAX_FRAME

DEFAULT_MAX_HUNT = 4 * 1024 * 1024
MAX_WAITING = 4096  # candidates remembered while hunting, waiting for their bytes
# Decoding steps (fields and array elements) the proofs may spend per byte hunted. Candidates
# overlap: a capture can hold one every few bytes, each claiming megabytes, so what each proof
# may cost is not bounded by the bytes it covers. A real frame's proof takes about a step per
# field, far below this per byte of its own, whatever garbage was tried before it.
PROOF_CREDIT = 16
_SIZE = struct.Struct(">i")
_SCAN_SLICE = 64 * 1024  # bytes scanned for candidates at once
_CANDIDATE_BYTES = 8  # what the scan for candidates looks at: the size field and 4 bytes after it


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame's payload (no size prefix) with where and when it was seen."""

    offset: int  # stream offset of the size prefix
    data: bytes
    ts_first: int  # capture time of the first segment carrying any of its bytes
    ts_last: int  # capture time of the segment that completed it
    # Set when gaps of known length (snap length cuts) fell inside the frame: its real size.
    # ``data`` then holds only the bytes captured before the first gap.
    wire_size: int | None = None

    @property
    def complete(self) -> bool:
        return self.wire_size is None

    @property
    def size(self) -> int:
        """The frame's size on the wire (without its size prefix), cut or not."""
        return len(self.data) if self.wire_size is None else self.wire_size


@dataclass(frozen=True, slots=True)
class Skipped:
    """Bytes given up on: unreadable after a gap, garbage, or a size field that can't be right."""

    offset: int
    length: int
    ts_ns: int
    reason: str  # "resync" (hunted past), "desync" (absurd size), "overflow" (hunt buffer full)


@dataclass(frozen=True, slots=True)
class Lost:
    """A gap from the reassembler, passed through in stream order."""

    offset: int
    length: int | None
    ts_ns: int
    reason: str


FramingEvent = Frame | Skipped | Lost


class Validator:
    """How the owner of a direction proves a frame boundary while hunting.

    ``plausible(head, size)`` is a cheap check on the first bytes (at most 64) of a
    candidate whose size field is sane; ``accept(buf, start, end, at_chunk_edges, budget)``
    decides on the complete frame, ``buf[start:end]``, read where it lies (a candidate may claim
    megabytes: copying each one out made hunting through crafted heads some 200x slower than
    decoding), spending at most ``budget`` decoding steps. It returns its verdict, None when the
    budget ran out first, and the budget left. ``at_chunk_edges`` says the frame starts and ends
    exactly on segment boundaries, which senders produce when they write one message per call.
    """

    # The 4 bytes after a plausible candidate's size field, as a big-endian number, are one of
    # these (None: any): hunting's scan skips the other positions without a call each.
    heads: frozenset[int] | None = None
    # Whether accept reads ``at_chunk_edges`` (else it is passed False: finding the edges costs
    # two searches of the chunk list per proof, as much as a request's proof itself).
    reads_chunk_edges = False

    def plausible(self, head: bytes, size: int) -> bool:  # pragma: no cover - interface
        raise NotImplementedError

    def accept(  # pragma: no cover - interface
        self, buf: bytearray, start: int, end: int, at_chunk_edges: bool, budget: int
    ) -> tuple[bool | None, int]:
        raise NotImplementedError

    def sane(self, head: bytes, size: int) -> bool:
        """Looser than ``plausible``, checked on each frame while in sync: False when the
        head cannot start a frame of this direction at all (e.g. garbage whose first bytes
        claim 16 MiB). Without it one stray byte would make the splitter wait for a frame
        that never ends and swallow the rest of the connection."""
        return True

    def native_sane(self) -> tuple | None:
        """``sane`` as data a native lane checks itself (``kafka/_framing.c``), or None: it calls ``sane``."""
        return None


class FrameSplitter:
    """Frames of one direction. Starts in sync (stream start seen) or hunting."""

    def __init__(
        self,
        validator: Validator,
        *,
        max_frame: int = DEFAULT_MAX_FRAME,
        max_hunt: int = DEFAULT_MAX_HUNT,
        min_frame: int = 4,
    ) -> None:
        self.validator = validator
        self.max_frame = max_frame
        self.max_hunt = max_hunt
        self.min_frame = min_frame
        self.vetting = True  # ask validator.sane() about each in-sync frame (off for raw SASL tokens)
        self.hunting = False
        self.stopped = False  # the owner gave up on this direction (not Kafka)
        self._buf = bytearray()
        self._start = 0  # stream offset of _buf[0]
        self._pos = 0  # read position inside _buf
        # Where each buffered chunk starts (stream offset) and its capture time, from _head on.
        self._chunk_starts: list[int] = []
        self._chunk_ts: list[int] = []
        self._head = 0
        # Hunting memory, so each feed judges only new positions (rescanning is quadratic):
        # positions before _scan_from were judged; those that could not be judged for lack of
        # bytes wait in _due as (stream offset where they can be, offset); _holds are the ones
        # whose bytes must be kept (a heap of offsets, stale entries skipped lazily);
        # _awaiting are the plausible ones among them whose body is still arriving.
        self._scan_from = 0
        self._due: list[tuple[int, int]] = []
        self._holds: list[int] = []
        self._holding: set[int] = set()
        self._awaiting: set[int] = set()
        self._wait_until = 0  # in sync: stream offset the frame being assembled ends at
        # Decoding steps the proofs may still spend, earned by the bytes hunted (each byte once:
        # those before stream offset _credited have paid).
        self._credit = 0
        self._credited = 0
        self.starved = 0  # proofs given up when the credit ran out (only crafted input gets there)
        # A frame whose size is known but whose middle a known-length gap cut: its head and end.
        self._cut: tuple[int, bytes, int, int] | None = None  # (offset, head, size, ts_first)
        # While the owner does not yet know which validator fits (roles unknown), hunting keeps the
        # bytes it could not prove (up to max_hunt) so a later rescan can still find frames in them.
        self.retain = False
        self.frames = 0
        self.skipped_bytes = 0

    # -- input --------------------------------------------------------------------------
    def feed(self, offset: int, data: bytes, ts_ns: int) -> list[FramingEvent]:
        """In-order bytes at stream ``offset`` (the reassembler guarantees order)."""
        if self.stopped or not data:
            return []
        if self._cut is not None:
            return self._feed_cut(offset, data, ts_ns)
        end = self._start + len(self._buf)
        if offset != end:  # a jump the reassembler did not announce: treat as a gap
            events: list[FramingEvent] = list(self.gap(end, offset - end, ts_ns, "jump"))
            events.extend(self.feed(offset, data, ts_ns))
            return events
        if not self._buf and not self.hunting and type(data) is bytes:
            return self._whole_frames(offset, data, ts_ns)
        return self._buffered(offset, data, ts_ns)

    def _whole_frames(self, offset: int, data: bytes, ts_ns: int) -> list[FramingEvent]:
        """In sync with nothing buffered (chatty traffic: most runs are one or a few whole frames):
        the frames the run holds whole are cut from it directly, with the checks ``_next_frame``
        makes, and the rest (a frame's start, or whatever those checks refuse) takes the buffered
        path from where they stopped. Same frames and events, without buffering each run."""
        events: list[FramingEvent] = []
        n, pos = len(data), 0
        vetting, sane = self.vetting, self.validator.sane
        while n - pos >= 4:
            (size,) = _SIZE.unpack_from(data, pos)
            end = pos + 4 + size
            if size < self.min_frame or size > self.max_frame or end > n:
                break
            if vetting and not sane(data[pos + 4 : pos + 4 + min(size, 64)], size):
                break
            events.append(Frame(offset + pos, data[pos + 4 : end], ts_ns, ts_ns))
            self.frames += 1
            pos = end
        self._start = offset + pos
        if pos < n:
            events.extend(self._buffered(offset + pos, data[pos:] if pos else data, ts_ns))
        return events

    def _buffered(self, offset: int, data: bytes, ts_ns: int) -> list[FramingEvent]:
        """In-order bytes at the end of the buffer: kept until they complete frames."""
        end = offset + len(data)
        self._chunk_starts.append(offset)
        self._chunk_ts.append(ts_ns)
        self._buf += data
        if end < self._wait_until and not self.hunting:
            return []  # still inside the frame being assembled (most segments of a big frame)
        return self._drain()

    def gap(self, offset: int, length: int | None, ts_ns: int, reason: str) -> list[FramingEvent]:
        """Bytes that will never come: drop any partial frame and hunt from the next byte."""
        if self.stopped:
            return []
        if self._cut is not None:
            return self._gap_in_cut(offset, length, ts_ns, reason)
        events: list[FramingEvent] = []
        pending = len(self._buf) - self._pos
        if self._can_stay_in_sync(offset, length):
            assert length is not None
            return [Lost(offset, length, ts_ns, reason), *self._start_cut(offset + length, ts_ns)]
        if pending and not self.hunting:
            events.append(Skipped(self._start + self._pos, pending, ts_ns, "partial_frame: cut by a gap"))
            self.skipped_bytes += pending
        elif pending:
            events.append(Skipped(self._start + self._pos, pending, ts_ns, "resync"))
            self.skipped_bytes += pending
        events.append(Lost(offset, length, ts_ns, reason))
        self._buf.clear()
        self._clear_chunks()
        self._pos = 0
        self._start = offset + (length or 0)
        self._start_hunt()
        return events

    # -- frames cut by gaps of known length -----------------------------------------------
    def _can_stay_in_sync(self, offset: int, length: int | None) -> bool:
        """A gap of known length that ends inside the frame being assembled (whose size field
        was captured) leaves the next frame boundary known: no need to hunt."""
        pending = len(self._buf) - self._pos
        if self.hunting or length is None or pending < 4 or offset != self._start + len(self._buf):
            return False
        pos = self._pos
        (size,) = _SIZE.unpack_from(self._buf, pos)
        if not self.min_frame <= size <= self.max_frame:
            return False
        if self.vetting:  # a stray byte's garbage size must not make us skip to its "end"
            head = bytes(self._buf[pos + 4 : pos + 4 + min(size, 64)])
            if len(head) < min(size, 10) or not self.validator.sane(head, size):
                return False
        return offset + length <= self._start + pos + 4 + size

    def _start_cut(self, resume: int, ts_ns: int) -> list[FramingEvent]:
        """Keep the captured head of the current frame and skip to its end; ``resume`` is where
        the stream continues after the gap."""
        pos = self._pos
        (size,) = _SIZE.unpack_from(self._buf, pos)
        frame_at = self._start + pos
        self._cut = (frame_at, bytes(self._buf[pos + 4 :]), size, self._ts_at(frame_at))
        self._wait_until = 0
        self._buf.clear()
        self._clear_chunks()
        self._pos = 0
        self._start = resume
        return self._finish_cut(ts_ns) if resume == self._cut_end() else []

    def _finish_cut(self, ts_ns: int) -> list[FramingEvent]:
        assert self._cut is not None
        frame_at, head, size, ts_first = self._cut
        self._cut = None
        self._start = frame_at + 4 + size
        self.frames += 1
        return [Frame(frame_at, head, ts_first, ts_ns, wire_size=size)]

    def _cut_end(self) -> int:
        assert self._cut is not None
        return self._cut[0] + 4 + self._cut[2]

    def _gap_in_cut(self, offset: int, length: int | None, ts_ns: int, reason: str) -> list[FramingEvent]:
        """Another gap while skipping to the end of a cut frame."""
        end = self._cut_end()
        if length is not None and offset + length <= end:
            self._start = offset + length
            lost: list[FramingEvent] = [Lost(offset, length, ts_ns, reason)]
            return lost + self._finish_cut(ts_ns) if self._start == end else lost
        assert self._cut is not None
        frame_at = self._cut[0]
        self._cut = None
        self._start = offset
        self.skipped_bytes += offset - frame_at
        return [Skipped(frame_at, offset - frame_at, ts_ns, "partial_frame: cut by a gap"), *self.gap(
            offset, length, ts_ns, reason)]

    def _feed_cut(self, offset: int, data: bytes, ts_ns: int) -> list[FramingEvent]:
        """Bytes after a gap inside a cut frame: drop them up to the frame's end, then carry on."""
        if offset != self._start:
            jumped = self._gap_in_cut(self._start, offset - self._start, ts_ns, "jump")
            return [*jumped, *self.feed(offset, data, ts_ns)]
        end = self._cut_end()
        if offset + len(data) < end:
            self._start = offset + len(data)
            return []
        events = self._finish_cut(ts_ns)
        rest = data[end - offset :]
        if rest:
            events.extend(self.feed(end, rest, ts_ns))
        return events

    def adopt(self, frame_at: int, tail: bytes, chunks: list[tuple[int, int]], waiting_end: int | None) -> None:
        """Take the direction back from a native lane (``kafka/_framing.c``), which framed it in sync from
        where this splitter stopped: ``tail`` are the bytes from ``frame_at`` it has not framed, held in runs
        that started at ``chunks`` (start, capture time), and ``waiting_end`` the end of the frame they begin
        once its head passed the checks. The splitter is then as if it had framed those runs itself (its
        owner may have started a hunt meanwhile: from where those bytes start, as it would have)."""
        self._buf = bytearray(tail)
        self._start, self._pos = frame_at, 0
        self._chunk_starts = [start for start, _ in chunks]
        self._chunk_ts = [ts for _, ts in chunks]
        self._head = 0
        if self.hunting:
            self._scan_from = frame_at
        else:
            self._wait_until = waiting_end or 0

    def start_hunting(self) -> None:
        """Begin without knowing where frames start (stream picked up mid-way)."""
        self._start_hunt()

    def _start_hunt(self) -> None:
        self.hunting = True
        self._wait_until = 0
        self._scan_from = self._start + self._pos
        self._due.clear()
        self._holds.clear()
        self._holding.clear()
        self._awaiting.clear()

    @property
    def awaiting_candidate(self) -> bool:
        """Hunting, and a plausible frame's bytes are still arriving (within ``max_hunt``)."""
        if self.stopped or not self.hunting:
            return False
        first = self._start + self._pos
        return any(at >= first for at in self._awaiting)

    def doubt(self) -> list[FramingEvent]:
        """The owner doubts the incomplete frame waited on: the peer answered requests that
        may be hidden inside it (its size field was garbage). Hunt from that frame on; it
        stays a candidate, so if it was real it is proven once its bytes are all in."""
        if self.stopped or self.hunting or self._cut is not None or not self.pending()[1]:
            return []
        self._start_hunt()
        return self._drain()

    def finish(self) -> list[FramingEvent]:
        """End of stream: a frame still incomplete never will be, so its size field may have
        been garbage. Hunt through what is buffered (up to ``max_hunt`` bytes) for frames the
        validator proves; if none is, everything stays pending for the owner to report."""
        at, left = self.pending()
        if self.stopped or self._cut is not None or not left or left > self.max_hunt:
            return []
        start, was_hunting = self._pos, self.hunting
        self._pos += 0 if was_hunting else 1  # the size field waited on was not a frame's
        self.hunting = True
        events: list[FramingEvent] = []
        while self._hunt_final(events) if self.hunting else self._next_frame(events):
            pass
        if not events:
            self._pos, self.hunting = start, was_hunting
            return []
        if not was_hunting:
            events.insert(0, Skipped(at, 1, self._ts_at(at), "desync: frame never completed"))
            self.skipped_bytes += 1
        self._compact()
        return events

    def sync_at_start(self) -> None:
        """Stop hunting when nothing has been given up yet and the buffer starts at stream
        offset 0: the owner learned that offset 0 is the true start of the stream (SYN seen)."""
        if self.hunting and self.skipped_bytes == 0 and self._start + self._pos == 0:
            self.hunting = False
            self._wait_until = 0

    def rescan(self) -> list[FramingEvent]:
        """Re-run the search over what is buffered (the validator learned something new)."""
        if self.hunting:
            self._start_hunt()
        return self._drain()

    def stop(self) -> int:
        """Give up on this direction (not Kafka); returns bytes dropped."""
        dropped = len(self._buf) - self._pos
        self._cut = None
        self._buf.clear()
        self._clear_chunks()
        self._pos = 0
        self.stopped = True
        return dropped

    @property
    def plainly_in_sync(self) -> bool:
        """In sync, vetting each frame's head, not skipping the rest of a cut frame: what a native lane
        frames (``kafka/_framing.c``)."""
        return self.vetting and not (self.hunting or self.stopped or self._cut is not None)

    def pending(self) -> tuple[int, int]:
        """(stream offset, length) of bytes buffered but not yet framed."""
        if self._cut is not None:
            return self._cut[0], self._start - self._cut[0]
        return self._start + self._pos, len(self._buf) - self._pos

    # -- framing ------------------------------------------------------------------------
    def _drain(self) -> list[FramingEvent]:
        events: list[FramingEvent] = []
        while not self.stopped:
            progressed = self._hunt(events) if self.hunting else self._next_frame(events)
            if not progressed:
                break
        self._compact()
        return events

    def _next_frame(self, events: list[FramingEvent]) -> bool:
        buf, pos = self._buf, self._pos
        if len(buf) - pos < 4:
            return False
        (size,) = _SIZE.unpack_from(buf, pos)
        if size < self.min_frame or size > self.max_frame:
            return self._desync(events, f"desync: size {size}")
        end = pos + 4 + size
        if self.vetting:
            head_end = pos + 4 + min(size, 64)
            if len(buf) < head_end:
                return False
            if not self.validator.sane(bytes(buf[pos + 4 : head_end]), size):
                return self._desync(events, f"desync: no frame of {size} bytes starts like this")
        if len(buf) < end:
            self._wait_until = self._start + end
            return False
        events.append(self._emit(pos, size))
        return True

    def _desync(self, events: list[FramingEvent], reason: str) -> bool:
        """The size field at the read position is not a frame's: skip a byte and hunt."""
        offset = self._start + self._pos
        events.append(Skipped(offset, 1, self._ts_at(offset), reason))
        self.skipped_bytes += 1
        self._pos += 1
        self._start_hunt()
        return True

    def _hunt(self, events: list[FramingEvent]) -> bool:
        """Slide over the buffer for a frame the validator accepts.

        A plausible candidate whose bytes have not all arrived is remembered, not waited on:
        a complete candidate further on may be proven first (a lost segment often leaves a
        size-like word in the middle of a frame). If nothing is proven, bytes before the
        first incomplete candidate are given up and the rest waits for more data. Each
        position is judged once, plus once more when the bytes it waited for arrive.
        """
        base, n = self._start, len(self._buf)
        self._earn()
        due = set()
        while self._due and self._due[0][0] <= base + n:
            at = heapq.heappop(self._due)[1]
            self._awaiting.discard(at)
            due.add(at)
        for at in sorted(due):
            if at - base >= self._pos and self._judge(at - base, n, events):
                return True
        i = max(self._pos, self._scan_from - base)
        scanned = max(i, n - _CANDIDATE_BYTES + 1)  # positions from here lack the bytes to be matched
        # Sizes that can matter: those complete now, and those that can wait for their bytes (none
        # once MAX_WAITING wait; none claiming more than the hunt window holds).
        most = n - 4 - i if len(self._due) >= MAX_WAITING else max(n - 4 - i, self.max_hunt - 4)
        for at in self._candidates(i, scanned, most):
            if self._judge(at, n, events):
                return True
        self._scan_from = base + scanned
        while self._holds and (self._holds[0] not in self._holding or self._holds[0] < base + self._pos):
            self._holding.discard(heapq.heappop(self._holds))
        keep_from = self._holds[0] - base if self._holds else max(self._pos, scanned)
        if keep_from > self._pos and not self.retain:
            self._skip(events, keep_from - self._pos, "resync")
        if n - self._pos > self.max_hunt:
            self._skip(events, n - self._pos - self.max_hunt, "overflow")
        return False

    def _candidates(self, start: int, stop: int, most: int) -> Iterator[int]:
        """Where candidates of sizes up to ``most`` start in ``buf[start:stop]``, scanned a slice at a
        time (judging one may end the hunt)."""
        most = min(most, self.max_frame)
        for at in range(start, stop, _SCAN_SLICE):
            yield from size_fields(self._buf, at, min(at + _SCAN_SLICE, stop), self.min_frame, most,
                                   self.validator.heads)

    def _judge(self, i: int, n: int, events: list[FramingEvent]) -> bool:
        """Judge the candidate at ``i``: emit it if proven, else remember it if it lacks bytes."""
        at = self._start + i
        self._holding.discard(at)
        (size,) = _SIZE.unpack_from(self._buf, i)
        if not self.min_frame <= size <= self.max_frame:
            return False
        end = i + 4 + size
        if end > n and len(self._due) >= MAX_WAITING:
            return False  # it could only wait, and dense garbage fills what waiting may remember
        head_end = i + 4 + min(size, 64)
        if head_end > n:  # too few bytes to judge yet
            self._wait(at, self._start + head_end, hold=True)
            return False
        if not self.validator.plausible(bytes(self._buf[i + 4 : head_end]), size):
            return False
        if end > n:
            if size + 4 <= self.max_hunt:  # a bigger one could never be held whole while hunting
                self._wait(at, self._start + end, hold=end - self._pos <= self.max_hunt, body=True)
            return False
        if not self._proven(i, end):
            return False
        self._resync_at(i, size, events)
        return True

    def _resync_at(self, i: int, size: int, events: list[FramingEvent]) -> None:
        """A proven frame at ``i``: give up the bytes before it and leave hunting."""
        if i > self._pos:
            self._skip(events, i - self._pos, "resync")
        self.hunting = False
        events.append(self._emit(i, size))

    def _proven(self, i: int, end: int) -> bool:
        at_edges = self.validator.reads_chunk_edges and self._is_chunk_start(i) and (
            end == len(self._buf) or self._is_chunk_start(end))
        # read in place: no copy of what it claims
        verdict, self._credit = self.validator.accept(self._buf, i + 4, end, at_edges, self._credit)
        if verdict is None:
            self.starved += 1
        return verdict is True

    def _earn(self) -> None:
        """Credit the proofs for the buffered bytes not hunted before."""
        first, end = self._start + self._pos, self._start + len(self._buf)
        fresh = end - max(first, self._credited)
        if fresh > 0:
            self._credit += PROOF_CREDIT * fresh
            self._credited = end

    def _wait(self, at: int, ready_at: int, *, hold: bool, body: bool = False) -> None:
        """Remember a candidate until ``ready_at`` (unless MAX_WAITING are: dense garbage, forgotten at
        the cost of at most one frame); ``body``: its head was plausible."""
        heapq.heappush(self._due, (ready_at, at))
        if hold:
            self._holding.add(at)
            heapq.heappush(self._holds, at)
            if body:
                self._awaiting.add(at)

    def _hunt_final(self, events: list[FramingEvent]) -> bool:
        """Hunting at the end of what will ever arrive: incomplete candidates are worthless."""
        buf, n = self._buf, len(self._buf)
        self._earn()
        for i in self._candidates(self._pos, n, n - 4 - self._pos):
            (size,) = _SIZE.unpack_from(buf, i)
            end = i + 4 + size
            if (self.min_frame <= size <= self.max_frame and end <= n
                    and self.validator.plausible(bytes(buf[i + 4 : i + 4 + min(size, 64)]), size)
                    and self._proven(i, end)):
                self._resync_at(i, size, events)
                return True
        return False

    def _skip(self, events: list[FramingEvent], length: int, reason: str) -> None:
        offset = self._start + self._pos
        events.append(Skipped(offset, length, self._ts_at(offset), reason))
        self.skipped_bytes += length
        self._pos += length

    def _emit(self, pos: int, size: int) -> Frame:
        offset = self._start + pos
        end = pos + 4 + size
        with memoryview(self._buf) as view:
            data = bytes(view[pos + 4 : end])  # one copy (a bytearray slice would be a second)
        frame = Frame(
            offset=offset,
            data=data,
            ts_first=self._ts_at(offset),
            ts_last=self._ts_at(self._start + end - 1),
        )
        self._pos = end
        self.frames += 1
        return frame

    def _chunk_index(self, offset: int) -> int:
        """Index of the chunk holding stream byte ``offset`` (or the first chunk)."""
        return max(self._head, bisect_right(self._chunk_starts, offset, self._head) - 1)

    def _is_chunk_start(self, pos: int) -> bool:
        offset = self._start + pos
        k = self._chunk_index(offset)
        return k < len(self._chunk_starts) and self._chunk_starts[k] == offset

    def _ts_at(self, offset: int) -> int:
        """Capture time of the chunk holding stream byte ``offset``."""
        if self._head >= len(self._chunk_ts):
            return 0
        return self._chunk_ts[self._chunk_index(offset)]

    def _clear_chunks(self) -> None:
        self._chunk_starts.clear()
        self._chunk_ts.clear()
        self._head = 0

    def _compact(self) -> None:
        """Forget consumed bytes and chunks (amortised: only when most of the buffer is consumed)."""
        consumed = self._start + self._pos
        self._head = self._chunk_index(consumed)
        if self._head > 1024 and self._head * 2 > len(self._chunk_starts):
            del self._chunk_starts[: self._head]
            del self._chunk_ts[: self._head]
            self._head = 0
        if self._pos and (self._pos >= len(self._buf) or (self._pos > 65536 and self._pos * 2 > len(self._buf))):
            del self._buf[: self._pos]
            self._start += self._pos
            self._pos = 0
            if not self._buf:
                self._clear_chunks()
