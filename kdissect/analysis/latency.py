"""Latency percentiles: the one percentile definition every figure uses, and latency tables by dimension.

:func:`percentiles` is plain Python over a list of numbers, so the terminal summary uses it without
loading pandas; the tables apply the same function to each group, so a p99 is the same number in
the terminal, the HTML report and the JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import astuple, dataclass, fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

QUANTILES = (0.5, 0.9, 0.99, 0.999)


@dataclass(frozen=True, slots=True)
class Percentiles:
    """Count and p50/p90/p99/p99.9/max of some latencies (ms); None when there were none."""

    count: int
    p50: float | None
    p90: float | None
    p99: float | None
    p999: float | None
    max: float | None


PERCENTILE_COLUMNS = [f.name for f in fields(Percentiles)]


def quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolated linearly (as pandas and numpy do by default)."""
    h = (len(ordered) - 1) * q
    lo = int(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


def percentiles(values: Iterable[float | None]) -> Percentiles:
    """Percentiles of the values that are numbers (None, NaN and pandas' NA count as null)."""
    ordered = sorted(v for v in values if isinstance(v, int | float) and v == v)
    if not ordered:
        return Percentiles(0, None, None, None, None, None)
    p50, p90, p99, p999 = (quantile(ordered, q) for q in QUANTILES)
    return Percentiles(len(ordered), p50, p90, p99, p999, ordered[-1])


def percentile_table(frame: pd.DataFrame, by: list[str], value: str = "latency_ms") -> pd.DataFrame:
    """One row per group of ``by`` with the percentiles of ``value``, slowest p99 first."""
    import pandas as pd

    rows = []
    if len(frame):
        for key, group in frame.groupby(by, observed=True, dropna=False, sort=False):
            keys = key if isinstance(key, tuple) else (key,)
            rows.append((*keys, *astuple(percentiles(group[value].tolist()))))
    table = pd.DataFrame(rows, columns=[*by, *PERCENTILE_COLUMNS])
    return table.sort_values(["p99", "count"], ascending=False, na_position="last").reset_index(drop=True)


def broker_labels(exchanges: pd.DataFrame, brokers: pd.DataFrame) -> pd.Series:
    """Each exchange's broker named as the cluster names it: ``node 1 host:port (rack r1)``.

    Matched on the address the capture saw (host == IP and port); a broker advertised by host
    name is matched on its port when no other broker uses that port; else the bare address."""
    import pandas as pd

    known: dict[tuple[str, int], str] = {}
    by_port: dict[int, list[str]] = {}
    for b in brokers.drop_duplicates(["node_id", "host", "port"]).itertuples():
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

    cache: dict[tuple[str, str], str | None] = {}
    out = []
    for ip, port in zip(exchanges["broker_ip"].tolist(), exchanges["broker_port"].tolist(), strict=True):
        key = (str(ip), str(port))
        if key not in cache:
            cache[key] = label(ip, port)
        out.append(cache[key])
    return pd.Series(out, index=exchanges.index, dtype=object)


def with_context(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Exchanges with a ``broker`` label and one row per topic-partition they touched (``topic``,
    ``partition``; null for exchanges about no partition)."""
    ex = tables["exchanges"].copy()
    ex["broker"] = broker_labels(ex, tables["brokers"])
    parts = tables["partitions"][["connection_id", "correlation_id", "topic", "partition"]].drop_duplicates()
    return ex.merge(parts, on=["connection_id", "correlation_id"], how="left")


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
    """Latency percentiles of answered exchanges grouped by one of :data:`DIMENSIONS`."""
    by = DIMENSIONS[dimension]
    frame = with_context(tables) if dimension in ("broker", "topic", "partition", "broker_api") else tables["exchanges"]
    if by[0] == "topic":
        frame = frame[frame["topic"].notna()]
    if by[0] == "topic" or dimension == "broker_api":
        # an exchange about several partitions counts once per group, not once per partition
        frame = frame.drop_duplicates(["connection_id", "correlation_id", *by])
    return percentile_table(frame[frame["latency_ms"].notna()], by)
