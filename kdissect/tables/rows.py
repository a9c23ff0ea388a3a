"""A table's rows held column by column while a sink fills it.

The records table gets a row per Kafka record (hundreds of thousands per capture), most of whose
cells repeat their batch's values: such a value is kept once per batch as a run (value, count),
the records' own fields are transposed a batch at a time, and the columns go to pandas as they
are. That costs a fraction of a dict per row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any

from .columns import TABLES, Runs

# Carried alongside a table's own columns: resolved into ``topic``/``topic_id`` at output time.
HIDDEN = ("_topic_id",)


class TableRows:
    """Rows of one table, a list (or :class:`Runs`) per column; missing cells are None."""

    __slots__ = ("columns", "length", "runs")

    def __init__(self, table: str) -> None:
        self.columns: dict[str, list[Any] | Runs] = {name: [] for name, _ in TABLES[table]}
        for name in HIDDEN:
            self.columns[name] = []
        self.length = 0
        self.runs = False  # whether some column is kept as runs

    def __len__(self) -> int:
        return self.length

    def listed(self, name: str) -> list[Any]:
        """Column ``name`` as a plain list (runs expanded, for good)."""
        column = self.columns[name]
        if isinstance(column, Runs):
            column = self.columns[name] = column.expand()
        return column

    def aligned(self, names: Sequence[str]) -> list[list[Any]]:
        """Columns ``names`` as lists to change in place cell by cell: their run values when they are
        all runs with the same counts (a cell then stands for its whole run), else plain lists."""
        columns = [self.columns[name] for name in names]
        first = columns[0]
        if isinstance(first, Runs) and all(isinstance(c, Runs) and c.counts == first.counts for c in columns):
            return [c.values for c in columns]  # type: ignore[union-attr]
        return [self.listed(name) for name in names]

    def append(self, row: Mapping[str, Any]) -> None:
        """One row given as a dict; keys that are not columns are ignored."""
        if self.runs:
            for name in self.columns:
                self.listed(name)
            self.runs = False
        get = row.get
        for name, column in self.columns.items():
            column.append(get(name))  # type: ignore[union-attr]
        self.length += 1

    def extend(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            self.append(row)

    def add_block(self, n: int, same: Mapping[str, Any], each: Mapping[str, Sequence[Any]]) -> None:
        """``n`` rows at once: ``same`` holds values shared by all of them, ``each`` a sequence of
        ``n`` values per column; other columns are None. Columns not in ``each`` in a table's first
        block are kept as runs."""
        columns = self.columns
        if not self.length:
            for name in columns.keys() - each.keys():
                columns[name] = Runs()
            self.runs = True
        for name, values in each.items():
            self.listed(name).extend(values)
        for name in columns.keys() - each.keys():
            column, value = columns[name], same.get(name)
            if isinstance(column, Runs):
                column.values.append(value)
                column.counts.append(n)
            else:
                column.extend(repeat(value, n))
        self.length += n
