"""Retransmitted or overlapping bytes that differ from the copy kept.

First copy wins (see :mod:`kdissect.reassembly.halfstream`), so a later copy with other bytes would
go unnoticed and the decoded message would silently hold the first. To say so, a direction compares
a copy against what it still holds: its out-of-order chunks, and a short window of the bytes it
delivered last (the last few segments; a retransmission nearly always repeats the latest
unacknowledged data). Older bytes, and segments over 4 KiB (loopback-sized), are not kept for this,
so a conflict with them goes unreported.
"""

from __future__ import annotations

from collections.abc import Iterable

RECENT_CHUNKS, RECENT_CHUNK = 4, 4096  # delivered chunks a direction keeps, and the largest kept


def differing(off: int, data: bytes, chunks: Iterable[tuple[int, bytes]]) -> tuple[int, int] | None:
    """(first, last + 1) stream offsets where ``data`` (captured bytes from ``off``) and the chunks
    ``(start, bytes)`` disagree on bytes both hold, or None when they agree."""
    first = last = None
    end = off + len(data)
    for start, held in chunks:
        lo, hi = max(off, start), min(end, start + len(held))
        if lo >= hi:
            continue
        mine, theirs = data[lo - off : hi - off], held[lo - start : hi - start]
        if mine == theirs:
            continue
        diffs = [i for i in range(hi - lo) if mine[i] != theirs[i]]
        first = lo + diffs[0] if first is None else min(first, lo + diffs[0])
        last = lo + diffs[-1] + 1 if last is None else max(last, lo + diffs[-1] + 1)
    return None if first is None or last is None else (first, last)
