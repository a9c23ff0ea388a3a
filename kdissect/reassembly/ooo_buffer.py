"""Out-of-order bytes of one direction, held until the hole before them is filled or given up.

Chunks are ``(start, end, data, ts_ns)`` in stream offsets: ``data`` holds the captured
bytes from ``start``; when the capture cut the segment short, ``[start + len(data), end)``
is the snap-length-missing tail, still counted as "seen" so a later copy cannot claim it
(first copy wins). Chunks never overlap and stay sorted by ``start``.
"""

from __future__ import annotations

from bisect import bisect_right
from operator import itemgetter

Chunk = tuple[int, int, bytes, int]

# Approximate memory one held chunk costs beyond its bytes (tuple, three ints, list slot,
# bytes header; sys.getsizeof on CPython 3.11). Charging it keeps the bound honest when an
# adversary sends many tiny segments.
CHUNK_OVERHEAD = 160

_start = itemgetter(0)
_SPENT: Chunk = (0, 0, b"", 0)  # placeholder for a taken chunk, so its bytes are freed before compaction


class OutOfOrderBuffer:
    """Sorted, non-overlapping chunks with first-copy-wins insertion.

    Taken chunks are replaced by a placeholder and skipped with a head index; the list is
    compacted once they make up half of it, so taking from the front is O(1) amortized
    instead of shifting the whole list each time. Inserting at the front fills the placeholder
    before the head, making room in front by doubling when there is none: segments arriving in
    descending order (a burst sent again backwards) cost O(log n) each like appends, instead of
    shifting every held chunk. Inserts elsewhere shift the chunks after them (a memmove of
    pointers, bounded by the buffer's byte cap).
    """

    __slots__ = ("_chunks", "_head", "cost")

    def __init__(self) -> None:
        self._chunks: list[Chunk] = []
        self._head = 0
        # Captured bytes held + CHUNK_OVERHEAD per chunk: zero exactly when the buffer is
        # empty, which makes it the cheapest emptiness test on the hot path.
        self.cost = 0

    def __bool__(self) -> bool:
        return self._head < len(self._chunks)

    def __len__(self) -> int:
        return len(self._chunks) - self._head

    @property
    def first_start(self) -> int:
        """Offset of the lowest held chunk (the buffer must not be empty)."""
        return self._chunks[self._head][0]

    def insert(self, start: int, end: int, data: bytes, ts_ns: int) -> int:
        """Hold the parts of ``[start, end)`` no chunk holds yet; return how many offsets were new.

        ``data`` are the captured bytes from ``start`` (possibly fewer than ``end - start``).
        """
        chunks = self._chunks
        n = len(chunks)
        i = bisect_right(chunks, start, lo=self._head, key=_start)
        cur = start
        if i > self._head and chunks[i - 1][1] > cur:
            cur = chunks[i - 1][1]
        if cur >= end:
            return 0
        if i == n or chunks[i][0] >= end:  # fits in one hole: the common case
            piece = data if cur == start else data[cur - start :]
            if i == self._head and i < n:  # before every held chunk
                if not i:
                    room = max(16, n)
                    chunks[0:0] = [_SPENT] * room
                    i = self._head = room
                self._head -= 1
                chunks[i - 1] = (cur, end, piece, ts_ns)
            else:
                chunks.insert(i, (cur, end, piece, ts_ns))
            self.cost += len(piece) + CHUNK_OVERHEAD
            return end - cur
        merged: list[Chunk] = []
        kept = 0
        j = i
        while cur < end:
            stop = chunks[j][0] if j < n and chunks[j][0] < end else end
            if stop > cur:
                piece = data[cur - start : stop - start]
                merged.append((cur, stop, piece, ts_ns))
                self.cost += len(piece) + CHUNK_OVERHEAD
                kept += stop - cur
            if stop < end:
                merged.append(chunks[j])
                cur = chunks[j][1]
                j += 1
            else:
                cur = end
        chunks[i:j] = merged
        return kept

    def held(self, start: int, end: int) -> list[tuple[int, bytes]]:
        """(start, captured bytes) of the chunks that overlap ``[start, end)``."""
        chunks = self._chunks
        i = max(self._head, bisect_right(chunks, start, lo=self._head, key=_start) - 1)
        out = []
        while i < len(chunks) and chunks[i][0] < end:
            if chunks[i][1] > start:
                out.append((chunks[i][0], chunks[i][2]))
            i += 1
        return out

    def take_contiguous(self, offset: int) -> list[Chunk]:
        """Remove and return the chunks that continue the stream from ``offset`` without a hole."""
        chunks = self._chunks
        head = k = self._head
        n = len(chunks)
        while k < n and chunks[k][0] == offset:
            offset = chunks[k][1]
            self.cost -= len(chunks[k][2]) + CHUNK_OVERHEAD
            k += 1
        if k == head:
            return []
        taken = chunks[head:k]
        if k == n:
            chunks.clear()
            self._head = 0
        elif k * 2 > n:
            del chunks[:k]
            self._head = 0
        else:
            chunks[head:k] = [_SPENT] * (k - head)
            self._head = k
        return taken
