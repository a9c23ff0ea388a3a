"""A bounded listing: the first ``limit`` rows by an order key, whatever order they come in.

A report listing (JoinGroup waits, the slowest requests) shows its first rows only. Keeping the
``limit`` smallest keys is a choice that does not depend on how a run was split or in which order
its pieces merged, so a Spark run lists exactly the local run's rows; ``total`` counts every row
offered, so the report can still say how many there were.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


def ordered(*values: object) -> tuple:
    """An order key of nullable values: each value's place, nulls last (the tables' capture order)."""
    return tuple(x for v in values for x in ((True, 0) if v is None else (False, v)))


def smallest(values: set[str], limit: int) -> set[str]:
    """``values`` cut to the ``limit`` smallest (names listed beside a figure: the same whatever the split)."""
    return values if len(values) <= limit else set(sorted(values)[:limit])


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


def capture_order(table: str) -> Callable[[tuple], tuple]:
    """The order key of a row of ``table`` (its values in the table's column order) that
    :func:`kdissect.analysis.frames.in_capture_order` sorts by: its timestamps, then every other
    column that sorts (text as text, categories sort so), nulls last."""
    from kdissect.tables.columns import TABLES

    kinds = [kind for _, kind in TABLES[table]]
    at = [i for i, kind in enumerate(kinds) if kind == "timestamp"]
    at += [i for i, kind in enumerate(kinds) if kind not in ("timestamp", "bytes", "headers")]
    return lambda row: ordered(*(row[i] if row[i] is None or isinstance(row[i], int | float | tuple) else str(row[i])
                                 for i in at))  # (a tuple: a Spark task's connection place)  # fmt: skip


class FirstRows:
    """The first ``limit`` rows of a table in capture order (:func:`capture_order`), every column,
    and (``kept.total``) how many rows were offered: a listing that needs no row past its limit."""

    __slots__ = ("kept", "table")

    def __init__(self, table: str, limit: int) -> None:
        self.table = table
        self.kept = Listing(limit)

    def add(self, rows: Iterable[tuple]) -> None:
        """Rows of the table (values in its column order)."""
        key = capture_order(self.table)
        for row in rows:
            self.kept.add(key(row), row)

    def merge(self, other: FirstRows) -> None:
        self.kept.merge(other.kept)

    def settle(self, connection: Callable[[object], int]) -> None:
        """A Spark driver's rows, whose tasks named connections by place: with their ids."""
        from kdissect.tables.columns import TABLES

        at = [name for name, _ in TABLES[self.table]].index("connection_id")
        self.kept.map_rows(lambda row: (*row[:at], None if row[at] is None else connection(row[at]), *row[at + 1:]))

    def frame(self) -> pd.DataFrame:
        """The kept rows as the table's DataFrame, in capture order."""
        from kdissect.tables.columns import TABLES
        from kdissect.tables.frames import taken_dataframe

        rows = self.kept.rows()
        return taken_dataframe(self.table, {name: [row[i] for row in rows]
                                            for i, (name, _) in enumerate(TABLES[self.table])})  # fmt: skip

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FirstRows) and (self.table, self.kept) == (other.table, other.kept)
