"""Several inputs read as one capture, merged by capture time.

Rotated files read in any order, or a capture read with a copy of part of it, make one timeline
only when merged by time: read one after the other, a later file's early packets came after the
stream had moved past them and were taken for stale retransmissions (exchanges lost), and a copy
replayed its connections (exchanges counted twice). Each input is opened when the merged timeline
reaches its first packet, so a long rotation set holds few files open at once.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")
Opener = Callable[[], Iterator[T]]


def merge_by_time(inputs: Sequence[tuple[int | None, Opener[T]]], ts_of: Callable[[T], int | None]
                  ) -> Iterator[tuple[int, T]]:  # fmt: skip
    """Items of every input, as (input index, item), in capture-time order. ``inputs`` are
    (first time, opener): the opener is called when the timeline reaches that time (inputs with
    no known first time open first). Items without a time (``ts_of`` None) keep their input's
    last time; ties go to the input listed first."""
    pending = sorted((first if first is not None else -1, i) for i, (first, _) in enumerate(inputs))
    pending.reverse()  # popped from the end: earliest first
    heap: list[tuple[int, int, T, Iterator[T]]] = []
    last = [-1] * len(inputs)

    def advance(i: int, items: Iterator[T]) -> None:
        for item in items:
            ts = ts_of(item)
            last[i] = ts if ts is not None else last[i]
            heapq.heappush(heap, (last[i], i, item, items))
            return

    while heap or pending:
        if pending and (not heap or pending[-1] <= heap[0][:2]):
            _, i = pending.pop()
            advance(i, inputs[i][1]())
            continue
        _, i, item, items = heapq.heappop(heap)
        yield i, item
        advance(i, items)
