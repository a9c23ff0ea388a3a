"""The cluster's topology (:mod:`.topology`) as mergeable figures, fed the ``metadata_partitions``
table piece by piece, so the report keeps no Metadata rows (every client asks for Metadata again
and again: they grow with the capture).

Kept: per (topic, partition) its newest row (the partition's last known state), at most
:data:`~.bounded.KEY_LIMIT` partitions (:class:`~.bounded.Groups`: the rest are counted, not
listed); and the first :data:`ROW_LIMIT` rows in time order, which leader changes are found in
(exact while a capture has no more). Time order is the answer's time, then the table's capture
order (connection, correlation id, then the row's values), whatever order pieces come in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kdissect.analysis import topology
from kdissect.analysis.bounded import KEY_LIMIT, Groups
from kdissect.analysis.listing import FirstRows, capture_order
from kdissect.analysis.slot_state import SlotState
from kdissect.tables.columns import TABLES, cells
from kdissect.tables.sink import Columns

if TYPE_CHECKING:
    import pandas as pd

ROW_LIMIT = 10_000  # Metadata partition rows kept for the leader changes (the first in time order)
TABLE = "metadata_partitions"
NAMES = tuple(name for name, _ in TABLES[TABLE])
_CONNECTION, _TOPIC, _PARTITION = NAMES.index("connection_id"), NAMES.index("topic"), NAMES.index("partition")


class Newest(SlotState):
    """The newest row of a partition (by its order key), and how many rows described it."""

    __slots__ = ("row", "rows")

    def __init__(self) -> None:
        self.rows = 0
        self.row: tuple | None = None  # (order key, row)

    def add(self, order: tuple, row: tuple) -> None:
        self.rows += 1
        if self.row is None or order > self.row[0]:
            self.row = (order, row)

    def merge(self, other: Newest) -> None:
        self.rows += other.rows
        if other.row is not None and (self.row is None or other.row[0] > self.row[0]):
            self.row = other.row


class TopologyFigures:
    """The newest state of each partition and the first Metadata rows (see the module's docstring)."""

    def __init__(self, limit: int = KEY_LIMIT) -> None:
        self.newest = Groups(Newest, limit)  # by (topic, partition)
        self.first = FirstRows(TABLE, ROW_LIMIT)

    def add(self, columns: Columns) -> None:
        """A piece of ``metadata_partitions`` (a Spark task's connections as their places)."""
        rows = list(zip(*(cells(columns[name]) for name in NAMES), strict=True))
        self.first.add(rows)
        order = capture_order(TABLE)
        for row in rows:
            self.newest.get((row[_TOPIC], row[_PARTITION])).add(order(row), row)

    def merge(self, other: TopologyFigures) -> None:
        self.newest.merge(other.newest)
        self.first.merge(other.first)

    def __eq__(self, other: object) -> bool:
        """The same rows kept (their order keys aside: a Spark task's name connections by place)."""
        return isinstance(other, TopologyFigures) and (self._rows(), self.first) == (other._rows(), other.first)

    def _rows(self) -> tuple:
        def rows(newest: Newest) -> tuple:
            return newest.rows, None if newest.row is None else newest.row[1]

        return {key: rows(n) for key, n in self.newest.groups.items()}, rows(self.newest.other)

    def settle(self, connection: Callable[[object], int]) -> None:
        """A Spark driver's figures, merged from tasks that named connections by place: their ids."""
        self.first.settle(connection)
        for newest in self.newest.groups.values():
            if newest.row is not None and newest.row[1][_CONNECTION] is not None:
                row = newest.row[1]
                newest.row = (newest.row[0], (*row[:_CONNECTION], connection(row[_CONNECTION]), *row[_CONNECTION + 1:]))

    @property
    def partitions(self) -> int:
        """Partitions described (those past the key bound not among them)."""
        return len(self.newest.groups)

    @property
    def not_kept(self) -> int:
        """Metadata rows of the partitions past the key bound."""
        return self.newest.other.rows

    # -- the report's tables ----------------------------------------------------------------
    def newest_rows(self) -> dict[str, pd.DataFrame]:
        """The newest row of each partition kept, as the tables :mod:`.topology` reads (its
        ``partition_health`` and ``unhealthy`` give the report's tables of them)."""
        from kdissect.tables.frames import taken_dataframe

        rows = [newest.row[1] for newest in self.newest.groups.values() if newest.row is not None]
        return {TABLE: taken_dataframe(TABLE, {name: [row[at] for row in rows] for at, name in enumerate(NAMES)})}

    def leader_changes(self) -> pd.DataFrame:
        """:func:`.topology.leader_changes` of the first rows kept."""
        return topology.leader_changes({TABLE: self.first.frame()})
