"""Consumer lag as the wire shows it.

Each Fetch asks from ``fetch_offset`` and its answer carries the partition's high watermark, so
``high_watermark - fetch_offset`` is how far behind that consumer was at that moment. An
OffsetCommit's offset against the newest high watermark seen for the partition by then is the
group's committed lag. A consumer is tied to its group through the client id it joined with.
A Fetch or OffsetCommit whose request was not captured is placed at its answer's time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .groups import members_by_client
from .moments import with_answer_time

if TYPE_CHECKING:
    import pandas as pd


def fetch_lag(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per partition of each Fetch: time, group, client, topic, partition, offsets and lag."""
    parts = tables["partitions"]
    fetches = parts[(parts["api_name"] == "Fetch") & parts["fetch_offset"].notna() & parts["high_watermark"].notna()]
    fetches = with_answer_time(fetches, tables["exchanges"])
    clients = tables["exchanges"][["connection_id", "correlation_id", "client_id"]].drop_duplicates(
        ["connection_id", "correlation_id"]
    )
    out = fetches.merge(clients, on=["connection_id", "correlation_id"], how="left")
    groups = members_by_client(tables)
    out["group_id"] = [groups.get(str(c)) for c in out["client_id"]]
    out["lag"] = (out["high_watermark"] - out["fetch_offset"]).clip(lower=0)
    return (
        out[["request_ts", "group_id", "client_id", "topic", "partition", "fetch_offset", "high_watermark", "lag"]]
        .sort_values("request_ts", kind="stable")
        .reset_index(drop=True)
    )


def lag_summary(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per group, client and partition: fetches seen, the last and the largest lag."""
    import pandas as pd

    lag = fetch_lag(tables)
    columns = ["group_id", "client_id", "topic", "partition", "fetches", "last_lag", "max_lag", "last_seen"]
    if lag.empty:
        return pd.DataFrame(columns=columns)
    out = (
        lag.groupby(["group_id", "client_id", "topic", "partition"], observed=True, dropna=False)
        .agg(fetches=("lag", "size"), last_lag=("lag", "last"), max_lag=("lag", "max"), last_seen=("request_ts", "max"))
        .reset_index()
    )
    return out.sort_values(["max_lag", "last_lag"], ascending=False).reset_index(drop=True)[columns]


def commit_lag(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Each committed offset against the newest high watermark the capture had shown for that partition."""
    import pandas as pd

    parts = with_answer_time(tables["partitions"], tables["exchanges"])
    parts = parts[parts["request_ts"].notna() & parts["topic"].notna() & parts["partition"].notna()]
    commits = parts[(parts["api_name"] == "OffsetCommit") & parts["committed_offset"].notna()]
    columns = ["request_ts", "group_id", "topic", "partition", "committed_offset", "log_end", "lag"]
    if commits.empty:
        return pd.DataFrame(columns=columns)
    events = tables["group_events"][["connection_id", "correlation_id", "group_id"]]
    commits = commits.merge(events, on=["connection_id", "correlation_id"], how="left")
    ends = parts[parts["high_watermark"].notna()][["request_ts", "topic", "partition", "high_watermark"]]
    ends = ends.sort_values("request_ts").rename(columns={"request_ts": "seen", "high_watermark": "log_end"})
    commits = commits.sort_values("request_ts")
    keys = ["topic", "partition"]
    for frame in (commits, ends):
        frame["topic"] = frame["topic"].astype(str)
        frame["partition"] = frame["partition"].astype("int64")
    out = pd.merge_asof(commits, ends, left_on="request_ts", right_on="seen", by=keys, direction="backward")
    out["lag"] = (out["log_end"] - out["committed_offset"]).clip(lower=0)
    return out[columns].reset_index(drop=True)
