"""A table's rows held column by column while a sink fills it.

The records table gets a row per Kafka record (hundreds of thousands per capture), most of whose
cells repeat their batch's values: such a value is kept once per batch as a run (value, count),
and the records' own fields either stay in the column buffers the C record loop filled (a
:class:`~kdissect.tables.blocks.RecordBlock`, no object per record) or, for batches decoded into
Record tuples, are transposed a batch at a time. That costs a fraction of a dict per row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from itertools import repeat
from typing import Any

from ..decoders.records import ArenaColumns, RecordColumns
from ..native import native_module
from .blocks import PER_RECORD, RecordBlock
from .columns import INTEGER_KINDS, NULLABLE, TABLES, Parts, Runs, Typed

_native_rows = native_module("tables._native")
# Carried alongside a table's own columns: resolved into ``topic``/``topic_id`` at output time.
HIDDEN = ("_topic_id",)
# Rows of a native piece below which its typed arrays join the column's last part rather than start one.
JOINED_BELOW = 64
# The records table's runs held as typed buffers (a machine value per batch, no Python object): its
# integer columns but connection_id, which the sink lines up with source_file run by run (aligned).
TYPED_RUNS = frozenset(name for name, kind in TABLES["records"] if kind in INTEGER_KINDS) - {"connection_id"}


class TableRows:
    """Rows of one table, a list (or :class:`Runs`, or :class:`Parts`) per column; missing cells are None."""

    __slots__ = ("block", "columns", "counts", "length", "orders", "others", "run_lists", "runs")

    def __init__(self, table: str) -> None:
        self.columns: dict[str, list[Any] | Runs | Parts] = {name: [] for name, _ in TABLES[table]}
        for name in HIDDEN:
            self.columns[name] = []
        self.length = 0
        self.runs = False  # whether some column is kept as runs or parts
        self.block: RecordBlock | None = None  # the block that record columns added next go to
        self.counts: list[int] | None = None  # the counts of every column kept as runs
        self.others: dict[tuple[str, ...], list[str]] = {}  # per set of per-row columns: the rest
        self.orders: dict[tuple[str, ...], tuple[tuple[list[Any], ...], list[list[Any]]]] = {}  # append_values'
        # _same's: per set of per-row columns, the run values lists of the rest when they are all runs
        self.run_lists: dict[tuple[str, ...], tuple[list[Any], ...] | None] = {}

    def __len__(self) -> int:
        return self.length

    def listed(self, name: str) -> list[Any]:
        """Column ``name`` as a plain list (runs expanded, for good)."""
        column = self.columns[name]
        if isinstance(column, Parts):
            self.block = None  # its rows are in the list now: later ones start a new block
        if isinstance(column, Runs | Parts):
            column = self.columns[name] = column.expand()
            self._columns_changed()
        return column

    def _columns_changed(self) -> None:
        """A column's object was replaced: the lists cached for appending are stale."""
        self.orders.clear()
        self.run_lists.clear()

    def _tail(self, name: str) -> list[Any]:
        """The list that column ``name``'s next values go to (a block's rows stay as they are)."""
        column = self.columns[name]
        return column.tail() if isinstance(column, Parts) else self.listed(name)

    def aligned(self, names: Sequence[str]) -> list[list[Any]]:
        """Columns ``names`` as lists to change in place cell by cell: their run values when they are
        all runs with the same counts (a cell then stands for its whole run), else plain lists."""
        columns = [self.columns[name] for name in names]
        first = columns[0]
        if isinstance(first, Runs) and all(isinstance(c, Runs) and c.counts == first.counts
                                           and type(c.values) is list for c in columns):  # fmt: skip
            return [c.values for c in columns]  # type: ignore[union-attr]
        return [self.listed(name) for name in names]

    def append(self, row: Mapping[str, Any]) -> None:
        """One row given as a dict; keys that are not columns are ignored (``extend``'s work for one row,
        without its list: an exchange row is appended this way per exchange)."""
        if self.runs:
            self.extend((row,))
            return
        get = row.get
        for name, column in self.columns.items():
            column.append(get(name))  # type: ignore[union-attr]
        self.length += 1

    def _plain(self) -> None:
        """Every column as a plain list (rows given one by one go to lists)."""
        if self.runs:
            for name in self.columns:
                self.listed(name)
            self.runs = False

    def extend(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Rows given as dicts."""
        rows = list(rows)
        if not rows:
            return
        self._plain()
        columns = self.columns.items()
        for row in rows:
            get = row.get
            for name, column in columns:
                column.append(get(name))  # type: ignore[union-attr]
        self.length += len(rows)

    def append_values(self, names: tuple[str, ...], prefix: Sequence[Any], rows: Sequence[Sequence[Any]]) -> None:
        """Rows given as values in the order of ``names`` (``prefix`` first, shared by every row):
        the native detail walk's rows, and batches, appended (in C when built) without a dict
        per row. Columns not named get None."""
        if not rows:
            return
        self._plain()
        order = self.orders.get(names)  # (the lists stay the same while the table is plain)
        if order is None:
            order = self.orders[names] = (tuple(self._tail(name) for name in names),
                                          [self.columns[name] for name in self.columns.keys() - set(names)])
        named, others = order
        if _native_rows is not None:
            _native_rows.append_rows(named, tuple(prefix), rows)
        else:
            for row in rows:
                for column, value in zip(named, (*prefix, *row), strict=True):
                    column.append(value)
        for column in others:
            column.extend(repeat(None, len(rows)))
        self.length += len(rows)

    def add_columns(self, columns: Mapping[str, list[Any] | Typed], n: int) -> None:
        """``n`` rows given as a list or a :class:`Typed` array per column (a piece of rows made natively);
        other columns are None. Each column becomes :class:`Parts`: a copy of a piece's typed array (its
        cells alone, not the room its buffer grew), or the piece's list itself (never changed after: see
        ``Parts``), is its next part, not joined to the part before: the Arrow conversion reads a column's
        parts once (extending one list or buffer by each piece copied the column over again each time
        it grew by its eighth). A piece of fewer than ``JOINED_BELOW`` rows is appended to the last part
        (a part per few rows would cost more memory than its cells)."""
        self._plain()
        parted = False
        for name, column in self.columns.items():
            values = columns.get(name)
            if n < JOINED_BELOW and type(values) is not Typed:
                column.extend(values if values is not None else repeat(None, n))  # type: ignore[union-attr]
                continue
            if type(column) is not Parts:
                column = self.columns[name] = Parts([column], column) if column else Parts()
            parts = column.parts
            if type(values) is Typed:
                last = parts[-1] if parts else None
                if n < JOINED_BELOW and type(last) is Typed and last.code == values.code:
                    last.buffer += values.buffer
                    continue
                parts.append(Typed(bytearray(values.buffer), values.code))
            else:  # the piece's list itself (or its Nones, made at their size)
                parts.append(values if type(values) is list else [None] * n if values is None else list(values))
            parted = True
        if parted:  # (the lists append_values keeps are no longer the columns' last)
            self._columns_changed()
        self.length += n

    def add_block(self, n: int, same: Mapping[str, Any], each: Mapping[str, Sequence[Any]]) -> None:
        """``n`` rows at once: ``same`` holds values shared by all of them, ``each`` a sequence of
        ``n`` values per column; other columns are None. Columns not in ``each`` in a table's first
        block are kept as runs (also by :meth:`add_record_columns`)."""
        self.block = None
        for name, values in each.items():
            self._tail(name).extend(values)
        self._same(n, same, each.keys())

    def add_record_columns(self, same: Mapping[str, Any], records: RecordColumns, first_offset: int | None) -> None:
        """A batch's rows of the records table, its records given as columns (``first_offset``:
        see :attr:`RecordBlock.first_offsets`), ``same`` as in :meth:`add_block`."""
        block = self.block
        if block is None:
            block = self.block = RecordBlock()
            for name in PER_RECORD:
                column = self.columns[name]
                if not isinstance(column, Parts):
                    column = self.columns[name] = Parts([column] if column else [])
                    self._columns_changed()
                column.parts.append((block, name))
            self.runs = True  # (append expands them)
        block.add(records, first_offset)
        self._same(records.count, same, PER_RECORD)

    def record_target(self) -> tuple[tuple[list[Any], ...], list[str], list[int], RecordBlock] | None:
        """Where :meth:`add_record_columns` puts the next batch once the table is steady (a block open,
        every other column a run): the run value lists, their columns' names, the run counts and the
        block; what the records rows in C (``tables/_record_rows.c``) append to. None when not steady."""
        lists = self.run_lists.get(PER_RECORD)
        if not lists or self.block is None or self.counts is None:
            return None
        return lists, self.others[PER_RECORD], self.counts, self.block

    def steady(self, start: ArenaColumns) -> None:
        """This empty records table made steady with no rows (:meth:`record_target`), so that its first
        batch's rows too may be made in C; ``start``: an empty span where the arena they go to starts (the
        spans after it continue it: the block's columns stay one span of the arena, not joined)."""
        self.add_record_columns({}, start, None)

    def added_records(self, n: int) -> None:
        """``n`` rows were appended through :meth:`record_target`."""
        assert self.block is not None
        self.block.added(n)
        self.length += n

    def _same(self, n: int, same: Mapping[str, Any], each: Iterable[str]) -> None:
        """Columns other than ``each`` get their ``same`` value (None if missing) for ``n`` rows."""
        columns = self.columns
        key = tuple(each)
        others = self.others.get(key)
        if others is None:
            others = self.others[key] = [name for name in columns if name not in key]
        if not self.length:  # runs of one batch each: their counts are shared, appended once
            self.counts = []
            for name in others:
                columns[name] = Runs(bytearray() if name in TYPED_RUNS else [], self.counts)
            self._columns_changed()
            self.runs = True
        get = same.get
        lists = self.run_lists.get(key, False)
        if lists is False:
            lists = self.run_lists[key] = (tuple(columns[name].values for name in others)  # type: ignore[union-attr]
                                           if all(type(columns[name]) is Runs for name in others) else None)
        if lists is not None:  # every batch after a table's first: one value per run, no loop per column
            if _native_rows is not None:
                _native_rows.append_rows(lists, tuple(map(get, others)), ((),))
            else:
                for name, value in zip(others, map(get, others), strict=True):
                    columns[name].append(value)  # type: ignore[union-attr]
        else:
            for name in others:
                column = columns[name]
                if type(column) is Runs:  # (the only runs a table has, since every other column is each's)
                    column.append(get(name))
                else:
                    self._tail(name).extend(repeat(get(name), n))
        if self.counts is not None:
            self.counts.append(n)
        self.length += n


def typed(columns: Mapping[str, list[Any] | bytearray], codes: Mapping[str, str] | None = None
          ) -> dict[str, list[Any] | Typed]:  # fmt: skip
    """Columns given as lists, or as buffers of machine values of the type ``codes`` names (a numpy type
    code: events.EXCHANGE_TYPED; without ``codes``, NULLABLE records) as :class:`Typed` parts."""
    return {name: Typed(values, NULLABLE if codes is None else codes[name]) if type(values) is bytearray
            else values for name, values in columns.items()}  # fmt: skip


def native_columns(table: str, names: tuple[str, ...]) -> tuple[list[Any] | bytearray, ...]:
    """Columns for rows made in C (a piece per call): a typed buffer (``tables/_typed.c``'s NULLABLE
    records) per integer column of the table, else a list."""
    return tuple(bytearray() if integer else [] for integer in _integer_columns(table, names))


@cache
def _integer_columns(table: str, names: tuple[str, ...]) -> tuple[bool, ...]:
    kinds = dict(TABLES[table])
    return tuple(kinds.get(name) in INTEGER_KINDS for name in names)


def typed_rows(column: list[Any] | bytearray) -> int:
    """How many rows a column of a native piece holds (a typed buffer: one NULLABLE record each)."""
    return len(Typed(column, NULLABLE)) if type(column) is bytearray else len(column)
