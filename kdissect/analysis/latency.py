"""Latency percentiles: the one percentile definition every figure uses, and latency tables by dimension.

:func:`percentiles` is plain Python over the one mergeable form of latencies
(:mod:`kdissect.analysis.distribution`), so the terminal summary uses it without loading pandas; the
tables compute the same figures for all groups at once, so a p99 is the same number in the
terminal, the HTML report, the JSON, live and Prometheus.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from kdissect.dataclass import dataclass

from .distribution import EXACT_VALUES, Latencies

if TYPE_CHECKING:
    import pandas as pd

QUANTILES = (0.5, 0.9, 0.99, 0.999)
# A quantile is shown only from this many latencies on: a p99 of a handful of requests is their
# max by another name. Below it the figure is None ("-"), with the count beside it.
MIN_SAMPLES = {0.5: 1, 0.9: 10, 0.99: 100, 0.999: 1000}
SUPPORT_RULE = "a percentile is shown only from enough latencies: p90 from 10, p99 from 100, p99.9 from 1,000"


@dataclass(frozen=True, slots=True)
class Percentiles:
    """Count and p50/p90/p99/p99.9/max of some latencies (ms); None when there were none."""

    count: int
    p50: float | None
    p90: float | None
    p99: float | None
    p999: float | None
    max: float | None

    @classmethod
    def supported(cls, count: int, quantiles: Sequence[float | None], largest: float | None) -> Percentiles:
        """The figures of ``count`` latencies, each quantile (in :data:`QUANTILES` order) kept only
        where :data:`MIN_SAMPLES` says the count supports it."""
        kept = (v if count >= MIN_SAMPLES[q] else None for q, v in zip(QUANTILES, quantiles, strict=True))
        return cls(count, *kept, largest)


PERCENTILE_COLUMNS = [f.name for f in fields(Percentiles)]


def quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolated linearly (as pandas and numpy do by default)."""
    h = (len(ordered) - 1) * q
    lo = int(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


def percentiles(values: Iterable[object]) -> Percentiles:
    """Percentiles of the values that are numbers (None, NaN and pandas' NA count as null), in the
    one mergeable form every face uses (:class:`~kdissect.analysis.distribution.Latencies`)."""
    return of_latencies(Latencies.of(values))


def of_latencies(latencies: Latencies) -> Percentiles:
    """The figures of a :class:`~kdissect.analysis.distribution.Latencies` (exact up to its
    ``EXACT_VALUES`` distinct values, within its ``RELATIVE_ERROR`` past them)."""
    if not latencies.count:
        return Percentiles(0, None, None, None, None, None)
    return Percentiles.supported(latencies.count, latencies.quantiles(QUANTILES), latencies.high)


def percentile_table(frame: pd.DataFrame, by: list[str], value: str = "latency_ms") -> pd.DataFrame:
    """One row per group of ``by`` with the percentiles of ``value``, slowest first: by p99, by max
    where too few latencies for a p99.

    :func:`percentiles`' definition computed for all groups at once (one sort, then array indexing):
    a fleet's capture has hundreds of thousands of client hosts, and a step per group cost minutes."""
    import numpy as np

    codes = frame.groupby(by, observed=True, dropna=False, sort=False).ngroup().to_numpy()
    values = frame[value].astype("float64").to_numpy(dtype="float64", na_value=np.nan)
    order = np.lexsort((values, codes))  # by group, then value; nulls last within their group
    ordered = values[order]
    groups, first = np.unique(codes[order], return_index=True)
    counts = np.bincount(codes[~np.isnan(values)], minlength=len(groups))[groups] if len(groups) else groups
    table = frame[by].iloc[order[first]].reset_index(drop=True)
    table["count"] = counts
    last = np.maximum(counts - 1, 0)
    for name, q in zip(PERCENTILE_COLUMNS[1:-1], QUANTILES, strict=True):
        h = last * q
        lo = np.floor(h).astype("int64")
        hi = np.minimum(lo + 1, last)
        low = ordered[first + lo]
        figure = low + (h - lo) * (ordered[first + hi] - low)
        table[name] = np.where(counts >= max(MIN_SAMPLES[q], 1), figure, np.nan)  # unsupported: NaN
    table["max"] = np.where(counts > 0, ordered[first + last] if len(groups) else counts, np.nan)
    _fold_wide_groups(table, ordered, codes[order], first, counts)
    tail = table["p99"].fillna(table["max"])
    order = table.assign(_tail=tail).sort_values(["_tail", "count"], ascending=False, na_position="last").index
    return table.loc[order].reset_index(drop=True)


def _fold_wide_groups(table: pd.DataFrame, ordered: Any, codes: Any, first: Any, counts: Any) -> None:
    """Groups with more than ``EXACT_VALUES`` distinct latencies get the figures of their
    :class:`~kdissect.analysis.distribution.Latencies` (folded, as every other face folds them)."""
    import numpy as np

    if not len(ordered):
        return
    valid = ~np.isnan(ordered)
    changed = np.r_[True, (codes[1:] != codes[:-1]) | (ordered[1:] != ordered[:-1])]
    distinct = np.bincount(codes[valid & changed], minlength=codes.max() + 1)[codes[first]]
    for row in np.flatnonzero(distinct > EXACT_VALUES):
        start = first[row]
        p = of_latencies(Latencies.of(ordered[start:start + counts[row]].tolist()))
        table.loc[row, PERCENTILE_COLUMNS[1:]] = [np.nan if v is None else v for v in
                                                  (p.p50, p.p90, p.p99, p.p999, p.max)]


def broker_namer(brokers: pd.DataFrame) -> Callable[[object, object], str | None]:
    """What names a broker address (IP, port) as the cluster names it: ``node 1 host:port (rack r1)``.

    Matched on the address the capture saw (host == IP and port); a broker advertised by host
    name is matched on its port when no other broker uses that port; else the bare address."""
    import pandas as pd

    known: dict[tuple[str, int], str] = {}
    by_port: dict[int, list[str]] = {}
    for b in brokers.dropna(subset=["host", "port"]).drop_duplicates(["node_id", "host", "port"]).itertuples():
        rack = f" (rack {b.rack})" if isinstance(b.rack, str) else ""
        label = f"node {b.node_id} {b.host}:{b.port}{rack}"
        known[(str(b.host), int(b.port))] = label
        by_port.setdefault(int(b.port), []).append(label)

    def label(ip: object, port: object) -> str | None:
        if pd.isna(ip) or pd.isna(port):
            return None
        found = known.get((str(ip), int(port)))  # type: ignore[call-overload]
        if found is None:
            same_port = set(by_port.get(int(port), []))  # type: ignore[call-overload]
            found = same_port.pop() if len(same_port) == 1 else f"{ip}:{port}"
        return found

    return label


def broker_labels(exchanges: pd.DataFrame, brokers: pd.DataFrame) -> pd.Series:
    """Each exchange's broker named as :func:`broker_namer` names it."""
    import pandas as pd

    label = broker_namer(brokers)
    cache: dict[tuple[str, str], str | None] = {}
    out = []
    for ip, port in zip(exchanges["broker_ip"].tolist(), exchanges["broker_port"].tolist(), strict=True):
        key = (str(ip), str(port))
        if key not in cache:
            cache[key] = label(ip, port)
        out.append(cache[key])
    return pd.Series(out, index=exchanges.index, dtype=object)


def with_broker(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Exchanges with a ``broker`` label: still one row per exchange."""
    ex = tables["exchanges"].copy()
    ex["broker"] = broker_labels(ex, tables["brokers"])
    return ex


def with_partitions(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Exchanges with one row per topic-partition they touched (``topic``, ``partition``); those
    about no partition are left out."""
    parts = tables["partitions"][["connection_id", "correlation_id", "topic", "partition"]].drop_duplicates()
    return tables["exchanges"].merge(parts[parts["topic"].notna()], on=["connection_id", "correlation_id"])


DIMENSIONS: dict[str, list[str]] = {
    "api": ["api_name"],
    "api_version": ["api_name", "api_version"],
    "broker": ["broker"],
    "client_id": ["client_id"],
    "client_host": ["client_ip"],
    "topic": ["topic"],
    "partition": ["topic", "partition"],
    "broker_api": ["broker", "api_name"],
}


def latency_by(tables: Mapping[str, pd.DataFrame], dimension: str) -> pd.DataFrame:
    """Latency percentiles of answered exchanges grouped by one of :data:`DIMENSIONS`.

    Every exchange counts once in a group: the breakdowns by anything but topic are complete (their
    counts add up to the answered exchanges); an exchange about several topics counts once in each."""
    by = DIMENSIONS[dimension]
    if by[0] == "topic":
        frame = with_partitions(tables).drop_duplicates(["connection_id", "correlation_id", *by])
    elif "broker" in by:
        frame = with_broker(tables)
    else:
        frame = tables["exchanges"]
    return percentile_table(frame[frame["latency_ms"].notna()], by)
