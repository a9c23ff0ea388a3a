"""The run's headline figures from the tables' columns: exchanges by API with latency percentiles
and error counts, statuses, anomalies by kind, and the capture's and TCP's own counters.

Works on the sink's columns, so it needs neither pandas nor numpy; it never prints.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from kdissect.sources.shapes import SourceStats
from kdissect.tables.columns import TCP_COUNTERS, cells
from kdissect.tables.sink import Columns


@dataclass(frozen=True, slots=True)
class ApiFigures:
    """One API's exchanges: how many, latency percentiles (ms; None without a latency), problems."""

    name: str
    count: int
    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    errors: int
    unanswered: int


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
    apis: list[ApiFigures] = field(default_factory=list)  # by name
    other_statuses: dict[str, int] = field(default_factory=dict)  # statuses besides ok and error, by name
    anomalies: list[AnomalyFigures] = field(default_factory=list)  # by kind
    capture: dict[str, int] = field(default_factory=dict)  # the sources' counters, summed over files
    # The reassembler's counters, both directions summed, and ``stray_segments``: segments of no connection.
    tcp: dict[str, int] = field(default_factory=dict)


def quantile(ordered: list[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolated linearly (as pandas and numpy do by default)."""
    h = (len(ordered) - 1) * q
    lo = int(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


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
        out.apis, out.other_statuses = _by_api(ex)
    if an is not None:
        kinds: dict[str, list[int]] = {}  # kind -> [anomalies, bytes]; a row may stand for several (``count``)
        for kind, length, count in zip(cells(an["kind"]), cells(an["length"]), cells(an["count"]), strict=True):
            totals = kinds.setdefault(kind, [0, 0])
            totals[0] += count or 1
            totals[1] += length or 0
        out.anomalies = [AnomalyFigures(kind, *kinds[kind]) for kind in sorted(kinds)]
    return out


def _by_api(ex: Columns) -> tuple[list[ApiFigures], dict[str, int]]:
    statuses = cells(ex["status"])
    by_api: dict[str, list[int]] = {}
    for i, name in enumerate(cells(ex["api_name"])):
        if name is not None:
            by_api.setdefault(name, []).append(i)
    latency = cells(ex["latency_ms"])
    apis = []
    for name in sorted(by_api):
        rows = by_api[name]
        lat = sorted(latency[i] for i in rows if latency[i] is not None)
        p50, p99, mx = (quantile(lat, 0.5), quantile(lat, 0.99), lat[-1]) if lat else (None, None, None)
        errors = sum(1 for i in rows if statuses[i] == "error")
        unanswered = sum(1 for i in rows if statuses[i] == "unanswered")
        apis.append(ApiFigures(name, len(rows), p50, p99, mx, errors, unanswered))
    other = {k: v for k, v in Counter(statuses).items() if k not in ("ok", "error")}
    return apis, dict(sorted(other.items(), key=lambda kv: str(kv[0])))
