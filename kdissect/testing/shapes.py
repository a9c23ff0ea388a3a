"""Captures shaped the way production hands them over, built from a whole capture's TCP segments.

Production captures rarely hold whole conversations: ``tcpdump`` starts while clients have been
connected for days, stops where the disk filled, drops packets under load, rotates files that are
then read in any order, and two people's captures of one broker overlap. Each function here takes
a capture's segments and returns the capture files (bytes, in the order they are to be read) of
one such shape, so tests and ``bench/`` scripts can run every command over them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kdissect.dataclass import dataclass
from kdissect.sources.decoder import decode_capture
from kdissect.sources.segment import TcpSegment
from kdissect.testing.pcapwrite import write_capture

NS = 1_000_000_000
Segments = Sequence[TcpSegment]


@dataclass(frozen=True, slots=True)
class Shape:
    """One shaped capture: what was done (``name``) and its files, in the order they are read."""

    name: str
    files: tuple[bytes, ...]


def segments_of(data: bytes) -> list[TcpSegment]:
    """The TCP segments of a capture file's bytes, in file order."""
    events, _ = decode_capture(data)
    return [e for e in events if isinstance(e, TcpSegment)]


def _file(segs: Segments) -> bytes:
    return write_capture(list(segs))


def cut_at(segs: Segments, n: int) -> Shape:
    """Only the first ``n`` packets: the capture stopped (disk full, ``-c N``) mid-conversation."""
    return Shape(f"cut at packet {n}", (_file(segs[:n]),))


def started_at(segs: Segments, n: int) -> Shape:
    """Packets from the ``n``-th on: the capture started while the clients were connected."""
    return Shape(f"started at packet {n}", (_file(segs[n:]),))


def without_first_seconds(segs: Segments, seconds: float) -> Shape:
    """Every packet of the first ``seconds`` of the capture removed."""
    if not segs:
        return Shape(f"first {seconds} s removed", (_file(segs),))
    start = segs[0].ts_ns + int(seconds * NS)
    return Shape(f"first {seconds} s removed", (_file([s for s in segs if s.ts_ns >= start]),))


def dropped_every(segs: Segments, every: int, phase: int = 0) -> Shape:
    """Every ``every``-th packet (from ``phase``) lost, as a loaded capture host drops them."""
    kept = [s for i, s in enumerate(segs) if (i - phase) % every]
    return Shape(f"every {every}th packet dropped (phase {phase})", (_file(kept),))


def rotated(segs: Segments, parts: int) -> Shape:
    """Split into ``parts`` rotated files, handed over newest first (read out of order)."""
    size = max(1, -(-len(segs) // parts))
    files = [_file(segs[i : i + size]) for i in range(0, len(segs), size)] or [_file(())]
    return Shape(f"rotated into {len(files)} files, read newest first", tuple(reversed(files)))


def overlapping(segs: Segments, start: int, end: int) -> Shape:
    """Two captures of the same traffic: packets ``[:end]`` and ``[start:]`` (they share ``[start:end]``)."""
    return Shape(f"overlapping copies [:{end}] and [{start}:]", (_file(segs[:end]), _file(segs[start:])))


def duplicated(segs: Segments) -> Shape:
    """The same capture read twice (a file and its copy)."""
    data = _file(segs)
    return Shape("the same capture twice", (data, data))


def merged(first: Segments, second: Segments) -> Shape:
    """Two different captures read together."""
    return Shape("two captures read together", (_file(first), _file(second)))


ShapeFamily = Callable[[Segments], list[Shape]]


def cuts(segs: Segments, positions: int = 6) -> list[Shape]:
    """The capture cut at ``positions`` packet positions spread over it, at both ends."""
    n = len(segs)
    at = sorted({max(1, n * k // (positions + 1)) for k in range(1, positions + 1)})
    return [cut_at(segs, i) for i in at] + [started_at(segs, i) for i in at]


def losses(segs: Segments) -> list[Shape]:
    """Packets lost: the first seconds gone, and every k-th packet dropped."""
    span = (segs[-1].ts_ns - segs[0].ts_ns) / NS if segs else 0.0
    return [without_first_seconds(segs, span / 3), dropped_every(segs, 7), dropped_every(segs, 3, 1)]


def rotations(segs: Segments) -> list[Shape]:
    """Rotated files read out of order, overlapping copies, and the capture read twice."""
    n = len(segs)
    return [rotated(segs, 3), overlapping(segs, n // 3, 2 * n // 3), duplicated(segs)]


FAMILIES: dict[str, ShapeFamily] = {"cuts": cuts, "losses": losses, "rotations": rotations}
