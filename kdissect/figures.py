"""The summary's figures: exchanges by API with exact latency percentiles, statuses, anomalies.

Kept apart from their text so every engine computes the same :class:`Figures` its own way (the
local engine from the sink's columns here, the Spark engine from DataFrames) and the command line
prints them one way. Needs neither pandas nor numpy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from .tables.columns import cells
from .tables.sink import Columns


@dataclass(frozen=True, slots=True)
class ApiFigures:
    """One API's line of the summary; latencies in ms, None when no exchange has one."""

    name: str
    count: int
    p50: float | None
    p99: float | None
    max: float | None
    errors: int
    unanswered: int


@dataclass(slots=True)
class Figures:
    packets: int = 0
    connections: int = 0
    kafka_connections: int = 0
    exchanges: int = 0
    apis: list[ApiFigures] = field(default_factory=list)  # by name
    statuses: dict[str, int] = field(default_factory=dict)  # statuses other than ok and error
    anomalies: dict[str, tuple[int, int]] = field(default_factory=dict)  # kind -> (rows, bytes)


def quantile(ordered: list[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolated linearly (as pandas and numpy do by default).
    The Spark engine evaluates this same expression in SQL, so both give identical figures."""
    h = (len(ordered) - 1) * q
    lo = int(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


def summary_figures(tables: Mapping[str, Columns], packets: int) -> Figures:
    """The figures of the sink's columns (``exchanges``, ``connections``, ``anomalies``)."""
    ex, conns, an = tables.get("exchanges"), tables.get("connections"), tables.get("anomalies")
    fig = Figures(packets=packets)
    if conns is not None:
        fig.connections = len(cells(conns["connection_id"]))
        fig.kafka_connections = sum(1 for v in cells(conns["is_kafka"]) if v)
    if ex is not None:
        statuses = cells(ex["status"])
        fig.exchanges = len(statuses)
        by_api: dict[str, list[int]] = {}
        for i, name in enumerate(cells(ex["api_name"])):
            if name is not None:
                by_api.setdefault(name, []).append(i)
        latency = cells(ex["latency_ms"])
        for name in sorted(by_api):
            rows = by_api[name]
            lat = sorted(latency[i] for i in rows if latency[i] is not None)
            p50, p99, mx = (quantile(lat, 0.5), quantile(lat, 0.99), lat[-1]) if lat else (None, None, None)
            errors = sum(1 for i in rows if statuses[i] == "error")
            unanswered = sum(1 for i in rows if statuses[i] == "unanswered")
            fig.apis.append(ApiFigures(name, len(rows), p50, p99, mx, errors, unanswered))
        fig.statuses = {k: v for k, v in Counter(statuses).items() if k not in ("ok", "error")}
    if an is not None:
        kinds: dict[str, list[int]] = {}
        for kind, length in zip(cells(an["kind"]), cells(an["length"]), strict=True):
            kinds.setdefault(kind, []).append(length or 0)
        fig.anomalies = {kind: (len(lengths), sum(lengths)) for kind, lengths in kinds.items()}
    return fig
