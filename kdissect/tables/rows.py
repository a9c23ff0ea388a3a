"""A table's rows held column by column while a sink fills it.

The records table gets a row per Kafka record (hundreds of thousands per capture), most of whose
cells repeat their batch's values: building them column-wise (a batch's values repeated once per
batch, its records' fields transposed in one go) costs a fraction of a dict per row, and the
columns go to pandas as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any

from .columns import TABLES

# Carried alongside a table's own columns: resolved into ``topic``/``topic_id`` at output time.
HIDDEN = ("_topic_id",)


class TableRows:
    """Rows of one table as a list per column (missing cells are None)."""

    __slots__ = ("columns", "length", "table")

    def __init__(self, table: str) -> None:
        self.table = table
        self.columns: dict[str, list[Any]] = {name: [] for name, _ in TABLES[table]}
        for name in HIDDEN:
            self.columns[name] = []
        self.length = 0

    def __len__(self) -> int:
        return self.length

    def append(self, row: Mapping[str, Any]) -> None:
        """One row given as a dict; keys that are not columns are ignored."""
        get = row.get
        for name, column in self.columns.items():
            column.append(get(name))
        self.length += 1

    def extend(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            self.append(row)

    def add_block(self, n: int, same: Mapping[str, Any], each: Mapping[str, Sequence[Any]]) -> None:
        """``n`` rows at once: ``same`` holds values shared by all of them, ``each`` a sequence of
        ``n`` values per column; other columns are None."""
        for name, column in self.columns.items():
            if name in each:
                column.extend(each[name])
            else:
                column.extend(repeat(same.get(name), n))
        self.length += n
