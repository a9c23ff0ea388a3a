"""The transaction journal the report reads: the transactional records, bounded and mergeable.

The transactions section decides each transactional record's outcome from the markers, the abort
rules and the EndTxn calls of the whole capture (:mod:`.transactions`), so its records cannot be
counted and dropped as they come. The journal keeps them, but only the columns that section reads
(no keys, values or headers) and at most :data:`RECORD_LIMIT` of them: those first in capture order
(timestamp, connection, correlation id, direction, topic, partition, offset). That choice does not
depend on how a run was split or in which order pieces merged (a :class:`~.listing.Listing`). The
records past the limit are counted per direction and topic, so the section's counts still add up.

Below the limit the section is exactly the pandas one of the records table. Past it, the kept
records' outcomes are decided by the kept markers only.
"""

from __future__ import annotations

from kdissect.analysis.exchange_figures import ordered
from kdissect.analysis.frames import ANALYSED_RECORDS
from kdissect.analysis.listing import Listing
from kdissect.tables.columns import TABLES, cells
from kdissect.tables.sink import Columns

RECORD_LIMIT = 100_000  # transactional records the journal keeps (the first in capture order)
# The records columns the transactions section reads (and sorts by); the others stay null.
JOURNAL_COLUMNS = ("timestamp", "connection_id", "correlation_id", "direction", "topic", "partition", "offset",
                   "is_control", "control_type", "producer_id", "producer_epoch", ANALYSED_RECORDS, "aborted",
                   "aborted_by")  # fmt: skip
_ORDER = 7  # the first JOURNAL_COLUMNS, in order: the capture order of a record


class Journal:
    """The first :data:`RECORD_LIMIT` transactional records in capture order, and how many others
    data records there were per (direction, topic)."""

    __slots__ = ("kept", "limit", "total")

    def __init__(self, limit: int | None = None) -> None:
        self.limit = RECORD_LIMIT if limit is None else limit
        self.kept = Listing(self.limit)
        self.total: dict[tuple, int] = {}  # data records offered per (direction, topic)

    def add(self, columns: Columns) -> None:
        """A piece of the records table: its transactional rows kept (or counted)."""
        flags = cells(columns[ANALYSED_RECORDS])
        keep = [i for i, flag in enumerate(flags) if flag]
        if not keep:
            return
        values = [cells(columns[c]) for c in JOURNAL_COLUMNS]
        for i in keep:
            row = tuple(v[i] for v in values)
            if not row[7]:  # a data record (markers are not listed)
                self.total[(row[3], row[4])] = self.total.get((row[3], row[4]), 0) + 1
            self.kept.add(ordered(*(None if v is None else v if isinstance(v, int) else str(v)
                                    for v in row[:_ORDER])), row)  # fmt: skip

    def merge(self, other: Journal) -> None:
        self.kept.merge(other.kept)
        for key, n in other.total.items():
            self.total[key] = self.total.get(key, 0) + n

    def records(self) -> Columns:
        """The kept records as the records table's columns (those the journal does not keep null)."""
        rows = self.kept.rows()
        columns: Columns = {name: [None] * len(rows) for name, _ in TABLES["records"]}
        for at, name in enumerate(JOURNAL_COLUMNS):
            columns[name] = [row[at] for row in rows]
        return columns

    def keys(self) -> set[tuple]:
        """The (connection id, correlation id) of the records kept."""
        return {(row[1], row[2]) for row in self.kept.rows()}

    def not_kept(self) -> dict[tuple, int]:
        """Per (direction, topic), the data records offered past the limit (none below it)."""
        kept: dict[tuple, int] = {}
        for row in self.kept.rows():
            if not row[7]:
                kept[(row[3], row[4])] = kept.get((row[3], row[4]), 0) + 1
        return {key: n - kept.get(key, 0) for key, n in sorted(self.total.items(), key=lambda kv: ordered(*kv[0]))
                if n > kept.get(key, 0)}  # fmt: skip

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Journal) and (self.kept, self.total) == (other.kept, other.total)


EVENT_LIMIT = 10_000  # transaction events (InitProducerId … EndTxn) kept: the first in capture order


class FirstEvents:
    """The first :data:`EVENT_LIMIT` rows of ``txn_events`` by (request time, connection, correlation
    id): the Transactions table walks them in that order, so it lists the transactions they begin
    exactly; ``kept.total`` counts every event offered."""

    __slots__ = ("kept", "names")

    def __init__(self, limit: int | None = None) -> None:
        self.kept = Listing(EVENT_LIMIT if limit is None else limit)
        self.names = [name for name, _ in TABLES["txn_events"]]

    def add(self, columns: Columns) -> None:
        values = [cells(columns[name]) for name in self.names]
        for row in zip(*values, strict=True):
            self.kept.add(ordered(row[3], row[0], row[1]), row)

    def merge(self, other: FirstEvents) -> None:
        self.kept.merge(other.kept)

    def events(self) -> Columns:
        """The kept events as the ``txn_events`` table's columns."""
        rows = self.kept.rows()
        return {name: [row[at] for row in rows] for at, name in enumerate(self.names)}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FirstEvents) and self.kept == other.kept
