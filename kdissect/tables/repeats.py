"""Records whose payloads repeat earlier rows of the same staged file, staged as a reference to them.

Why: on record-heavy traffic a batch a producer sends is read back by every consumer group, and the
broker returns the very bytes it was sent, so a Spark task staged each batch's keys, values and header
values about four times (``large-60MB.pcap``: 18 MB of its 145 MB of values distinct), and writing the
staged pieces was most of the workers' kernel time. Decoding a staged compressed batch again costs
more than it saves (reports/spark-staging-2026-11-30.md); this costs a copy. The rows in C
(``tables/_record_rows.c``) ask :meth:`Repeats.seen` about every batch whose records take
``MIN_PAYLOAD`` bytes or more: a compressed one by its inflated payload (the run's inflate cache hands
back the very object it inflated before, ``decoders/inflate_cache.py``), an uncompressed one by its
CRC-32C and a copy of its records; when rows of this task were made from the same bytes, the batch's
payloads are decoded cut to nothing (sizes, nulls and header keys kept). The records piece then carries
``BACK`` (run-end encoded: one run per batch): for such a row, how many rows back its payloads are; the
task reading the staged file back copies them from there (:func:`resolved`).

Bounded: a reference reaches at most :data:`REACH` rows back (the reading task keeps the pieces in
reach: mapped from local disk, so page cache, not heap; a Spark task's pieces are 10,000 rows), and the
payloads registered are held (so that an identity stays its payload's, and an uncompressed batch's
bytes can be compared) up to :data:`HELD_BYTES`, the oldest forgotten first.
"""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator

import pyarrow as pa

from kdissect.decoders.inflate_cache import MIN_PAYLOAD

BACK = "_back"  # records rows: rows back to the one whose key, value and headers this row's are (null: its own)
BACK_TYPE = pa.run_end_encoded(pa.int32(), pa.int32())
PAYLOAD_COLUMNS = ("key", "value", "headers")  # what a reference stands for
REACH = 200_000  # rows a reference may point back (20 of a Spark task's 10,000-row pieces)
HELD_BYTES = 32 << 20  # payloads kept registered (the inflate cache keeps as much)


class Repeats:
    """A task's records rows made from each recent batch payload, and the references made so far.

    The rows in C call :meth:`seen` per batch they ask about, with its row in the call; the caller sets
    :attr:`base` (the task's rows before the call) and, after it, :meth:`commit`\\ s the rows it kept
    (a declined message's registrations and references are dropped: the reference decodes it whole)."""

    __slots__ = ("_held", "_pending", "_registered", "base", "ranges")

    def __init__(self) -> None:
        self.base = 0  # the task's records rows before the current C call
        # key (id(payload), or a CRC-32C) -> (payload, first row, records): held, so an id stays its payload's
        self._registered: dict[int, tuple[bytes, int, int]] = {}
        self._held = 0  # bytes of the registered payloads
        self._pending: list[tuple[int, int, bytes, int, int | None]] = []  # (row, records, payload, key, earlier)
        self.ranges: list[tuple[int, int, int]] = []  # (row, records, rows back), in row order, not staged yet

    def target(self) -> tuple:
        """The C target's seventh item (``tables/_record_rows.c``)."""
        return (self.seen, MIN_PAYLOAD)

    def seen(self, payload: bytes, row: int, count: int, key: int | None) -> int | None:
        """The first row of the rows made from ``payload`` (``count`` records; ``key``: the batch's
        CRC-32C for an uncompressed one's records, None for an inflated payload, known by its identity)
        within reach, or None."""
        if not count:  # (no rows to refer to, nor a run to stage)
            return None
        row += self.base
        key = id(payload) if key is None else key
        entry = self._registered.get(key)
        earlier = None
        if entry is not None and entry[2] == count and row - entry[1] <= REACH and \
                (entry[0] is payload or entry[0] == payload):  # fmt: skip
            earlier = entry[1]
        self._pending.append((row, count, payload, key, earlier))
        return earlier

    def commit(self, added: int) -> None:
        """The C call kept its first ``added`` rows (from :attr:`base`)."""
        if not self._pending:  # (no batch asked about: most calls on chatty traffic)
            return
        end = self.base + added
        for row, count, payload, key, earlier in self._pending:
            if row >= end:
                break
            if earlier is not None:
                self.ranges.append((row, count, row - earlier))
            elif key not in self._registered:
                self._registered[key] = (payload, row, count)
                self._held += len(payload)
        self._pending.clear()
        self._forget(end)

    def _forget(self, end: int) -> None:
        """Registrations out of reach of the next rows, and the oldest past :data:`HELD_BYTES`."""
        registered = self._registered
        while registered:
            key = next(iter(registered))
            payload, row, _ = registered[key]
            if row >= end - REACH and self._held <= HELD_BYTES:
                break
            del registered[key]
            self._held -= len(payload)

    def column(self, first: int, rows: int) -> pa.Array:
        """The :data:`BACK` column of the piece of rows ``first`` to ``first + rows`` (the ranges in it
        are staged and forgotten)."""
        if not rows:
            return pa.array([], BACK_TYPE)
        ends, values, at = [], [], first
        while self.ranges and self.ranges[0][0] < first + rows:
            row, count, back = self.ranges.pop(0)
            if row > at:
                ends.append(row - first)
                values.append(None)
            elif values and values[-1] == back:  # (a batch right after one of the same rows back: one run)
                ends[-1] = row + count - first
                at = row + count
                continue
            ends.append(row + count - first)
            values.append(back)
            at = row + count
        if at < first + rows or not ends:
            ends.append(rows)
            values.append(None)
        return pa.RunEndEncodedArray.from_arrays(pa.array(ends, pa.int32()), pa.array(values, pa.int32()),
                                                 type=BACK_TYPE)  # fmt: skip


def resolved(pieces: Iterable[pa.Table]) -> Iterator[pa.Table]:
    """A staged records file's pieces, in order, with every reference's payloads copied from the rows it
    points at (:data:`BACK` dropped); the pieces within :data:`REACH` rows kept for that."""
    kept: list[tuple[int, pa.RecordBatch]] = []  # (first row, payload columns) of the pieces in reach, ascending
    first = 0  # the piece's first row in the file (a task's records rows, in order)
    for piece in pieces:
        if BACK not in piece.column_names or not piece.num_rows:
            yield piece
            continue
        kept = [(start, p) for start, p in kept if start + p.num_rows > first - REACH]
        kept.append((first, pa.record_batch([_array(piece[name]) for name in PAYLOAD_COLUMNS],
                                            names=list(PAYLOAD_COLUMNS))))  # fmt: skip
        back = _array(piece[BACK])
        piece = piece.drop_columns([BACK])
        yield piece if back.values.null_count == len(back.values) else _copied(piece, first, back, kept)
        first += piece.num_rows


def _array(column: pa.ChunkedArray) -> pa.Array:
    """A piece's column as one array (a staged piece's is one chunk already: not copied)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _copied(piece: pa.Table, first: int, back: pa.Array, kept: list[tuple[int, pa.RecordBatch]]) -> pa.Table:
    """``piece`` (rows from ``first``) with the payload columns of its referring runs sliced from the
    kept pieces' (its own last), joined in one copy."""
    starts = [start for start, _ in kept]
    slices: list[pa.RecordBatch] = []  # in row order
    run_start, source, at, length = 0, -1, 0, 0  # the slice being extended: kept[source], rows at, length
    for end, b in zip(back.run_ends.to_pylist(), back.values.to_pylist(), strict=True):
        row, left = first + run_start - (b or 0), end - run_start
        while left:  # (a run of batches may span two earlier pieces)
            k = len(kept) - 1 if b is None else bisect_right(starts, row) - 1
            n = min(left, starts[k] + kept[k][1].num_rows - row)
            if k == source and row - starts[k] == at + length:
                length += n  # (rows that follow the slice's in the same piece: one slice)
            else:
                if length:
                    slices.append(kept[source][1].slice(at, length))
                source, at, length = k, row - starts[k], n
            row, left = row + n, left - n
        run_start = end
    slices.append(kept[source][1].slice(at, length))
    payloads = pa.concat_batches(slices)
    for name in PAYLOAD_COLUMNS:
        piece = piece.set_column(piece.column_names.index(name), name, payloads.column(name))
    return piece
