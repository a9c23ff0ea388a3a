"""A bounded listing: the first ``limit`` rows by an order key, whatever order they come in.

A report listing (JoinGroup waits, the slowest requests) shows its first rows only. Keeping the
``limit`` smallest keys is a choice that does not depend on how a run was split or in which order
its pieces merged, so a Spark run lists exactly the local run's rows; ``total`` counts every row
offered, so the report can still say how many there were.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable
from typing import Any


class _Row:
    """A kept row in a heap whose top is the row to drop first (the largest key)."""

    __slots__ = ("key", "row")

    def __init__(self, key: Any, row: tuple) -> None:
        self.key, self.row = key, row

    def __lt__(self, other: _Row) -> bool:
        return self.key > other.key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Row) and (self.key, self.row) == (other.key, other.row)

    def __reduce__(self) -> tuple:
        return _Row, (self.key, self.row)


class Listing:
    """The ``limit`` rows with the smallest order keys (keys must be totally ordered and distinct
    per row: a tie would make the kept row depend on arrival order)."""

    __slots__ = ("_heap", "limit", "total")

    def __init__(self, limit: int) -> None:
        self.limit, self.total = limit, 0
        self._heap: list[_Row] = []

    def add(self, key: Hashable, row: tuple) -> None:
        self.total += 1
        self._offer(_Row(key, row))

    def _offer(self, kept: _Row) -> None:
        if len(self._heap) < self.limit:
            heapq.heappush(self._heap, kept)
        elif self._heap and kept.key < self._heap[0].key:
            heapq.heapreplace(self._heap, kept)

    def merge(self, other: Listing) -> None:
        self.total += other.total
        for kept in other._heap:
            self._offer(kept)

    def map_rows(self, change: Callable[[tuple], tuple]) -> None:
        """Each kept row changed (its place in the listing kept)."""
        self._heap = [_Row(kept.key, change(kept.row)) for kept in self._heap]

    def rows(self) -> list[tuple]:
        """The kept rows, in key order."""
        return [kept.row for kept in sorted(self._heap, key=lambda kept: kept.key)]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Listing) and (self.total, self.rows()) == (other.total, other.rows())

    def __getstate__(self) -> tuple:
        return self.limit, self.total, self._heap

    def __setstate__(self, state: tuple) -> None:
        self.limit, self.total, self._heap = state
