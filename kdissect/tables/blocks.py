"""Records-table rows whose per-record cells are still the C record loop's column buffers.

A batch decoded by ``_native.v2_columns`` arrives as a dozen bytes objects
(:class:`~kdissect.decoders.records.RecordColumns`) instead of a tuple, an int, two bytes and a
list of header tuples per record, or, decoded into the sink's arena, as spans of the arena's
buffers (:class:`~kdissect.decoders.records.ArenaColumns`). A :class:`RecordBlock` keeps
consecutive such batches as they are; its columns become numpy arrays and byte strings that Arrow
takes as its buffers (:mod:`.arrow`), or the same Python values the Record path gives (the pandas
tables). Batches that follow each other in an arena are one span of it, taken without a copy.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from kdissect.lazy import lazy_module

from ..decoders.records import ArenaColumns, RecordColumns
from .columns import NULLABLE, Typed, typed_cell
from .numbers import spread_rows, spreading

np = lazy_module("numpy")

# The records table's columns that hold a value per record (the others hold their batch's).
PER_RECORD = ("offset", "timestamp", "key", "value", "key_size", "value_size", "headers", "control_type")
MAX_MS = (2**63 - 1) // 1_000_000  # later record timestamps (ms) cannot be held as ns: shown as unknown
WIRE = -1  # a batch whose offsets are its records' own (fetch), not assigned from a first offset
_INT64_MAX = 2**63 - 1


class RecordBlock:
    """Consecutive rows of the records table, a batch's :class:`RecordColumns` at a time, or (the C rows)
    a span of an arena's buffers for several batches."""

    __slots__ = ("batches", "counts", "first_offsets", "length", "merged")

    def __init__(self) -> None:
        self.batches: list[RecordColumns | ArenaColumns] = []  # the pieces: a batch's, or (C) several batches'
        # per batch: WIRE, the log offset of its first record (produce, once the broker answered), or None
        # (unknown, as is an offset past int64: its records' offsets are unknown either way), as a typed
        # buffer (NULLABLE records: read back without an object array, a batch per record on chatty traffic)
        self.first_offsets = bytearray()
        self.counts: list[int] = []  # per batch: its records
        self.length = 0
        self.merged: list[Any] | None = None  # see _pieces

    def __len__(self) -> int:
        return self.length

    def add(self, columns: RecordColumns | ArenaColumns, first_offset: int | None) -> None:
        self.batches.append(columns)
        self.merged = None
        self.first_offsets += typed_cell(first_offset)
        self.counts.append(columns.count)
        self.length += columns.count

    def added(self, n: int) -> None:
        """``n`` records were appended to :attr:`batches`, :attr:`first_offsets` and :attr:`counts` (in C:
        :meth:`add`'s work, a piece for the batches of a call)."""
        self.merged = None
        self.length += n

    def _pieces(self) -> list[Any]:
        """The batches as pieces: a batch's own :class:`RecordColumns`, or ``[buffers, starts, ends]``
        for a run of batches that follow each other in an arena's buffers (found once per block)."""
        if self.merged is None:
            self.merged = []
            for b in self.batches:
                last = self.merged[-1] if self.merged else None
                if type(b) is not ArenaColumns:
                    self.merged.append(b)
                elif type(last) is list and last[0] is b.buffers and last[2] == b.starts:
                    last[2] = b.ends
                else:
                    self.merged.append([b.buffers, b.starts, b.ends])
        return self.merged

    def _joined(self, name: str) -> bytes | bytearray | memoryview:
        """Column ``name`` of every batch, end to end: a run of batches in an arena is a piece of its
        buffer (the whole buffer, or a view: no copy), and pieces are joined only when there are several."""
        i = _FIELDS[name]
        parts = [_span(p[0][i], p[1][i], p[2][i]) if type(p) is list else p[i] for p in self._pieces()]
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _ints(self, name: str, dtype: type) -> np.ndarray:
        return np.frombuffer(self._joined(name), dtype=dtype)

    def numbers(self, name: str) -> tuple[np.ndarray, np.ndarray | None]:
        """An integer column (``offset``, ``timestamp`` in ns, ``key_size``, ``value_size``) and its
        nulls (None: none), as the Record path's values would be shown."""
        if name == "offset":
            return self._offsets()
        if name == "timestamp":
            ms = self._ints("timestamp", np.int64)
            nulls = (ms < 0) | (ms > MAX_MS)
            return np.where(nulls, 0, ms) * 1_000_000, nulls if nulls.any() else None
        return self._ints(name, np.int32), None

    def _offsets(self) -> tuple[np.ndarray, np.ndarray | None]:
        values = self._ints("offset", np.int64)
        firsts, nulls = Typed(self.first_offsets, NULLABLE).arrays()  # (one pass per step below, each in C:
        unknown = np.zeros(len(firsts), dtype=np.bool_) if nulls is None else nulls  # a batch per record)
        wire = (firsts == WIRE) & ~unknown
        if wire.all():
            return values, None
        counts = np.fromiter(self.counts, dtype=np.int64, count=len(self.counts))
        assigned = firsts[~(unknown | wire)]
        if not len(assigned) or assigned.max() <= _INT64_MAX - int(counts.max(initial=0)):
            return self._assigned(values, counts, firsts, unknown, wire)
        return self._offsets_by_batch(values)

    def _assigned(self, values: np.ndarray, counts: np.ndarray, firsts: np.ndarray, unknown: np.ndarray,
                  wire: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The offsets of batches whose first offsets (``firsts``: ``unknown`` where None, ``wire`` where
        WIRE) all fit in int64 with their records, a numpy step per column rather than a step per batch."""
        how = spreading(counts)  # (each batch's value to its records: numpy.repeat, or less for a record each)
        rows = spread_rows(how, ~(unknown | wire))
        index = np.arange(len(values), dtype=np.int64) - spread_rows(how, np.cumsum(counts) - counts)
        values = np.where(rows, spread_rows(how, np.where(unknown, 0, firsts)) + index, values)
        nulls = spread_rows(how, unknown)
        return values, nulls if nulls.any() else None

    def _offsets_by_batch(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """:meth:`_offsets` batch by batch, for first offsets near the end of int64 (hostile input)."""
        values, nulls = values.copy(), np.zeros(len(values), dtype=np.bool_)
        row = 0
        for n, first in zip(self.counts, Typed(self.first_offsets, NULLABLE).tolist(), strict=True):
            if first is None:
                nulls[row : row + n] = True
            elif first != WIRE:  # offsets past int64 (a hostile base offset) are unknown, as on the Record path
                held = max(0, min(n, _INT64_MAX - first + 1))
                values[row : row + held] = np.arange(first, first + held, dtype=np.int64)
                nulls[row + held : row + n] = True
            row += n
        return values, nulls if nulls.any() else None

    def binary(self, name: str) -> tuple[np.ndarray, bytes | bytearray | memoryview]:
        """A payload column (``key``, ``value``, ``header_key``, ``header_value``): each cell's kept
        length (-1: null) and the kept bytes end to end."""
        return self._ints(f"{name}_len", np.int32), self._joined(name)

    def header_counts(self) -> np.ndarray:
        return self._ints("headers", np.int32)

    def listed(self, name: str) -> list[Any]:
        """Column ``name`` as the Record path's Python values."""
        if name == "control_type":
            return [None] * self.length
        if name in ("key", "value"):
            return _payloads(*self.binary(name))
        if name == "headers":
            keys = [k.decode() for k in _payloads(*self.binary("header_key"))]  # type: ignore[union-attr]
            pairs = list(zip(keys, _payloads(*self.binary("header_value")), strict=True))
            ends = ends_of(self.header_counts()).tolist()
            return [pairs[start:end] for start, end in pairwise(ends)]
        values, nulls = self.numbers(name)
        if nulls is None:
            return values.tolist()
        return [None if null else v for v, null in zip(values.tolist(), nulls.tolist(), strict=True)]


_FIELDS = {name: i for i, name in enumerate(RecordColumns._fields)}


def _span(buffer: bytearray, start: int, end: int) -> bytearray | memoryview:
    return buffer if start == 0 and end == len(buffer) else memoryview(buffer)[start:end]


def ends_of(lengths: np.ndarray) -> np.ndarray:
    """Where each cell of a payload column ends in its bytes (int64, a leading 0), nulls taking none."""
    ends = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.maximum(lengths, 0), out=ends[1:])
    return ends


def _payloads(lengths: np.ndarray, data: bytes | bytearray | memoryview) -> list[bytes | None]:
    data = bytes(data)  # (cells as the Record path gives them: bytes, whatever held the column)
    ends = ends_of(lengths).tolist()
    return [None if n < 0 else data[start:end]
            for n, start, end in zip(lengths.tolist(), ends[:-1], ends[1:], strict=True)]  # fmt: skip
