"""The run's headline figures from the tables' columns: exchanges by API with latency percentiles
(slowest first: by p99, by max where too few for a p99) and error counts, errors by name,
statuses, anomalies by kind, and the capture's and TCP's own counters.

Works on the sink's columns, so it needs neither pandas nor numpy; it never prints. A JoinGroup
answered MEMBER_ID_REQUIRED (KIP-394's first join) is a normal step: listed, never counted as an error.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import field, fields

from kdissect.analysis.distribution import Latencies
from kdissect.analysis.expected import is_expected
from kdissect.analysis.latency import of_latencies
from kdissect.dataclass import dataclass
from kdissect.sources.shapes import SourceStats
from kdissect.tables.columns import TCP_COUNTERS, cells
from kdissect.tables.sink import Columns
from kdissect.tls import DECRYPTED


@dataclass(frozen=True, slots=True)
class ApiFigures:
    """One API's exchanges: how many, latency percentiles (ms; None without a latency), problems."""

    name: str
    count: int
    p50_ms: float | None
    p90_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    errors: int  # exchanges answered with an error that is not a normal protocol step
    unanswered: int

    @property
    def tail_ms(self) -> float | None:
        """What "slowest first" orders by: the p99, or the max where there are too few latencies for one."""
        return self.p99_ms if self.p99_ms is not None else self.max_ms


@dataclass(frozen=True, slots=True)
class ErrorFigures:
    """Exchanges of one API whose first error is ``error``; ``expected``: a normal protocol step."""

    api: str
    error: str
    count: int
    expected: bool


@dataclass(frozen=True, slots=True)
class AnomalyFigures:
    """One anomaly kind's count and bytes."""

    kind: str
    count: int
    bytes: int  # total length of the anomalies that have one


@dataclass(slots=True)
class Summary:
    """The run's counts, as the terminal summary and the report show them."""

    packets: int = 0
    connections: int = 0
    kafka_connections: int = 0
    tls_connections: int = 0  # encrypted (the TLS stage read them)...
    decrypted_connections: int = 0  # ...and of those, decrypted (from their handshake or by trial)
    exchanges: int = 0
    apis: list[ApiFigures] = field(default_factory=list)  # slowest first (ApiFigures.tail_ms)
    errors: list[ErrorFigures] = field(default_factory=list)  # real errors (most first), then normal steps
    other_statuses: dict[str, int] = field(default_factory=dict)  # statuses besides ok and error, by name
    anomalies: list[AnomalyFigures] = field(default_factory=list)  # by kind
    capture: dict[str, int] = field(default_factory=dict)  # the sources' counters, summed over files
    # The reassembler's counters, both directions summed, and ``stray_segments``: segments of no connection.
    tcp: dict[str, int] = field(default_factory=dict)


class Figures:
    """The headline figures, added up table piece by table piece (``add``) as a run hands them over,
    so a run can write or drop its ``exchanges``, ``connections`` and ``anomalies`` rows as it goes.

    What it keeps does not grow with the exchanges: counts per API, error, status and anomaly kind,
    the TCP counters summed, and each API's latencies in the one mergeable form every face uses
    (:class:`~kdissect.analysis.distribution.Latencies`: exact, or within its stated relative error).
    """

    def __init__(self) -> None:
        self._connections = self._kafka_connections = self._exchanges = 0
        self._tls = self._decrypted = 0
        self._api: dict[str, list[int]] = {}  # API name -> [exchanges, errors, unanswered], first seen first
        self._latency: dict[str, Latencies] = {}  # API name -> latencies (ms) of its answered exchanges
        self._errors: Counter[tuple[str, str]] = Counter()  # (API name, error name) of exchanges in error
        self._statuses: Counter[str] = Counter()
        self._anomalies: dict[str, list[int]] = {}  # kind -> [anomalies, bytes]; a row may stand for several
        self._tcp: Counter[str] = Counter()
        self.seen: set[str] = set()  # the tables any piece came from

    def number_connections(self, places: list[tuple[int, int]], first_row: int = 0) -> None:
        """A Spark task's connection ids are its own: ``places`` (growing as its connections open)
        gives each one's place in capture order, for figures that order or list connections, and
        ``first_row`` the run-wide number of its first records row (``tables.merge.ROW``), for figures
        that keep records (these figures do neither)."""

    def name_topics(self, topics: dict[str, str]) -> None:
        """Topics known by id only when their rows were counted, named at the run's end from
        ``topics`` (id as text -> name; figures that key no topic ignore it)."""

    def add(self, name: str, columns: Columns) -> None:
        """One piece of table ``name`` (tables the figures do not read are ignored)."""
        if name == "exchanges":
            self._add_exchanges(columns)
        elif name == "connections":
            self._connections += len(cells(columns["connection_id"]))
            self._kafka_connections += sum(1 for v in cells(columns["is_kafka"]) if v)
            self._tls += sum(1 for v in cells(columns["encrypted"]) if v)
            self._decrypted += sum(1 for v in cells(columns["decryption"]) if v in DECRYPTED)
            for counter in TCP_COUNTERS:
                for side in ("to_broker", "to_client"):
                    self._tcp[counter] += sum(v or 0 for v in cells(columns[f"tcp_{counter}_{side}"]))
        elif name == "anomalies":
            rows = zip(cells(columns["kind"]), cells(columns["length"]), cells(columns["count"]), strict=True)
            for kind, length, count in rows:
                totals = self._anomalies.setdefault(kind, [0, 0])
                totals[0] += count or 1
                totals[1] += length or 0
        else:
            return
        self.seen.add(name)

    def _add_exchanges(self, ex: Columns) -> None:
        """A piece of the exchanges table in bulk: its outcomes counted by (API, status, error) first (in the
        order first met, so the figures list APIs and errors as row by row would), then each API's latencies
        added at once."""
        names, latencies = cells(ex["api_name"]), cells(ex["latency_ms"])
        for (name, status, error), n in Counter(zip(names, cells(ex["status"]), cells(ex["error_name"]),
                                                    strict=True)).items():  # fmt: skip
            self._outcome(name, status, error, n)
        by_api: dict[str, list[float]] = {}
        for name, value in zip(names, latencies, strict=True):
            if name is not None and value is not None and value == value:  # (None and NaN are not latencies)
                by_api.setdefault(name, []).append(value)
        for name, values in by_api.items():
            self._latency[name].add_many(values)

    def _outcome(self, name: str | None, status: str | None, error: str | None, n: int) -> None:
        """``n`` exchanges of API ``name`` that ended with ``status`` and (first) error ``error``."""
        self._exchanges += n
        self._statuses[status] += n  # type: ignore[index]
        if status == "error":
            self._errors[(str(name), str(error))] += n
        if name is None:
            return
        figures = self._api.get(name)
        if figures is None:
            figures = self._api[name] = [0, 0, 0]
            self._latency[name] = Latencies()
        figures[0] += n
        figures[1] += n if status == "error" and not is_expected(name, error) else 0
        figures[2] += n if status == "unanswered" else 0

    def merge(self, other: Figures) -> None:
        """Add the figures of another part of the run (a Spark task's): every figure here is a count,
        a sum or a multiset of latencies in a mergeable form, so merged parts give the figures of the whole
        (the same as one piece: :class:`~kdissect.analysis.distribution.Latencies` merges by adding counts)."""
        self._connections += other._connections
        self._kafka_connections += other._kafka_connections
        self._tls += other._tls
        self._decrypted += other._decrypted
        self._exchanges += other._exchanges
        for name, (count, errors, unanswered) in other._api.items():
            figures = self._api.get(name)
            if figures is None:
                figures = self._api[name] = [0, 0, 0]
                self._latency[name] = Latencies()
            figures[0] += count
            figures[1] += errors
            figures[2] += unanswered
            self._latency[name].merge(other._latency[name])
        self._errors.update(other._errors)
        self._statuses.update(other._statuses)
        for kind, (count, length) in other._anomalies.items():
            totals = self._anomalies.setdefault(kind, [0, 0])
            totals[0] += count
            totals[1] += length
        self._tcp.update(other._tcp)
        self.seen |= other.seen

    def summary(self, source: SourceStats, stray_segments: int = 0) -> Summary:
        """The figures of everything added, with the sources' counters and the segments the
        reassembler could place in no connection."""
        out = Summary(packets=source.packets, capture={f.name: getattr(source, f.name) for f in fields(SourceStats)})
        if "connections" in self.seen:
            out.connections, out.kafka_connections = self._connections, self._kafka_connections
            out.tls_connections, out.decrypted_connections = self._tls, self._decrypted
            out.tcp = {name: self._tcp[name] for name in TCP_COUNTERS}
        out.tcp["stray_segments"] = stray_segments
        if "exchanges" in self.seen:
            out.exchanges = self._exchanges
            out.apis = sorted(
                (self._api_figures(name) for name in self._api),
                key=lambda a: (-(a.tail_ms if a.tail_ms is not None else -1.0), a.name),
            )
            out.errors = sorted(
                (ErrorFigures(a, e, n, is_expected(a, e)) for (a, e), n in self._errors.items()),
                key=lambda f: (f.expected, -f.count, f.api, f.error),
            )
            other = {k: v for k, v in self._statuses.items() if k not in ("ok", "error")}
            out.other_statuses = dict(sorted(other.items(), key=lambda kv: str(kv[0])))
        out.anomalies = [AnomalyFigures(kind, *self._anomalies[kind]) for kind in sorted(self._anomalies)]
        return out

    def _api_figures(self, name: str) -> ApiFigures:
        p = of_latencies(self._latency[name])
        count, errors, unanswered = self._api[name]
        return ApiFigures(name, count, p.p50, p.p90, p.p99, p.max, errors, unanswered)


def summarize(tables: Mapping[str, Columns], source: SourceStats, stray_segments: int = 0) -> Summary:
    """Figures of the ``exchanges``, ``connections`` and ``anomalies`` tables (those present), with
    the sources' counters and the segments the reassembler could place in no connection."""
    figures = Figures()
    for name, columns in tables.items():
        figures.add(name, columns)
    return figures.summary(source, stray_segments)
