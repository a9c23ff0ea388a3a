"""IP fragment reassembly (IPv4 and IPv6) with bounded memory and timeouts.

Overlaps keep the first copy of each byte, the policy that cannot be steered by a
later fragment; a conflict is reported rather than silently resolved. A datagram given
up (timeout, memory bound, end of capture) still yields what it has: the captured
bytes from its start up to the first hole, so a TCP header that arrived is not lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kdissect.sources.shapes import AnomalyKind, SourceAnomaly, SourceEvent

MAX_DATAGRAM = 65_535  # fragment offsets are 13 bits of 8 octets; lengths 16 bits
_PIECE_OVERHEAD = 64  # bytes charged per stored fragment besides its data, so tiny fragments are bounded too

FragmentKey = tuple[int, str, str, int]  # (IP version, src, dst, identification)


@dataclass(frozen=True, slots=True)
class DefragLimits:
    """When to give a datagram up. Linux waits 30 s; the packet count covers captures
    whose clock stalls; the memory bounds cap what a fragment flood can hold."""

    timeout_ns: int = 30_000_000_000
    max_age_packets: int = 100_000
    max_datagrams: int = 1024
    max_bytes: int = 4 * 1024 * 1024


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
    first_ts: int
    first_index: int
    offset: int
    last_ts: int
    proto: int | None = None
    total: int | None = None  # known once the last fragment arrived
    pieces: list[tuple[int, int, bytes]] = field(default_factory=list)  # (offset, claimed length, captured)
    held: int = 0


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
        self._report_overlap(key, pending, frag_offset, end, captured, offset, ts_ns, out)
        pending.last_ts = ts_ns
        if frag_offset == 0:
            pending.proto = proto
        if not more:
            pending.total = end
        pending.pieces.append((frag_offset, claimed, captured))
        cost = len(captured) + _PIECE_OVERHEAD
        pending.held += cost
        self._held += cost
        done = []
        if pending.total is not None and _contiguous_reach([piece[:2] for piece in pending.pieces]) >= pending.total:
            del self._pending[key]
            self._held -= pending.held
            done.append(_assemble(key, pending, complete=True))
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
        if not more and _claimed_end(pending.pieces) > end:
            return f"last fragment ends at {end} but data was seen up to {_claimed_end(pending.pieces)}"
        return ""

    def _report_overlap(
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
        overlapping = conflicting = False
        for other_start, other_claimed, other in pending.pieces:
            lo, hi = max(start, other_start), min(end, other_start + other_claimed)
            if lo >= hi:
                continue
            overlapping = True
            mine = captured[lo - start : hi - start]
            theirs = other[lo - other_start : hi - other_start]
            common = min(len(mine), len(theirs))
            conflicting = conflicting or mine[:common] != theirs[:common]
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
                f"{_describe(key)} given up ({reason}): {len(pending.pieces)} fragments, "
                f"{len(datagram.data)} contiguous bytes of {size}",
                pending.offset,
                pending.last_ts,
            )
        )
        return datagram


def _claimed_end(pieces: list[tuple[int, int, bytes]]) -> int:
    return max((start + claimed for start, claimed, _ in pieces), default=0)


def _contiguous_reach(spans: list[tuple[int, int]]) -> int:
    """How far (start, length) spans cover the datagram without a hole from offset 0."""
    reach = 0
    for start, length in sorted(spans):
        if start > reach:
            break
        reach = max(reach, start + length)
    return reach


def _assemble(key: FragmentKey, pending: _Pending, complete: bool) -> Datagram:
    size = pending.total if pending.total is not None else _claimed_end(pending.pieces)
    buf = bytearray(size)
    for start, _claimed, captured in reversed(pending.pieces):  # earliest written last: first copy wins
        buf[start : start + len(captured)] = captured
    reach = _contiguous_reach([(start, len(captured)) for start, _claimed, captured in pending.pieces])
    return Datagram(key, pending.proto, bytes(buf[:reach]), size, complete, pending.last_ts, pending.offset)
