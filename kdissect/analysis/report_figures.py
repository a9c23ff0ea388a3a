"""The report's figures as one mergeable value: latency by dimension, the client inventory
(:mod:`.client_figures`) and traffic over time (:mod:`.time_figures`). Fed by the same pieces of
table columns as the summary's :class:`~kdissect.analysis.summary.Figures` (``add(name, columns)``),
so a run need not keep the rows they come from, and a Spark task's figures merge on the driver.

What it keeps does not grow with the exchanges: per group of each latency dimension (API, API ×
version, broker, broker × API, client id, client host) one
:class:`~kdissect.analysis.distribution.Latencies`. A dimension keyed by what clients choose (client
ids, client addresses, and broker addresses on hostile input) keeps at most
:data:`~kdissect.analysis.bounded.KEY_LIMIT` keys (:class:`~kdissect.analysis.bounded.Groups`); every
other key's latencies are counted in one :data:`~kdissect.analysis.bounded.OTHER` row that the report
names.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from kdissect.analysis.batch_figures import BatchFigures
from kdissect.analysis.bounded import KEY_LIMIT, OTHER, Groups
from kdissect.analysis.client_figures import ClientFigures
from kdissect.analysis.distribution import EXACT_VALUES, RELATIVE_ERROR, Latencies
from kdissect.analysis.errors import NO_ANSWER
from kdissect.analysis.exchange_figures import ExchangeFigures, ordered, percentile_frame
from kdissect.analysis.frames import ANALYSED_RECORDS
from kdissect.analysis.group_figures import GroupFigures
from kdissect.analysis.journal import EVENT_LIMIT, RECORD_LIMIT, FirstEvents, Journal
from kdissect.analysis.latency import DIMENSIONS, broker_namer
from kdissect.analysis.listing import FirstRows
from kdissect.analysis.placed import namer, renamed
from kdissect.analysis.summary import Figures
from kdissect.analysis.time_figures import TimeFigures
from kdissect.analysis.topology_figures import TopologyFigures
from kdissect.tables.columns import TABLES, cells
from kdissect.tables.sink import BROKER_ROWS, BROKERS_NOT_KEPT, JOINED, Columns

if TYPE_CHECKING:
    import pandas as pd

KEPT_KEYS = (f"A table keeps at most {KEY_LIMIT:,} groups of what clients choose (client ids, client hosts, "
             f"brokers): past that, the rest are counted together in one {OTHER} row.")
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


CLIENT_IDS_LIMIT = 100_000  # distinct client ids counted: past that the overview says "more than"
ANOMALIES_LISTED = 200  # anomaly rows listed (the first in capture order; the report shows as many)
# Tables whose rows these figures keep a bounded part of, by connection (a Spark task's: by place).
PLACED = ("group_events", "metadata_partitions", "anomalies")
# Tables the report reads only through these figures: its run need not keep their rows.
REPORT_FIGURES_ONLY = ("connections", "batches", *JOINED, *PLACED)


_KEY_COLUMNS = sorted({c for key in KEYED.values() for c in key})
_KEY_AT = {dimension: [_KEY_COLUMNS.index(c) for c in key] for dimension, key in KEYED.items()}


class ReportFigures(Figures):
    """The summary's figures and the report's latency tables, added piece by piece and mergeable."""

    def __init__(self, limit: int = KEY_LIMIT, keep_records: bool = False, records: int = RECORD_LIMIT,
                 events: int = EVENT_LIMIT) -> None:  # fmt: skip
        super().__init__()
        # The first ``records`` transactional records and ``events`` transaction events (the transactions
        # section lists them): kept here only for a run that does not keep those tables (a report).
        self.journal = Journal(records) if keep_records else None
        self.txn_events = FirstEvents(events) if keep_records else None
        self.latency = {dimension: Groups(Latencies, limit) for dimension in KEYED}
        # (node, host, port, rack) -> first seen: the first BROKER_ROWS, as the brokers table keeps them
        self.brokers: dict[tuple[object, object, object, object], int | None] = {}
        self.clients = ClientFigures(limit)
        self.time = TimeFigures()
        self.batches = BatchFigures(limit)
        self.exchanges = ExchangeFigures(limit)
        self.groups = GroupFigures(limit)
        self.topology = TopologyFigures(limit)
        self.anomalies = FirstRows("anomalies", ANOMALIES_LISTED)
        self.limit = limit
        self.times: list[int | None] = [None, None, None, None]  # first request, last answer, first and last of both
        self.client_ids: set[str] = set()  # distinct client ids, up to CLIENT_IDS_LIMIT
        self.without_answer = 0  # exchanges without a usable answer

    def add(self, name: str, columns: Columns) -> None:
        super().add(name, columns)
        self.exchanges.add(name, columns)
        if name == "exchanges":
            self._add_latencies(columns)
            self.clients.add_exchanges(columns)
            self.time.add_exchanges(columns)
            self._add_overview(columns)
        elif name == "batches":
            self.batches.add_batches(columns)
        elif name == "records":
            keep = [i for i, flag in enumerate(cells(columns[ANALYSED_RECORDS])) if flag]
            keys = list(zip(cells(columns["connection_id"]), cells(columns["correlation_id"]), strict=True))
            self.exchanges.records_seen((keys[i] for i in keep), keys[-1] if keys else None)
            if self.journal is not None:
                self.journal.add(columns)
                self._forget_record_times()
        elif name == "txn_events" and self.txn_events is not None:
            self.txn_events.add(columns)
        elif name in PLACED:
            self._add_placed(name, columns)
        elif name == "connections":
            self.clients.add_connections(columns)
        elif name == "brokers":
            keys = zip(*(cells(columns[c]) for c in ("node_id", "host", "port", "rack")), strict=True)
            self._see_brokers(zip(keys, cells(columns["first_seen"]), strict=True))

    def _add_placed(self, name: str, columns: Columns) -> None:
        """A piece of a table kept in part, a Spark task's connections given as their places."""
        places = self.exchanges.places
        if places is not None:
            columns = {**columns, "connection_id": [None if conn is None else places[conn]
                                                    for conn in cells(columns["connection_id"])]}  # fmt: skip
        if name == "group_events":
            self.groups.add(columns)
        elif name == "metadata_partitions":
            self.topology.add(columns)
        else:
            self.anomalies.add(zip(*(cells(columns[c]) for c, _ in TABLES["anomalies"]), strict=True))

    def _add_latencies(self, ex: Columns) -> None:
        """Latencies grouped by every key column at once (a piece has few distinct combinations),
        then each group added to each dimension in one step."""
        combined: dict[tuple, list[float]] = {}
        rows = zip(cells(ex["latency_ms"]), *(cells(ex[c]) for c in _KEY_COLUMNS), strict=True)
        for latency, *key in rows:
            if isinstance(latency, int | float) and latency == latency:
                combined.setdefault(tuple(key), []).append(latency)
        for key, latencies in combined.items():
            for dimension, at in _KEY_AT.items():
                self.latency[dimension].get(tuple(key[i] for i in at)).add_many(latencies)

    def _add_overview(self, ex: Columns) -> None:
        requests, answers = cells(ex["request_ts"]), cells(ex["response_ts"])
        known = [t for t in requests if t is not None], [t for t in answers if t is not None]
        both = known[0] + known[1]
        self._merge_times([min(known[0], default=None), max(known[1], default=None), min(both, default=None),
                           max(both, default=None)])  # fmt: skip
        self._see_clients(c for c in cells(ex["client_id"]) if c is not None)
        self.without_answer += sum(1 for status in cells(ex["status"]) if status in NO_ANSWER)

    @property
    def brokers_not_kept(self) -> int:
        """Announcements of brokers past the brokers table's :data:`BROKER_ROWS` (its anomalies' count)."""
        return self._anomalies.get(BROKERS_NOT_KEPT, [0])[0]

    def _see_brokers(self, seen: Iterable[tuple[tuple[object, object, object, object], int | None]]) -> None:
        """Brokers and when each was first seen, kept to the first :data:`BROKER_ROWS` (by that time, then
        key): a merge of many pieces (a Spark driver's) holds no more than the brokers table does."""
        brokers = self.brokers
        for key, ts in seen:
            known = brokers.get(key, ts)
            brokers[key] = ts if known is None else known if ts is None else min(known, ts)
        if len(brokers) > BROKER_ROWS:
            by_time = heapq.nsmallest(BROKER_ROWS, brokers.items(), key=lambda kv: (ordered(kv[1]), _in_order(kv[0])))
            self.brokers = dict(by_time)

    def _merge_times(self, times: list[int | None]) -> None:
        for i, (mine, theirs) in enumerate(zip(self.times, times, strict=True)):
            pick = min if i in (0, 2) else max
            self.times[i] = theirs if mine is None else mine if theirs is None else pick(mine, theirs)

    def _see_clients(self, ids: Iterable[str]) -> None:
        for client_id in ids:
            if len(self.client_ids) >= CLIENT_IDS_LIMIT:
                return
            self.client_ids.add(client_id)

    @property
    def span_s(self) -> float:
        """:func:`kdissect.analysis.throughput.capture_span_s` of the exchanges added."""
        import pandas as pd

        first, last = self.times[2], self.times[3]
        return pd.Timedelta(last - first, unit="ns").total_seconds() if first is not None and last is not None else 0.0

    def _forget_record_times(self) -> None:
        """The request times of records the journal no longer holds, forgotten past twice its limit."""
        if self.journal is not None and self.exchanges.record_times_held > 2 * self.journal.limit:
            self.exchanges.keep_record_times(self.journal.keys())

    def number_connections(self, places: list[tuple[int, int]], first_row: int = 0) -> None:
        self.exchanges.places = places
        if self.journal is not None and self.txn_events is not None:
            self.journal.places = self.txn_events.places = places
            self.journal.first_row = first_row

    def settle(self, connection: Callable[[tuple[int, int]], int], topics: Mapping[str, str],
               marks: list[tuple[int, int, str]] | None = None) -> None:  # fmt: skip
        """A Spark driver's figures, merged from tasks that numbered connections and knew some topics
        by id only: ``connection`` gives a place's connection id (places sort as their ids do),
        ``topics`` the run's topic id -> name, ``marks`` the aborted marks of its records (a Spark
        driver's journal is settled with them; a local run's journal needs no settling)."""
        topic = namer(topics)
        self.exchanges.settle(connection, topic)
        for placed in (self.groups, self.topology, self.anomalies):
            placed.settle(connection)
        if marks is not None and self.journal is not None and self.txn_events is not None:
            self.journal.settle(connection, topic, marks)
            self.txn_events.settle(connection)
        self.batches.partitions = renamed(self.batches.partitions, lambda key: (key[0], topic(key[1]), key[2]))

    def name_topics(self, topics: dict[str, str]) -> None:
        """A local run's figures, whose sink named some topic ids only after handing rows of them
        over: those rows' topics named (its connections are numbered already), its journal's too."""
        self.settle(lambda conn: conn, topics)  # type: ignore[arg-type,return-value]
        if self.journal is not None:
            self.journal.name_topics(namer(topics))

    @property
    def journal_limits(self) -> tuple[int, int]:
        """The transactional records and transaction events a report keeps (the defaults when this
        run keeps those tables whole)."""
        if self.journal is None or self.txn_events is None:
            return RECORD_LIMIT, EVENT_LIMIT
        return self.journal.limit, self.txn_events.kept.limit

    @property
    def counted_only(self) -> tuple[str, ...]:
        """The tables a run may hand to these figures and drop: the report reads them only here."""
        return REPORT_FIGURES_ONLY + (("records", "txn_events") if self.journal is not None else ())

    def merge(self, other: Figures) -> None:
        super().merge(other)
        if isinstance(other, ReportFigures):
            for dimension, groups in other.latency.items():
                self.latency[dimension].merge(groups)
            self._see_brokers(other.brokers.items())
            self.clients.merge(other.clients)
            self.time.merge(other.time)
            self.batches.merge(other.batches)
            self.exchanges.merge(other.exchanges)
            self.groups.merge(other.groups)
            self.topology.merge(other.topology)
            self.anomalies.merge(other.anomalies)
            self._merge_times(other.times)
            self._see_clients(other.client_ids)
            self.without_answer += other.without_answer
            if self.journal is not None and other.journal is not None:
                self.journal.merge(other.journal)
                self._forget_record_times()
            if self.txn_events is not None and other.txn_events is not None:
                self.txn_events.merge(other.txn_events)

    def latency_table(self, dimension: str) -> pd.DataFrame:
        """:func:`kdissect.analysis.latency.latency_by`'s table from the figures: one row per group
        (plus :data:`OTHER` for the keys not kept), slowest first (by p99, by max where too few for a p99)."""
        table = percentile_frame(DIMENSIONS[dimension], self._labelled(dimension), self.latency[dimension].other)
        if dimension == "api_version":
            table["api_version"] = table["api_version"].astype("Int16")
        return table

    def kept_tables(self) -> dict[str, Columns]:
        """The tables the report reads as rows that these figures keep (bounded): the transactional
        records, the transaction events and the request times of those records' exchanges."""
        return {"records": self.journal.records(), "txn_events": self.txn_events.events(),  # type: ignore[union-attr]
                "exchanges": self.record_exchanges()}  # fmt: skip

    def record_exchanges(self) -> Columns:
        """The exchanges table narrowed to what the transactions section reads of it (the request
        times of the records kept, in their order: the same whichever way a run was split), the other
        columns null."""
        self.exchanges.flush()
        held = self.exchanges.record_times
        kept = [(row[1], row[2]) for row in self.journal.rows()] if self.journal is not None else held
        times = {key: held[key] for key in kept if key in held}
        columns: Columns = {name: [None] * len(times) for name, _ in TABLES["exchanges"]}
        columns["connection_id"] = [conn for conn, _ in times]
        columns["correlation_id"] = [corr for _, corr in times]
        columns["request_ts"] = list(times.values())
        return columns

    def answered(self) -> pd.DataFrame:
        """Per API its latencies above zero as runs (``latency_ms``, ``count``), ascending: the
        overview's latency distribution (a folded group's values are its buckets' midpoints)."""
        import pandas as pd

        rows = [(api, value, n) for (api,), latencies in sorted(self.latency["api"].groups.items(), key=str)
                for value, n in latencies.runs() if value > 0]  # fmt: skip
        return pd.DataFrame(rows, columns=["api_name", "latency_ms", "count"])

    def broker_label(self) -> Callable[[object, object], str | None]:
        """What names a broker address as the brokers seen name it (``latency.broker_namer``)."""
        return _broker_namer(self.brokers)

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


def _broker_namer(brokers: Mapping[tuple[object, ...], object]) -> Callable[[object, object], str | None]:
    import pandas as pd

    # the brokers table's capture order (analysis.frames.in_capture_order: by each column, nulls last),
    # whatever order pieces came in: a broker seen with and without its rack is named with it
    rows = sorted(brokers, key=_in_order)
    return broker_namer(pd.DataFrame(rows, columns=["node_id", "host", "port", "rack"]))


def _in_order(broker: tuple[object, ...]) -> tuple:
    """A broker's (node, host, port, rack) as the brokers table's capture order compares them."""
    return ordered(*(None if v is None else str(v) for v in broker))


def figures_of(tables: Mapping[str, pd.DataFrame]) -> ReportFigures:
    """The report's figures of whole tables (what a run's hook would have added piece by piece)."""
    figures = ReportFigures()
    for name in ("exchanges", "partitions", "errors", "request_params", "connections", "brokers", "batches",
                 *PLACED):
        frame = tables[name]
        figures.add(name, {c: _column(frame[c]) for c in frame.columns})
    return figures


def _column(series: pd.Series) -> list:
    """A frame's column as the run hands it over: Python values, None for null, times in ns."""
    import pandas as pd

    if isinstance(series.dtype, pd.DatetimeTZDtype) or str(series.dtype).startswith("datetime64"):
        ns = series.dt.as_unit("ns").array.asi8.tolist()
        return [v if known else None for v, known in zip(ns, series.notna().tolist(), strict=True)]
    return series.astype(object).where(series.notna(), None).tolist()
