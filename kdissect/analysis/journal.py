"""The transaction journal the report reads: the transactional records, bounded and mergeable.

The transactions section decides each transactional record's outcome from the markers, the abort
rules and the EndTxn calls of the whole capture (:mod:`.transactions`), so its records cannot be
counted and dropped as they come. The journal keeps them, but only the columns that section reads
(no keys, values or headers) and at most ``limit`` of them (:data:`RECORD_LIMIT` unless
``Options.journal_records`` says otherwise): those first in capture order (timestamp, connection,
correlation id, direction, topic, partition, offset). That choice does not depend on how a run was
split or in which order pieces merged. The records past the limit are counted per direction and
topic, so the section's counts still add up.

A Spark task decodes some connections only and cannot settle three things of its records: their
connection ids, the names of topics it knows by id only, and the aborted marks other tasks' calls
decide (:mod:`kdissect.tables.merge`). Its journal holds each connection's place in capture order
(which orders records as the final ids do), the topic id, and each record's run-wide row number,
and the driver settles them (:meth:`Journal.settle`). A topic's name orders the records of one
answer only (the order's first four values are one exchange's, which one task decodes), so the
journal keeps whole answers: the first ones holding the first ``limit`` records, cut to ``limit``
once named.

Below the limit the section is exactly the pandas one of the records table. Past it, the kept
records' outcomes are decided by the kept markers only.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable

from kdissect.analysis.exchange_figures import ordered
from kdissect.analysis.frames import ANALYSED_RECORDS
from kdissect.analysis.listing import Listing
from kdissect.analysis.placed import topic_key
from kdissect.lazy import lazy_module
from kdissect.tables.columns import TABLES, cells
from kdissect.tables.sink import Columns
from kdissect.tables.transactions import marked

np = lazy_module("numpy")

# The records columns the transactions section reads (and sorts by); the others stay null.
JOURNAL_COLUMNS = ("timestamp", "connection_id", "correlation_id", "direction", "topic", "partition", "offset",
                   "is_control", "control_type", "producer_id", "producer_epoch", ANALYSED_RECORDS, "aborted",
                   "aborted_by")  # fmt: skip
_ANSWER, _ORDER = 4, 7  # the first JOURNAL_COLUMNS, in order: one answer's records; a record's capture order
_CONNECTION, _TOPIC, _ABORTED, _RULE = 1, 4, 12, 13
_ROW = len(JOURNAL_COLUMNS)  # a Spark task's rows end with their run-wide records row number
RECORD_LIMIT = 100_000  # transactional records a report's journal keeps by default
EVENT_LIMIT = 10_000  # transaction events (InitProducerId … EndTxn) it keeps by default


def _order(values: Iterable[object]) -> tuple:
    return ordered(*(None if v is None else v if isinstance(v, int | tuple) else str(v) for v in values))


class _Answer:
    """The kept records of one answer (one connection, correlation id and direction at one record
    time), in a heap whose top is the answer to drop first (the last in capture order)."""

    __slots__ = ("key", "rows")

    def __init__(self, key: tuple, rows: list[tuple]) -> None:
        self.key, self.rows = key, rows

    def __lt__(self, other: _Answer) -> bool:
        return self.key > other.key

    def __reduce__(self) -> tuple:
        return _Answer, (self.key, self.rows)


class Journal:
    """The first ``limit`` transactional records in capture order (the answers holding them), and
    how many data records there were per (direction, topic)."""

    __slots__ = ("_answers", "_heap", "first_row", "held", "limit", "places", "seen", "total")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._answers: dict[tuple, _Answer] = {}  # by its key
        self._heap: list[_Answer] = []
        self.held = 0  # records held, all answers together
        self.total: dict[tuple, int] = {}  # data records offered per (direction, topic)
        # A Spark task's: its connections' places (engines.partition) and its first records row's number.
        self.places: list[tuple[int, int]] | None = None
        self.first_row = 0
        self.seen = 0  # records rows offered (their numbers, in a Spark task)

    def add(self, columns: Columns) -> None:
        """A piece of the records table: its transactional rows kept (or counted)."""
        flags = cells(columns[ANALYSED_RECORDS])
        first, self.seen = self.seen, self.seen + len(flags)
        keep = [i for i, flag in enumerate(flags) if flag]
        if not keep:
            return
        values = [cells(columns[c]) for c in JOURNAL_COLUMNS]
        ids = cells(columns["_topic_id"]) if "_topic_id" in columns else [None] * len(flags)
        for i in keep:
            row = tuple(v[i] for v in values)
            if self.places is not None:  # a Spark task's: placed, its topic id kept, numbered
                conn = row[_CONNECTION]
                row = (row[0], None if conn is None else self.places[conn], *row[2:_TOPIC],  # type: ignore[index]
                       topic_key(row[_TOPIC], ids[i]), *row[_TOPIC + 1 :], self.first_row + first + i)  # fmt: skip
            elif row[_TOPIC] is None and ids[i] is not None:  # a local run's topic not named yet: its id kept
                row = _with_topic(row, topic_key(None, ids[i]))
            if not row[7]:  # a data record (markers are not listed)
                self.total[(row[3], row[4])] = self.total.get((row[3], row[4]), 0) + 1
            self._offer(_order(row[:_ANSWER]), [row])

    def _offer(self, key: tuple, rows: list[tuple]) -> None:
        if self.held >= self.limit and self._heap and key > self._heap[0].key:
            return
        answer = self._answers.get(key)
        if answer is None:
            answer = self._answers[key] = _Answer(key, [])
            heapq.heappush(self._heap, answer)
        answer.rows.extend(rows)
        self.held += len(rows)
        while self._heap and self.held - len(self._heap[0].rows) >= self.limit:  # the records before it suffice
            dropped = heapq.heappop(self._heap)
            del self._answers[dropped.key]
            self.held -= len(dropped.rows)

    def merge(self, other: Journal) -> None:
        for answer in other._heap:
            self._offer(answer.key, answer.rows)
        self.seen += other.seen
        for key, n in other.total.items():
            self.total[key] = self.total.get(key, 0) + n

    def settle(self, connection: Callable[[tuple[int, int]], int], topic: Callable[[object], object],
               marks: list[tuple[int, int, str]]) -> None:  # fmt: skip
        """A Spark driver's journal (merged from tasks') with final connection ids, named topics and
        the aborted marks of the whole run (``tables.merge.Settled``)."""
        rows = [row for answer in self._heap for row in answer.rows]
        hits = marked([row[_ROW] for row in rows], marks)
        answers: dict[tuple, list[tuple]] = {}
        for at, row in enumerate(rows):
            aborted, rule = (True, hits[at]) if at in hits else (row[_ABORTED], row[_RULE])
            conn = row[_CONNECTION]
            row = (row[0], None if conn is None else connection(conn), *row[2:_TOPIC], topic(row[_TOPIC]),
                   *row[_TOPIC + 1 : _ABORTED], aborted, rule)  # fmt: skip
            answers.setdefault(_order(row[:_ANSWER]), []).append(row)
        self._answers, self._heap, self.held = {}, [], 0
        for key, kept in answers.items():
            self._offer(key, kept)
        self._name_totals(topic)

    def name_topics(self, topic: Callable[[object], object]) -> None:
        """A local run's journal, holding records of topics Metadata named only after they were
        handed over (known by id): named as :meth:`settle` names a Spark driver's, by ``topic``."""
        for answer in self._heap:
            answer.rows = [_with_topic(row, topic(row[_TOPIC])) for row in answer.rows]
        self._name_totals(topic)

    def _name_totals(self, topic: Callable[[object], object]) -> None:
        total: dict[tuple, int] = {}
        for (direction, name), n in self.total.items():
            total[(direction, topic(name))] = total.get((direction, topic(name)), 0) + n
        self.total = total

    def numbers(self) -> np.ndarray:
        """A Spark journal's: the run-wide records row numbers of the rows held, ascending (whose
        aborted marks :meth:`settle` needs)."""
        return np.sort(np.fromiter((row[_ROW] for answer in self._heap for row in answer.rows), np.int64))

    def rows(self) -> list[tuple]:
        """The first ``limit`` records kept, in capture order."""
        held = [row for answer in self._heap for row in answer.rows]
        return sorted(held, key=lambda row: _order(row[:_ORDER]))[: self.limit]

    def records(self) -> Columns:
        """The kept records as the records table's columns (those the journal does not keep null)."""
        rows = self.rows()
        columns: Columns = {name: [None] * len(rows) for name, _ in TABLES["records"]}
        for at, name in enumerate(JOURNAL_COLUMNS):
            columns[name] = [row[at] for row in rows]
        return columns

    def keys(self) -> set[tuple]:
        """The (connection id, or in a Spark task its place; correlation id) of the records held."""
        return {(row[1], row[2]) for answer in self._heap for row in answer.rows}

    def not_kept(self) -> dict[tuple, int]:
        """Per (direction, topic), the data records offered past the limit (none below it)."""
        kept: dict[tuple, int] = {}
        for row in self.rows():
            if not row[7]:
                kept[(row[3], row[4])] = kept.get((row[3], row[4]), 0) + 1
        return {key: n - kept.get(key, 0) for key, n in sorted(self.total.items(), key=lambda kv: ordered(*kv[0]))
                if n > kept.get(key, 0)}  # fmt: skip

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Journal) and (self.rows(), self.total) == (other.rows(), other.total)

    def __getstate__(self) -> tuple:
        return self.limit, self.held, self.total, self._heap, self.first_row, self.seen  # (not the task's places)

    def __setstate__(self, state: tuple) -> None:
        self.limit, self.held, self.total, self._heap, self.first_row, self.seen = state
        self._answers = {answer.key: answer for answer in self._heap}
        self.places = None


def _with_topic(row: tuple, topic: object) -> tuple:
    return (*row[:_TOPIC], topic, *row[_TOPIC + 1 :])


class FirstEvents:
    """The first ``limit`` rows of ``txn_events`` (:data:`EVENT_LIMIT` by default) by (request time,
    connection, correlation id): the Transactions table walks them in that order, so it lists the
    transactions they begin exactly; ``kept.total`` counts every event offered. A Spark task's hold
    each connection's place for its id, settled on the driver (as :class:`Journal`'s)."""

    __slots__ = ("kept", "names", "places")

    def __init__(self, limit: int) -> None:
        self.kept = Listing(limit)
        self.names = [name for name, _ in TABLES["txn_events"]]
        self.places: list[tuple[int, int]] | None = None

    def add(self, columns: Columns) -> None:
        values = [cells(columns[name]) for name in self.names]
        for row in zip(*values, strict=True):
            if self.places is not None and row[0] is not None:
                row = (self.places[row[0]], *row[1:])
            self.kept.add(ordered(row[3], row[0], row[1]), row)

    def merge(self, other: FirstEvents) -> None:
        self.kept.merge(other.kept)

    def settle(self, connection: Callable[[tuple[int, int]], int]) -> None:
        """A Spark driver's events (merged from tasks') with final connection ids."""
        self.kept.map_rows(lambda row: row if row[0] is None else (connection(row[0]), *row[1:]))

    def events(self) -> Columns:
        """The kept events as the ``txn_events`` table's columns."""
        rows = self.kept.rows()
        return {name: [row[at] for row in rows] for at, name in enumerate(self.names)}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FirstEvents) and self.kept == other.kept

    def __getstate__(self) -> tuple:
        return self.kept, self.names  # (not the task's places)

    def __setstate__(self, state: tuple) -> None:
        (self.kept, self.names), self.places = state, None
