"""Which records belong to aborted transactions: the one place the rules live.

The records table's ``aborted`` column is true, and ``aborted_by`` names the rule, when:

- ``aborted_transactions``: a Fetch response lists the producer among the partition's aborted
  transactions from an offset at or before the batch (the broker's own word; decided per batch);
- ``abort_marker``: the capture holds the ABORT control record of the same producer id and epoch
  on the same topic-partition, at a higher offset, with no marker of that producer in between (a
  fetched batch, or a produced one whose offsets the Produce response gave; a broker whose list
  is empty or missing still writes the marker);
- ``end_txn``: the producer (id and epoch) sent EndTxn with ``committed`` false, and no EndTxn in
  between (a produced batch; a producer has one open transaction at a time).

A record both rules mark is named by ``abort_marker`` (the log's own word).

An outcome usually comes after its records (the marker follows the data in the log, EndTxn follows
the Produce requests), so batches of open transactions are remembered (row ranges, a bounded
number) and their rows marked when the outcome is seen. Rows spilled to a file before that are
not changed; :class:`~kdissect.tables.sink.TableSink` holds records back while a transaction is
open, within a bound.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any

from kdissect.decoders.records import Batch
from kdissect.lazy import lazy_module
from kdissect.tables.rows import TableRows

np = lazy_module("numpy")

BROKER_LIST = "aborted_transactions"
ABORT_MARKER = "abort_marker"
END_TXN = "end_txn"
_ABORT, _COMMIT = 0, 1  # control record types of transaction markers
MAX_OPEN_BATCHES = 1 << 16  # remembered batches of transactions whose outcome is not yet seen


def listed_as_aborted(batch: Batch, aborted: list[tuple[int, int]]) -> bool:
    """The broker's rule: a transactional batch of a producer its aborted-transactions list names,
    from a first offset at or before the batch's end."""
    return batch.is_transactional and any(
        pid == batch.producer_id and first <= batch.last_offset for pid, first in aborted
    )


class TransactionMarks:
    """Open transactions' batches (as records-table row ranges) and the marks decided for them."""

    def __init__(self, topic_names: Mapping[uuid.UUID, str] | None = None) -> None:
        # Topic ids (Fetch v13+) named by the Metadata seen so far, so a partition is one key whichever
        # way a message names its topic.
        self.topic_names = topic_names if topic_names is not None else {}
        # key -> [(first row, rows, last offset)]: ("produce", pid, epoch), ("log", pid, epoch, topic, partition)
        self._open: OrderedDict[tuple, list[tuple[int, int, int | None]]] = OrderedDict()
        self._batches = 0
        self.marks: list[tuple[int, int, str]] = []  # (first row, rows, rule) not yet written to the table
        # Every call, in order, when a later pass must decide across several of these (the Spark
        # engine's tasks each see some connections: see :func:`replay`).
        self.journal: list[tuple] | None = None

    @property
    def open(self) -> bool:
        return bool(self._open)

    def batch(self, direction: str, topic: str | None, topic_id: uuid.UUID | None, partition: int | None,
              batch: Batch, last_offset: int | None, row: int, n: int) -> None:
        """A transactional data batch whose ``n`` rows start at records-table row ``row`` (counting
        spilled rows), its outcome unknown yet; ``last_offset``: its last record's log offset, if known."""
        self.opened(direction, topic, topic_id, partition, batch.producer_id, batch.producer_epoch, last_offset, row, n)

    def opened(self, direction: str, topic: str | None, topic_id: uuid.UUID | None, partition: int | None,
               producer_id: int, producer_epoch: int, last_offset: int | None, row: int, n: int) -> None:
        """:meth:`batch` with the batch's producer given by value."""
        if self.journal is not None:
            self.journal.append(("opened", direction, topic, topic_id, partition, producer_id, producer_epoch,
                                 last_offset, row, n))  # fmt: skip
        keys = [("produce", producer_id, producer_epoch)] if direction == "produce" else []
        if last_offset is not None:
            keys.append(("log", producer_id, producer_epoch, self._topic(topic, topic_id), partition))
        for key in keys:
            self._open.setdefault(key, []).append((row, n, last_offset))
            self._open.move_to_end(key)
            self._batches += 1
        while self._batches > MAX_OPEN_BATCHES:  # forget the oldest open transaction
            _, dropped = self._open.popitem(last=False)
            self._batches -= len(dropped)

    def control(self, topic: str | None, topic_id: uuid.UUID | None, partition: int | None, batch: Batch) -> None:
        """A fetched control batch: its ABORT or COMMIT markers settle that producer's earlier batches."""
        markers = [(m.type, m.offset) for m in batch.control if m.type in (_ABORT, _COMMIT)]
        self.markers(topic, topic_id, partition, batch.producer_id, batch.producer_epoch, markers)

    def markers(self, topic: str | None, topic_id: uuid.UUID | None, partition: int | None, producer_id: int,
                producer_epoch: int, markers: list[tuple[int, int]]) -> None:
        """:meth:`control` with the batch's producer and (type, offset) markers given by value."""
        if self.journal is not None:
            self.journal.append(("markers", topic, topic_id, partition, producer_id, producer_epoch, markers))
        key = ("log", producer_id, producer_epoch, self._topic(topic, topic_id), partition)
        for kind, offset in markers:
            self._settle(key, kind == _ABORT, ABORT_MARKER, before=offset)

    def _topic(self, topic: str | None, topic_id: uuid.UUID | None) -> Any:
        return topic or self.topic_names.get(topic_id) or topic_id  # type: ignore[arg-type]

    def end_txn(self, producer_id: int, producer_epoch: int, committed: bool) -> None:
        if self.journal is not None:
            self.journal.append(("end_txn", producer_id, producer_epoch, committed))
        self._settle(("produce", producer_id, producer_epoch), not committed, END_TXN, before=None)

    def _settle(self, key: tuple, aborted: bool, rule: str, before: int | None) -> None:
        batches = self._open.get(key)
        if not batches:
            return
        keep = [b for b in batches if before is not None and (b[2] is None or b[2] >= before)]
        for row, n, last in batches:
            if aborted and (before is None or (last is not None and last < before)):
                self.marks.append((row, n, rule))
        self._batches -= len(batches) - len(keep)
        if keep:
            self._open[key] = keep
        else:
            del self._open[key]

    def apply(self, rows: TableRows, first_row: int) -> None:
        """Write the marks into ``rows``, whose first row is records-table row ``first_row``."""
        if not self.marks:
            return
        aborted, rules = rows.listed("aborted"), rows.listed("aborted_by")
        for row, n, rule in sorted(self.marks, key=lambda m: m[2] == ABORT_MARKER):  # the marker's name wins
            start = row - first_row
            if start < 0:  # already spilled to a file (see the module docstring)
                continue
            aborted[start : start + n] = [True] * n
            rules[start : start + n] = [rule] * n
        self.marks.clear()


_FILTER_EVERY = 4096  # marks a replay for some rows only holds before dropping those that hit none


def settled_marks(journal: Iterable[tuple], topic_names: Mapping[uuid.UUID, str]) -> Iterator[tuple[int, int, str]]:
    """The marks the rules give for calls journalled apart and merged in capture order (rows as the
    journals numbered them), topic ids named by ``topic_names``: (first row, rows, rule), each handed
    on as soon as its outcome is seen, so what is held is the rules' own bounded state only."""
    marks = TransactionMarks(topic_names)
    calls = {"opened": marks.opened, "markers": marks.markers, "end_txn": marks.end_txn}
    for call in journal:
        calls[call[0]](*call[1:])
        if marks.marks:
            yield from marks.marks
            marks.marks.clear()


def replay(journal: Iterable[tuple], topic_names: Mapping[uuid.UUID, str],
           rows: np.ndarray | None = None) -> Iterator[tuple[int, int, str]]:  # fmt: skip
    """:func:`settled_marks`; with ``rows`` (ascending), only the marks that hit one of them, held
    :data:`_FILTER_EVERY` at a time: bounded whatever the number of transactions."""
    marks = settled_marks(journal, topic_names)
    if rows is None:
        yield from marks
        return
    while chunk := list(islice(marks, _FILTER_EVERY)):
        yield from hitting(chunk, rows)


def hitting(marks: list[tuple[int, int, str]], rows: np.ndarray) -> list[tuple[int, int, str]]:
    """The marks whose range holds one of ``rows`` (ascending)."""
    if not marks:
        return marks
    starts = np.fromiter((m[0] for m in marks), np.int64, len(marks))
    ends = starts + np.fromiter((m[1] for m in marks), np.int64, len(marks))
    hit = np.searchsorted(rows, starts) < np.searchsorted(rows, ends)
    return [m for m, keep in zip(marks, hit.tolist(), strict=True) if keep]


def marked(rows: Sequence[int] | np.ndarray, marks: Iterable[tuple[int, int, str]]) -> dict[int, str]:
    """Of records numbered ``rows`` (as :func:`replay`'s marks number them), those in a marked range:
    index in ``rows`` -> the mark's rule (the marker's name wins where rules overlap, as in
    :meth:`TransactionMarks.apply`)."""
    numbers = np.asarray(rows, np.int64)
    if not len(numbers):
        return {}
    order = np.argsort(numbers, kind="stable")
    ascending = numbers[order]
    lo, hi = int(ascending[0]), int(ascending[-1]) + 1
    out: dict[int, str] = {}
    for start, n, rule in sorted((m for m in marks if m[0] < hi and m[0] + m[1] > lo),
                                 key=lambda m: m[2] == ABORT_MARKER):  # fmt: skip
        first, end = np.searchsorted(ascending, [start, start + n])
        out.update(dict.fromkeys(order[first:end].tolist(), rule))
    return out
