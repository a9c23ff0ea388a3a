"""The report's latency figures as one mergeable value, fed by the same pieces of table columns as
the summary's :class:`~kdissect.analysis.summary.Figures` (``add(name, columns)``), so a run never
needs the exchanges' rows to show them and a Spark task's figures merge on the driver.

What it keeps does not grow with the exchanges: per group of each latency dimension (API, API ×
version, broker, broker × API, client id, client host) one
:class:`~kdissect.analysis.distribution.Latencies`. A dimension keyed by what clients choose (client
ids, client addresses, and broker addresses on hostile input) keeps at most :data:`KEY_LIMIT` keys:
those whose CRC-32 is smallest, a choice that does not depend on the order pieces come in or how a
run was split; every other key's latencies are counted in one :data:`OTHER` row that the report names.
"""

from __future__ import annotations

import heapq
import zlib
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import TYPE_CHECKING

from kdissect.analysis.distribution import EXACT_VALUES, RELATIVE_ERROR, Latencies
from kdissect.analysis.latency import DIMENSIONS, PERCENTILE_COLUMNS, broker_namer, of_latencies
from kdissect.analysis.summary import Figures
from kdissect.tables.columns import cells
from kdissect.tables.sink import Columns

if TYPE_CHECKING:
    import pandas as pd

KEY_LIMIT = 10_000  # groups kept per dimension; the rest are one OTHER row
OTHER = "(other)"
KEPT_KEYS = (f"A table keeps at most {KEY_LIMIT:,} groups (client ids, client hosts, brokers): past that, "
             f"the rest are counted together in one {OTHER} row.")
PERCENTILE_FORM = (f"percentiles are exact while a group has at most {EXACT_VALUES} distinct latencies, "
                   f"within {RELATIVE_ERROR:.1%} past that")
# The dimensions this value computes, by the exchange columns that key them (broker: its address,
# named after the run from the brokers table, as kdissect.analysis.latency.broker_labels names it).
KEYED = {
    "api": ("api_name",),
    "api_version": ("api_name", "api_version"),
    "broker": ("broker_ip", "broker_port"),
    "broker_api": ("broker_ip", "broker_port", "api_name"),
    "client_id": ("client_id",),
    "client_host": ("client_ip",),
}


def _rank(key: Hashable) -> tuple[int, str]:
    """Which keys a bounded dimension keeps (the smallest): the same in every process and piece."""
    text = repr(key)
    return zlib.crc32(text.encode("utf-8", "backslashreplace")), text


class _Kept:
    """A kept key in a heap whose top is the key to evict first (the largest rank)."""

    __slots__ = ("key", "rank")

    def __init__(self, key: Hashable) -> None:
        self.rank, self.key = _rank(key), key

    def __lt__(self, other: _Kept) -> bool:
        return self.rank > other.rank


class Groups:
    """Latencies per key, at most ``limit`` keys (the smallest :func:`_rank`), the rest in ``other``."""

    __slots__ = ("_heap", "groups", "limit", "other")

    def __init__(self, limit: int = KEY_LIMIT) -> None:
        self.limit = limit
        self.groups: dict[Hashable, Latencies] = {}
        self.other = Latencies()
        self._heap: list[_Kept] = []

    def get(self, key: Hashable) -> Latencies:
        """The latencies of ``key`` (``other``'s when it is not kept)."""
        found = self.groups.get(key)
        if found is not None:
            return found
        kept = _Kept(key)
        if len(self.groups) >= self.limit:
            if not self._heap or kept.rank >= self._heap[0].rank:
                return self.other
            evicted = heapq.heapreplace(self._heap, kept)
            self.other.merge(self.groups.pop(evicted.key))
        else:
            heapq.heappush(self._heap, kept)
        found = self.groups[key] = Latencies()
        return found

    def merge(self, other: Groups) -> None:
        for key, latencies in other.groups.items():
            self.get(key).merge(latencies)
        self.other.merge(other.other)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Groups) and (self.groups, self.other) == (other.groups, other.other)

    def __getstate__(self) -> tuple:
        return self.limit, self.groups, self.other

    def __setstate__(self, state: tuple) -> None:
        self.limit, self.groups, self.other = state
        self._heap = [_Kept(key) for key in self.groups]
        heapq.heapify(self._heap)


class ReportFigures(Figures):
    """The summary's figures and the report's latency tables, added piece by piece and mergeable."""

    def __init__(self, limit: int = KEY_LIMIT) -> None:
        super().__init__()
        self.latency = {dimension: Groups(limit) for dimension in KEYED}
        self.brokers: dict[tuple[object, object, object, object], None] = {}  # (node, host, port, rack) seen

    def add(self, name: str, columns: Columns) -> None:
        super().add(name, columns)
        if name == "exchanges":
            self._add_latencies(columns)
        elif name == "brokers":
            rows = zip(*(cells(columns[c]) for c in ("node_id", "host", "port", "rack")), strict=True)
            self.brokers.update(dict.fromkeys(rows))

    def _add_latencies(self, ex: Columns) -> None:
        names = sorted({c for key in KEYED.values() for c in key})
        values = {c: cells(ex[c]) for c in names}
        for i, latency in enumerate(cells(ex["latency_ms"])):
            if latency is None or latency != latency:
                continue
            for dimension, key in KEYED.items():
                self.latency[dimension].get(tuple(values[c][i] for c in key)).add(latency)

    def merge(self, other: Figures) -> None:
        super().merge(other)
        if isinstance(other, ReportFigures):
            for dimension, groups in other.latency.items():
                self.latency[dimension].merge(groups)
            self.brokers.update(other.brokers)

    def latency_table(self, dimension: str) -> pd.DataFrame:
        """:func:`kdissect.analysis.latency.latency_by`'s table from the figures: one row per group
        (plus :data:`OTHER` for the keys not kept), slowest first (by p99, by max where too few for a p99)."""
        import pandas as pd

        by = DIMENSIONS[dimension]
        rows = [(*key, *_figures(latencies)) for key, latencies in self._labelled(dimension)]
        table = pd.DataFrame(rows, columns=[*by, *PERCENTILE_COLUMNS])
        table[PERCENTILE_COLUMNS[1:]] = table[PERCENTILE_COLUMNS[1:]].astype("float64")  # None: NaN, as pandas
        if dimension == "api_version":
            table["api_version"] = table["api_version"].astype("Int16")
        table = table.sort_values([*by], key=lambda c: c.astype(str), kind="stable", ignore_index=True)
        tail = table["p99"].fillna(table["max"])
        order = table.assign(_tail=tail).sort_values(["_tail", "count"], ascending=False, na_position="last",
                                                     kind="stable").index  # fmt: skip
        table = table.loc[order].reset_index(drop=True)
        other = self.latency[dimension].other
        if other.count:
            table.loc[len(table)] = [OTHER, *[None] * (len(by) - 1), *_figures(other)]
        return table

    def _labelled(self, dimension: str) -> Iterator[tuple[tuple, Latencies]]:
        """Each group's key as the table shows it (a broker address named by the cluster), groups
        that name the same broker merged."""
        groups = self.latency[dimension].groups
        if "broker" not in DIMENSIONS[dimension]:
            yield from groups.items()
            return
        label = _broker_namer(self.brokers)
        merged: dict[tuple, Latencies] = {}
        for (ip, port, *rest), latencies in groups.items():
            merged.setdefault((label(ip, port), *rest), Latencies()).merge(latencies)
        yield from merged.items()


def _figures(latencies: Latencies) -> list[float | int | None]:
    p = of_latencies(latencies)
    return [p.count, p.p50, p.p90, p.p99, p.p999, p.max]


def _broker_namer(brokers: dict[tuple[object, object, object, object], None]) -> Callable[[object, object], str | None]:
    import pandas as pd

    return broker_namer(pd.DataFrame(list(brokers), columns=["node_id", "host", "port", "rack"]))


def figures_of(tables: Mapping[str, pd.DataFrame]) -> ReportFigures:
    """The report's figures of whole tables (what a run's hook would have added piece by piece)."""
    figures = ReportFigures()
    for name in ("exchanges", "brokers"):
        frame = tables[name]
        figures.add(name, {c: frame[c].astype(object).where(frame[c].notna(), None).tolist() for c in frame.columns})
    return figures
