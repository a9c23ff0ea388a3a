"""Latency read the way Kafka means it: some requests wait on purpose.

A Fetch long-polls: the broker holds it until ``min_bytes`` are there or ``max_wait_ms`` passes,
so a 500 ms Fetch with ``max_wait_ms=500`` is a consumer with nothing to read, not a slow
broker. A JoinGroup is held until the group's members have joined (up to the rebalance timeout).
Such waits are ``expected_wait`` and kept out of :func:`slowest` unless they overran their
bound. Produce latency depends on ``acks`` (-1 waits for the in-sync replicas, 1 for the leader,
0 for nothing), so it is split by it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .expected import OVERRUN_TOLERANCE_MS
from .latency import broker_labels, percentile_table, percentiles

if TYPE_CHECKING:
    import pandas as pd

def annotated(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Exchanges with their request parameters, whether a Fetch returned data, and ``expected_wait``/``bound_ms``."""
    ex = tables["exchanges"]
    params = tables["request_params"].drop(columns=["api_key"]).drop_duplicates(["connection_id", "correlation_id"])
    out = ex.merge(params, on=["connection_id", "correlation_id"], how="left")
    parts = tables["partitions"]
    fetched = (
        parts[parts["api_name"] == "Fetch"]
        .groupby(["connection_id", "correlation_id"], observed=True)["response_records_bytes"]
        .sum(min_count=1)
        .rename("fetched_bytes")
        .reset_index()
    )
    out = out.merge(fetched, on=["connection_id", "correlation_id"], how="left")
    is_fetch, is_join = out["api_name"] == "Fetch", out["api_name"] == "JoinGroup"
    out["returned_data"] = (out["fetched_bytes"].fillna(0) > 0).where(is_fetch)
    bound = out["max_wait_ms"].where(is_fetch).astype("Float64")
    # JoinGroup v0 has no rebalance timeout: the session timeout bounded the wait then
    join_bound = out["rebalance_timeout_ms"].fillna(out["session_timeout_ms"]).where(is_join)
    bound = bound.fillna(join_bound.astype("Float64"))
    out["bound_ms"] = bound
    out["wait_ratio"] = out["latency_ms"] / bound.where(bound > 0)
    within = out["latency_ms"] <= bound + OVERRUN_TOLERANCE_MS
    out["expected_wait"] = within.fillna(False).astype(bool)
    return out


def fetch_waits(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Fetch latency against its own max wait, per client and broker: how many returned data, how
    many waited the whole max wait, and how many overran it."""
    import pandas as pd

    ex = annotated(tables)
    ex["broker"] = broker_labels(ex, tables["brokers"])
    fetches = ex[(ex["api_name"] == "Fetch") & ex["latency_ms"].notna()].copy()
    columns = ["client_id", "broker", "fetches", "returned_data", "max_wait_ms", "p50", "p99", "waited_full", "overran"]
    if fetches.empty:
        return pd.DataFrame(columns=columns)
    fetches["waited_full"] = fetches["wait_ratio"] >= 0.9
    fetches["overran"] = ~fetches["expected_wait"] & fetches["bound_ms"].notna()
    rows = []
    for (client, broker), g in fetches.groupby(["client_id", "broker"], observed=True, dropna=False):
        lat = percentiles(g["latency_ms"].tolist())
        rows.append(
            (
                client,
                broker,
                len(g),
                int(g["returned_data"].fillna(False).sum()),
                g["max_wait_ms"].max(),
                lat.p50,
                lat.p99,
                int(g["waited_full"].fillna(False).sum()),
                int(g["overran"].sum()),
            )
        )
    return pd.DataFrame(rows, columns=columns)


def produce_by_acks(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Produce latency percentiles per ``acks`` (-1 all in-sync replicas, 1 leader only, 0 none expected)."""
    ex = annotated(tables)
    produce = ex[(ex["api_name"] == "Produce") & ex["latency_ms"].notna()]
    return percentile_table(produce, ["acks"])


def join_waits(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """JoinGroup requests with how long the broker held them against their rebalance timeout."""
    ex = annotated(tables)
    joins = ex[ex["api_name"] == "JoinGroup"]
    return joins[
        ["request_ts", "client_id", "latency_ms", "rebalance_timeout_ms", "error_name", "expected_wait"]
    ].reset_index(drop=True)


def slowest(tables: Mapping[str, pd.DataFrame], n: int = 20) -> pd.DataFrame:
    """The ``n`` slowest answered exchanges, long-poll and rebalance waits within their bound left out,
    with their context (client, broker, topics, error, how long the request allowed)."""
    ex = annotated(tables)
    slow = ex[ex["latency_ms"].notna() & ~ex["expected_wait"]]
    slow = slow.sort_values("latency_ms", ascending=False).head(n)
    slow["broker"] = broker_labels(slow, tables["brokers"])
    parts = tables["partitions"]
    key = ["connection_id", "correlation_id"]
    parts = parts[parts["topic"].notna()].merge(slow[key].drop_duplicates(), on=key)  # the slowest's only
    topics = (
        parts.groupby(key, observed=True)["topic"]
        .agg(lambda s: ", ".join(sorted({str(t) for t in s})))
        .rename("topics")
        .reset_index()
    )
    slow = slow.merge(topics, on=key, how="left")
    return slow[
        [
            "request_ts",
            "api_name",
            "api_version",
            "client_id",
            "client_ip",
            "broker",
            "topics",
            "latency_ms",
            "bound_ms",
            "error_name",
            "status",
            "connection_id",
            "correlation_id",
        ]
    ].reset_index(drop=True)
