"""Joining table pieces decoded apart (Spark tasks, each over some connections) into the tables the
local engine gives for the same captures.

A task cannot know three things the whole run settles, so it leaves them in hidden columns:
- connection ids: a task numbers its connections by where they opened (``pos``), and tells when
  (``ts``); the final id is the number of connections of the whole run opened before, in the order
  the local engine reads packets: by (time, pos) when several files are merged by time (rotated files
  that interleave), by pos in one file (:class:`Opened`);
- topic names for topic ids (Fetch v13+): named from every task's Metadata, the first naming in
  capture order winning, as in the local engine;
- brokers: kept once per (node, host, port, rack), from the first response in capture order, the
  first ``sink.BROKER_ROWS`` of them (a task's sink keeps its first as many, which include every one
  of the whole run's first);
- aborted transactions: a transaction's records and its outcome (ABORT marker, EndTxn) usually
  travel on different connections, so tasks journal the rules' inputs (``JOURNAL``) and number
  their records rows (``ROW``); the journals' calls sorted in capture order and replayed give the
  marks (:func:`replayed`), each within one task's rows.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from itertools import islice
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kdissect.dataclass import dataclass

from .arrow import arrow_schema, with_pandas_metadata
from .columns import TABLES
from .sink import BROKER_ROWS
from .transactions import marked, replay

OPENED, TOPICS, STATS, JOURNAL, FIGURES = "_opened", "_topics", "_stats", "_journal", "_figures"  # a task's side pieces
ROW = "_row"  # a records row's number in the whole run: task << ROW_BITS | row in the task
ROW_BITS = 40
TOPIC_ID = "_topic_id"  # unnamed topic ids of a piece's rows (text)
# place (pos, and ts as in Opened) of the response that revealed a broker row
BROKER_SEEN, BROKER_SEEN_TS = "_seen", "_seen_ts"


def ipc_bytes(table: pa.Table, options: pa.ipc.IpcWriteOptions | None = None) -> bytes:
    """A piece as it travels between tasks and the driver (Arrow IPC stream)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def read_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(data).read_all()


def connection_ids(provisional: pa.Array | pa.ChunkedArray, opened: Opened) -> pa.Array:
    """Final ids for provisional ones (``pos`` of the opening segment); nulls stay null."""
    column = provisional.combine_chunks() if isinstance(provisional, pa.ChunkedArray) else provisional
    nulls = column.is_null().to_numpy(zero_copy_only=False)
    values = column.fill_null(0).to_numpy(zero_copy_only=False)
    ids = opened.ids_of(values) if len(opened.pos) else np.zeros(len(values), np.int64)
    return pa.array(ids, pa.int64(), mask=nulls if nulls.any() else None)


@dataclass(frozen=True)
class Opened:
    """Every connection of the run by its opening segment's ``pos`` (ascending), with its final id:
    its rank by (``ts``, pos), the order the local engine opens connections in (``ts`` is 0 for every
    connection of a one-file run, read in file order whatever its times)."""

    pos: np.ndarray
    ids: np.ndarray

    @classmethod
    def of(cls, pos: np.ndarray, ts: np.ndarray) -> Opened:
        rank = np.empty(len(pos), np.int64)
        rank[np.lexsort((pos, ts))] = np.arange(len(pos))
        by_pos = np.argsort(pos, kind="stable")
        return cls(pos[by_pos], rank[by_pos])

    @classmethod
    def of_pieces(cls, pieces: Iterable[pa.Table]) -> Opened:
        """From the tasks' ``OPENED`` pieces."""
        pieces = list(pieces)
        column = [np.concatenate([p[c].to_numpy() for p in pieces]) if pieces else np.zeros(0, np.int64)
                  for c in ("pos", "ts")]  # fmt: skip
        return cls.of(*column)

    def ids_of(self, pos: np.ndarray) -> np.ndarray:
        return self.ids[np.searchsorted(self.pos, pos)]

    def id_of(self, place: tuple[int, int]) -> int:
        """The final id of a connection by its place (ts, pos), as tasks' figures hold it."""
        return int(self.ids[np.searchsorted(self.pos, place[1])])


def topic_names(pieces: Iterable[pa.Table]) -> dict[str, str]:
    """topic id -> name from tasks' ``TOPICS`` pieces: the naming seen first in capture order."""
    best: dict[str, tuple[int, str]] = {}
    for piece in pieces:
        for tid, name, *place in zip(*(piece[c].to_pylist() for c in ("topic_id", "topic", "seen_ts", "seen")),
                                     strict=True):  # fmt: skip
            seen = tuple(place)
            if tid not in best or seen < best[tid][0]:
                best[tid] = (seen, name)
    return {tid: name for tid, (_, name) in best.items()}


class TaskMarks(Protocol):
    """Aborted marks kept apart from the driver, looked up by the task that numbered their rows."""

    def hitting(self, task: int, first: int, end: int) -> list[tuple[int, int, str]]:
        """Task ``task``'s marks that may hit rows ``first`` to ``end`` (excluded)."""


Marks = list[tuple[int, int, str]]  # (first ROW, rows, rule) of records of aborted transactions


@dataclass(frozen=True)
class Settled:
    """What only the whole run knows, for finishing every task's pieces."""

    opened: Opened  # every connection's opening place and final id
    topics: dict[str, str]  # topic id -> name
    aborted: Marks | TaskMarks  # the marks themselves, or where each task's are


JOURNAL_CALLS = 4096  # calls a task holds before handing them over as a piece: its journal's memory bound
JOURNAL_SCHEMA = pa.schema([("ts", pa.int64()), ("pos", pa.int64()), ("task", pa.int64()), ("seq", pa.int64()),
                            ("call", pa.string())])  # fmt: skip
JOURNAL_ORDER = ("ts", "pos", "task", "seq")  # capture order of every task's calls (unique: task, seq)
MARKS_SCHEMA = pa.schema([("task", pa.int64()), ("first", pa.int64()), ("rows", pa.int64()), ("rule", pa.string())])


def journal_piece(task: int, first: int, calls: list[tuple[tuple[int, int], tuple]]) -> pa.Table:
    """Calls ``first``, ``first + 1``, ... of task ``task``'s journal of transaction calls, each with
    the place (ts, pos, as in :class:`Opened`) it came at (rows renumbered as ``ROW``), as a piece:
    a task's pieces follow each other in capture order."""
    out = []
    for _, call in calls:
        if call[0] == "opened":
            *head, row, n = call
            call = (*head, task << ROW_BITS | row, n)
        out.append(json.dumps([str(v) if isinstance(v, uuid.UUID) else v for v in call]))
    return pa.table([pa.array([ts for (ts, _), _ in calls], pa.int64()),
                     pa.array([pos for (_, pos), _ in calls], pa.int64()), pa.array([task] * len(calls), pa.int64()),
                     pa.array(range(first, first + len(calls)), pa.int64()), pa.array(out, pa.string())],
                    schema=JOURNAL_SCHEMA)  # fmt: skip


def replayed(calls: Iterable[pa.Table | pa.RecordBatch], topics: Mapping[str, str],
             rows: np.ndarray | None = None) -> Iterator[pa.Table]:  # fmt: skip
    """Every task's journal calls, sorted by :data:`JOURNAL_ORDER` (capture order), replayed by the one
    set of rules (``transactions.replay``; with ``rows``, ``ROW`` numbers ascending, the marks of those
    rows only), the marks out in tables of :data:`MARKS_SCHEMA` of at most :data:`JOURNAL_CALLS` rows:
    streamed, what is held is a piece of calls, a piece of marks and the rules' bounded state."""
    journal = (json.loads(call) for piece in calls for call in piece["call"].to_pylist())
    marks = replay(journal, topics, rows)  # type: ignore[arg-type]
    while chunk := list(islice(marks, JOURNAL_CALLS)):
        first, n, rule = zip(*chunk, strict=True)
        yield pa.table([pa.array([f >> ROW_BITS for f in first], pa.int64()), pa.array(first, pa.int64()),
                        pa.array(n, pa.int64()), pa.array(rule, pa.string())], schema=MARKS_SCHEMA)  # fmt: skip


def marks_of(table: pa.Table | pa.RecordBatch) -> Marks:
    """The (first ROW, rows, rule) marks of a :data:`MARKS_SCHEMA` table."""
    return list(zip(*(table[c].to_pylist() for c in ("first", "rows", "rule")), strict=True))


def finish_piece(name: str, piece: pa.Table, settled: Settled) -> pa.Table:
    """A task's piece of table ``name`` with final connection ids, named topics and aborted marks, in
    the schema the local engine writes (hidden columns other than ``BROKER_SEEN``, ``BROKER_SEEN_TS`` dropped)."""
    topics = settled.topics
    if "connection_id" in piece.column_names:
        piece = piece.set_column(piece.column_names.index("connection_id"), "connection_id",
                                 connection_ids(piece["connection_id"], settled.opened))  # fmt: skip
    if ROW in piece.column_names:
        piece = _marked(piece, settled.aborted)
    if TOPIC_ID in piece.column_names:
        ids = piece[TOPIC_ID]
        if ids.null_count < len(ids):
            known = pa.array(list(topics), pa.string())
            named = pa.array(list(topics.values()), pa.string()).take(pc.index_in(ids, value_set=known))
            topic = pc.coalesce(piece["topic"].cast(pa.string()), named)
            piece = piece.set_column(piece.column_names.index("topic"), "topic", pc.dictionary_encode(topic))
            if "topic_id" in piece.column_names:
                piece = piece.set_column(piece.column_names.index("topic_id"), "topic_id",
                                         pc.coalesce(piece["topic_id"], ids))  # fmt: skip
        piece = piece.drop_columns([TOPIC_ID])
    finished = with_pandas_metadata(name, piece.select([column for column, _ in TABLES[name]]))
    if BROKER_SEEN in piece.column_names:
        for hidden in (BROKER_SEEN_TS, BROKER_SEEN):
            finished = finished.append_column(hidden, piece[hidden])
    return finished


def _marked(piece: pa.Table, marks: Marks | TaskMarks) -> pa.Table:
    """Records rows (numbered by ``ROW``) in the marked ranges: aborted, by the mark's rule
    (:func:`~kdissect.tables.transactions.marked`). A piece's rows are one task's."""
    if not piece.num_rows:
        return piece
    if not isinstance(marks, list):
        numbers = piece[ROW]
        marks = marks.hitting(numbers[0].as_py() >> ROW_BITS, pc.min(numbers).as_py(), pc.max(numbers).as_py() + 1)
    if not marks:
        return piece
    hits = marked(piece[ROW].to_numpy(), marks)
    if not hits:
        return piece
    aborted, rules = piece["aborted"].to_pylist(), piece["aborted_by"].to_pylist()
    for i, rule in hits.items():
        aborted[i], rules[i] = True, rule
    piece = piece.set_column(piece.column_names.index("aborted"), "aborted",
                             pa.array(aborted, piece.schema.field("aborted").type))  # fmt: skip
    return piece.set_column(piece.column_names.index("aborted_by"), "aborted_by",
                            pa.array(rules, pa.string()).cast(piece.schema.field("aborted_by").type))  # fmt: skip


def first_brokers(pieces: list[pa.Table]) -> pa.Table:
    """Finished brokers pieces (with ``BROKER_SEEN``) as one table: each broker once, as first seen,
    the first :data:`~kdissect.tables.sink.BROKER_ROWS` as the local engine's sink keeps them."""
    if not pieces:
        return with_pandas_metadata("brokers", arrow_schema("brokers").empty_table())
    table = pa.concat_tables(pieces, promote_options="permissive").combine_chunks()
    order = pc.sort_indices(table, [(BROKER_SEEN_TS, "ascending"), (BROKER_SEEN, "ascending")]).to_pylist()
    keys = list(zip(*(table[c].to_pylist() for c in ("node_id", "host", "port", "rack")), strict=True))
    kept, chosen = set(), []
    for i in order:
        if len(chosen) == BROKER_ROWS:
            break
        if keys[i] not in kept:
            kept.add(keys[i])
            chosen.append(i)
    chosen_rows = table.take(pa.array(chosen, pa.int64())).drop_columns([BROKER_SEEN_TS, BROKER_SEEN])
    return with_pandas_metadata("brokers", chosen_rows)
