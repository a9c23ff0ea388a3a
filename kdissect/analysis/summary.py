"""The run's headline figures from the tables' columns: exchanges by API with latency percentiles
(slowest p99 first) and error counts, errors by name, statuses, anomalies by kind, and the
capture's and TCP's own counters.

Works on the sink's columns, so it needs neither pandas nor numpy; it never prints. A JoinGroup
answered MEMBER_ID_REQUIRED (KIP-394's first join) is a normal step: listed, never counted as an error.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from kdissect.analysis.errors import is_expected
from kdissect.analysis.latency import percentiles
from kdissect.sources.shapes import SourceStats
from kdissect.tables.columns import TCP_COUNTERS, cells
from kdissect.tables.sink import Columns


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


@dataclass(frozen=True, slots=True)
class ErrorFigures:
    """Exchanges of one API whose first error is ``error``; ``expected``: a normal protocol step."""

    api: str
    error: str
    count: int
    expected: bool


@dataclass(frozen=True, slots=True)
class AnomalyFigures:
    kind: str
    count: int
    bytes: int  # total length of the anomalies that have one


@dataclass(slots=True)
class Summary:
    packets: int = 0
    connections: int = 0
    kafka_connections: int = 0
    exchanges: int = 0
    apis: list[ApiFigures] = field(default_factory=list)  # slowest p99 first
    errors: list[ErrorFigures] = field(default_factory=list)  # real errors (most first), then normal steps
    other_statuses: dict[str, int] = field(default_factory=dict)  # statuses besides ok and error, by name
    anomalies: list[AnomalyFigures] = field(default_factory=list)  # by kind
    capture: dict[str, int] = field(default_factory=dict)  # the sources' counters, summed over files
    # The reassembler's counters, both directions summed, and ``stray_segments``: segments of no connection.
    tcp: dict[str, int] = field(default_factory=dict)


def summarize(tables: Mapping[str, Columns], source: SourceStats, stray_segments: int = 0) -> Summary:
    """Figures of the ``exchanges``, ``connections`` and ``anomalies`` tables (those present), with
    the sources' counters and the segments the reassembler could place in no connection."""
    ex, conns, an = tables.get("exchanges"), tables.get("connections"), tables.get("anomalies")
    out = Summary(packets=source.packets, capture={f.name: getattr(source, f.name) for f in fields(SourceStats)})
    if conns is not None:
        out.connections = len(cells(conns["connection_id"]))
        out.kafka_connections = sum(1 for v in cells(conns["is_kafka"]) if v)
        out.tcp = {
            name: sum(v or 0 for side in ("to_broker", "to_client") for v in cells(conns[f"tcp_{name}_{side}"]))
            for name in TCP_COUNTERS
        }
    out.tcp["stray_segments"] = stray_segments
    if ex is not None:
        out.exchanges = len(cells(ex["status"]))
        out.apis, out.errors, out.other_statuses = _by_api(ex)
    if an is not None:
        kinds: dict[str, list[int]] = {}  # kind -> [anomalies, bytes]; a row may stand for several (``count``)
        for kind, length, count in zip(cells(an["kind"]), cells(an["length"]), cells(an["count"]), strict=True):
            totals = kinds.setdefault(kind, [0, 0])
            totals[0] += count or 1
            totals[1] += length or 0
        out.anomalies = [AnomalyFigures(kind, *kinds[kind]) for kind in sorted(kinds)]
    return out


def _by_api(ex: Columns) -> tuple[list[ApiFigures], list[ErrorFigures], dict[str, int]]:
    statuses, names, errors = cells(ex["status"]), cells(ex["api_name"]), cells(ex["error_name"])
    by_api: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        if name is not None:
            by_api.setdefault(name, []).append(i)
    latency = cells(ex["latency_ms"])
    apis = []
    for name, rows in by_api.items():
        p = percentiles(latency[i] for i in rows)
        failed = sum(1 for i in rows if statuses[i] == "error" and not is_expected(name, errors[i]))
        unanswered = sum(1 for i in rows if statuses[i] == "unanswered")
        apis.append(ApiFigures(name, len(rows), p.p50, p.p90, p.p99, p.max, failed, unanswered))
    apis.sort(key=lambda a: (-(a.p99_ms if a.p99_ms is not None else -1.0), a.name))
    by_error = Counter((str(names[i]), str(errors[i])) for i, s in enumerate(statuses) if s == "error")
    failures = sorted(
        (ErrorFigures(a, e, n, is_expected(a, e)) for (a, e), n in by_error.items()),
        key=lambda f: (f.expected, -f.count, f.api, f.error),
    )
    other = {k: v for k, v in Counter(statuses).items() if k not in ("ok", "error")}
    return apis, failures, dict(sorted(other.items(), key=lambda kv: str(kv[0])))
