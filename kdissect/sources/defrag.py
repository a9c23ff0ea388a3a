"""IP fragment reassembly (IPv4 and IPv6) with bounded memory and timeouts.

Overlaps keep the first copy of each byte, the policy that cannot be steered by a
later fragment; a conflict is reported rather than silently resolved. A datagram given
up (timeout, memory bound, too many holes, end of capture) still yields what it has: the
captured bytes from its start up to the first hole, so a TCP header that arrived is not lost.

Each datagram is one buffer plus two sorted lists of disjoint spans (offsets claimed by some
fragment, and offsets whose bytes were captured), so a fragment costs O(holes + its bytes)
whatever arrived before it, and the holes of one datagram are bounded.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import field

from kdissect.dataclass import dataclass
from kdissect.sources.shapes import AnomalyKind, SourceAnomaly, SourceEvent

MAX_DATAGRAM = 65_535  # fragment offsets are 13 bits of 8 octets; lengths 16 bits
_SPAN_OVERHEAD = 64  # bytes charged per held span besides the buffer, so tiny fragments are bounded too

FragmentKey = tuple[int, str, str, int]  # (IP version, src, dst, identification)


@dataclass(frozen=True, slots=True)
class DefragLimits:
    """When to give a datagram up. Linux waits 30 s; the packet count covers captures
    whose clock stalls; the memory bounds cap what a fragment flood can hold (a run sets
    them from :class:`kdissect.options.Options`, whose defaults these are)."""

    timeout_ns: int = 30_000_000_000
    max_age_packets: int = 100_000
    max_datagrams: int = 1024  # datagrams being reassembled at once
    max_bytes: int = 4 * 1024 * 1024  # fragments held, all datagrams together
    max_holes: int = 128  # in one datagram (64 KiB at 576-byte MTU makes ~120 pieces)


@dataclass(frozen=True, slots=True)
class Datagram:
    """A reassembled (or given-up) IP payload.

    ``data`` holds the captured bytes from offset 0 up to the first hole; ``length`` is
    the payload length the fragments claim. ``proto`` is None when the first fragment
    never arrived.
    """

    key: FragmentKey
    proto: int | None
    data: bytes
    length: int
    complete: bool
    ts_ns: int  # capture time of the last fragment seen
    offset: int  # stream offset of the first fragment seen


@dataclass(slots=True)
class _Pending:
    """One datagram being reassembled: when it began, what has arrived."""

    first_ts: int
    first_index: int
    offset: int
    last_ts: int
    proto: int | None = None
    total: int | None = None  # known once the last fragment arrived
    buf: bytearray = field(default_factory=bytearray)  # first captured copy of each byte
    claimed: list[int] = field(default_factory=list)  # disjoint spans as flat [start, end, start, end, ...]
    captured: list[int] = field(default_factory=list)  # likewise, the offsets whose bytes are in ``buf``
    fragments: int = 0
    end: int = 0  # furthest offset a fragment claimed
    held: int = 0

    def cost(self) -> int:
        return len(self.buf) + _SPAN_OVERHEAD * (len(self.claimed) + len(self.captured)) // 2


def _describe(key: FragmentKey) -> str:
    version, src, dst, ident = key
    return f"IPv{version} datagram {src} > {dst} id {ident:#x}"


class Defragmenter:
    """Collects fragments per (version, src, dst, id); returns datagrams as they finish.

    Anomalies are appended to the ``out`` list each method takes.
    """

    def __init__(self, limits: DefragLimits | None = None) -> None:
        self._limits = limits or DefragLimits()
        self._pending: dict[FragmentKey, _Pending] = {}  # insertion order = age order
        self._held = 0

    def __len__(self) -> int:
        return len(self._pending)

    def add(
        self,
        key: FragmentKey,
        proto: int,
        frag_offset: int,
        more: bool,
        claimed: int,
        captured: bytes,
        ts_ns: int,
        index: int,
        offset: int,
        out: list[SourceEvent],
    ) -> list[Datagram]:
        """Add one fragment (``captured`` may be shorter than ``claimed``: snap length).

        ``index`` counts capture records, for the packet-count timeout.
        """
        end = frag_offset + claimed
        problem = self._invalid(self._pending.get(key), frag_offset, more, claimed, end)
        if problem:
            out.append(SourceAnomaly(AnomalyKind.FRAGMENT_INVALID, f"{_describe(key)}: {problem}", offset, ts_ns))
            return []
        pending = self._pending.get(key)
        if pending is None:
            pending = self._pending[key] = _Pending(ts_ns, index, offset, ts_ns)
        self._store(key, pending, frag_offset, end, captured, offset, ts_ns, out)
        pending.last_ts = ts_ns
        if frag_offset == 0:
            pending.proto = proto
        if not more:
            pending.total = end
        cost = pending.cost()
        self._held += cost - pending.held
        pending.held = cost
        done = []
        spans = pending.claimed
        if pending.total is not None and _reach(spans) >= pending.total:
            del self._pending[key]
            self._held -= pending.held
            done.append(_assemble(key, pending, complete=True))
        elif len(spans) > 2 * (self._limits.max_holes + 1):
            done.append(self._give_up(key, f"more than {self._limits.max_holes} holes", out))
        limits = self._limits
        while self._pending and (self._held > limits.max_bytes or len(self._pending) > limits.max_datagrams):
            done.append(self._give_up(next(iter(self._pending)), "memory bound reached", out))
        return done

    def expire(self, ts_ns: int, index: int, out: list[SourceEvent]) -> list[Datagram]:
        """Give up the datagrams older than the timeouts at capture time ``ts_ns``."""
        done = []
        limits = self._limits
        while self._pending:
            key, pending = next(iter(self._pending.items()))
            if ts_ns - pending.first_ts <= limits.timeout_ns and index - pending.first_index <= limits.max_age_packets:
                break
            done.append(self._give_up(key, "timed out", out))
        return done

    def flush(self, out: list[SourceEvent]) -> list[Datagram]:
        """The capture ended: give up every incomplete datagram."""
        return [self._give_up(key, "capture ended", out) for key in list(self._pending)]

    def _invalid(self, pending: _Pending | None, frag_offset: int, more: bool, claimed: int, end: int) -> str:
        """Why this fragment cannot belong to its datagram ('' when it can)."""
        if end > MAX_DATAGRAM:
            return f"fragment ends at {end}, beyond {MAX_DATAGRAM}"
        if more and claimed % 8:
            return f"non-final fragment of {claimed} bytes (not a multiple of 8)"
        if pending is None:
            return ""
        if pending.total is not None and (end > pending.total or (not more and end != pending.total)):
            return f"fragment {frag_offset}-{end} contradicts the datagram length {pending.total}"
        if not more and pending.end > end:
            return f"last fragment ends at {end} but data was seen up to {pending.end}"
        return ""

    def _store(
        self,
        key: FragmentKey,
        pending: _Pending,
        start: int,
        end: int,
        captured: bytes,
        offset: int,
        ts_ns: int,
        out: list[SourceEvent],
    ) -> None:
        """Keep the bytes of ``captured`` no earlier fragment captured; report overlaps."""
        pending.fragments += 1
        pending.end = max(pending.end, end)
        overlapping = bool(_overlaps(pending.claimed, start, end))
        stop = start + len(captured)
        buf = pending.buf
        if len(buf) < stop:
            buf.extend(bytes(stop - len(buf)))
        conflicting = False
        for lo, hi in _overlaps(pending.captured, start, stop):
            conflicting = conflicting or buf[lo:hi] != captured[lo - start : hi - start]
        at = start
        for lo, hi in [*_overlaps(pending.captured, start, stop), (stop, stop)]:
            if lo > at:
                buf[at:lo] = captured[at - start : lo - start]
            at = max(at, hi)
        _cover(pending.claimed, start, end)
        _cover(pending.captured, start, stop)
        if overlapping:
            what = "conflicting bytes, first copy kept" if conflicting else "identical bytes"
            out.append(
                SourceAnomaly(
                    AnomalyKind.FRAGMENT_OVERLAP,
                    f"{_describe(key)}: fragment {start}-{end} overlaps earlier ones ({what})",
                    offset,
                    ts_ns,
                )
            )

    def _give_up(self, key: FragmentKey, reason: str, out: list[SourceEvent]) -> Datagram:
        pending = self._pending.pop(key)
        self._held -= pending.held
        datagram = _assemble(key, pending, complete=False)
        size = "?" if pending.total is None else pending.total
        out.append(
            SourceAnomaly(
                AnomalyKind.FRAGMENT_INCOMPLETE,
                f"{_describe(key)} given up ({reason}): {pending.fragments} fragments, "
                f"{len(datagram.data)} contiguous bytes of {size}",
                pending.offset,
                pending.last_ts,
            )
        )
        return datagram


def _overlaps(spans: list[int], start: int, end: int) -> list[tuple[int, int]]:
    """The parts of ``[start, end)`` that the flat disjoint ``spans`` cover, in order."""
    i = bisect_left(spans, start + 1) & ~1  # the span that ends after ``start`` begins here or later
    found = []
    while i < len(spans) and spans[i] < end:
        lo, hi = max(spans[i], start), min(spans[i + 1], end)
        if lo < hi:
            found.append((lo, hi))
        i += 2
    return found


def _cover(spans: list[int], start: int, end: int) -> None:
    """Add ``[start, end)`` to the flat disjoint ``spans``, merging what it touches."""
    if start >= end:
        return
    i = bisect_left(spans, start) & ~1  # first span that may touch ``start``
    if i >= 2 and spans[i - 1] >= start:
        i -= 2
    j = i
    while j < len(spans) and spans[j] <= end:
        j += 2
    if j > i:
        start, end = min(start, spans[i]), max(end, spans[j - 1])
    spans[i:j] = [start, end]


def _reach(spans: list[int]) -> int:
    """How far the spans cover the datagram without a hole from offset 0."""
    return spans[1] if spans and spans[0] == 0 else 0


def _assemble(key: FragmentKey, pending: _Pending, complete: bool) -> Datagram:
    size = pending.total if pending.total is not None else pending.end
    data = bytes(pending.buf[: _reach(pending.captured)])
    return Datagram(key, pending.proto, data, size, complete, pending.last_ts, pending.offset)
