"""Several inputs read as one capture, merged by capture time.

Rotated files read in any order, or a capture read with a copy of part of it, make one timeline
only when merged by time: read one after the other, a later file's early packets came after the
stream had moved past them and were taken for stale retransmissions (exchanges lost), and a copy
replayed its connections (exchanges counted twice). Each input is opened when the merged timeline
reaches its first packet, so a long rotation set holds few files open at once.

The merge hands out runs: the items of one input up to the next item of another (or the next input
to open). Rotated files follow each other in time, so most of a set is a few long runs that cost a
comparison per item, not a heap step, and reach the core in batches; the last input open (the only
one, for a single capture) is handed on in its reader's batches.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar

from kdissect.dataclass import dataclass

T = TypeVar("T")
Opener = Callable[[], Iterator[list[T]]]  # an input's items, in the batches its reader makes them (one per chunk)


@dataclass(slots=True)
class _Cursor(Generic[T]):
    """Where an open input is: its next item is ``batch[at]``; ``batches`` hold the rest."""

    batch: list[T]
    at: int
    batches: Iterator[list[T]]

    def next_batch(self) -> bool:
        """Move to the input's next batch that has items (whether there was one)."""
        for batch in self.batches:
            if batch:
                self.batch, self.at = batch, 0
                return True
        return False


def merge_runs(inputs: Sequence[tuple[int | None, Opener[T]]], ts_of: Callable[[T], int | None], most: int
               ) -> Iterator[tuple[int, list[T]]]:  # fmt: skip
    """The items of every input in capture-time order, as runs (input index, up to ``most`` of its
    items in order). ``inputs`` are (first time, opener): the opener is called when the timeline
    reaches that time (inputs with no known first time open first) and gives the input's items in
    batches. Items without a time (``ts_of`` None) keep their input's last time; ties go to the input
    listed first. The last input open is handed out a batch at a time, with no step per item: one
    capture read alone costs no Python per packet here."""
    pending = sorted((first if first is not None else -1, i) for i, (first, _) in enumerate(inputs))
    pending.reverse()  # popped from the end: earliest first
    heap: list[tuple[int, int, _Cursor[T]]] = []  # each open input's next item: (its time, input, where it is)
    while heap or pending:
        if pending and (not heap or pending[-1] <= heap[0][:2]):
            _, i = pending.pop()
            cursor: _Cursor[T] = _Cursor([], 0, inputs[i][1]())
            if cursor.next_batch():
                ts = ts_of(cursor.batch[0])
                heapq.heappush(heap, (ts if ts is not None else -1, i, cursor))
            continue
        last, i, cursor = heapq.heappop(heap)
        if not heap and not pending:  # nothing else to merge: the rest of the input, in runs
            while True:
                batch = cursor.batch
                for start in range(cursor.at, len(batch), most):
                    yield i, batch[start : start + most]
                if not cursor.next_batch():
                    break
            continue
        # The run goes on while its items come before the next of any other input (and the next to
        # open); as a tuple (time, input): a tie goes to the input listed first.
        bound_ts, bound_i = min([head[:2] for head in heap[:1]] + pending[-1:])
        run = [cursor.batch[cursor.at]]
        cursor.at += 1
        while cursor.at < len(cursor.batch) or cursor.next_batch():
            item = cursor.batch[cursor.at]
            ts = ts_of(item)
            if ts is not None:
                last = ts
            if last > bound_ts or (last == bound_ts and i > bound_i):
                heapq.heappush(heap, (last, i, cursor))
                break
            if len(run) == most:
                yield i, run
                run = []
            run.append(item)
            cursor.at += 1
        yield i, run
