"""Cluster health from the Metadata responses in the capture: leaders, replicas, in-sync replicas.

Each Metadata response is the broker's view at that moment; the newest one seen for a partition
is its last known state. A leader id of -1 means the partition has no leader (unavailable).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kdissect.tables.columns import TABLES

if TYPE_CHECKING:
    import pandas as pd

NO_LEADER = -1


def _count(ids: object) -> int:
    return len([p for p in str(ids).split(",") if p]) if isinstance(ids, str) else 0


def partition_health(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Last known state of every partition Metadata described, with ``leaderless``, ``under_replicated``
    (fewer in-sync replicas than replicas) and ``offline`` (offline replicas listed) flags."""
    meta = tables["metadata_partitions"]
    last = meta.sort_values("response_ts", kind="stable").drop_duplicates(["topic", "partition"], keep="last")
    last = last.sort_values(["topic", "partition"]).reset_index(drop=True)
    last["leaderless"] = last["leader_id"] == NO_LEADER
    last["under_replicated"] = [_count(i) < _count(r) for i, r in zip(last["isr"], last["replicas"], strict=True)]
    last["offline"] = [_count(o) > 0 for o in last["offline_replicas"]]
    described = [c for c, _ in TABLES["metadata_partitions"] if c not in ("connection_id", "correlation_id")]
    return last[[*described, "leaderless", "under_replicated", "offline"]]


def unhealthy(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The partitions of :func:`partition_health` with at least one problem flag."""
    health = partition_health(tables)
    return health[health["leaderless"] | health["under_replicated"] | health["offline"]].reset_index(drop=True)


def leader_changes(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Each time a Metadata response named a different leader for a partition than the one before."""
    meta = tables["metadata_partitions"].sort_values("response_ts", kind="stable")
    meta = meta[meta["leader_id"].notna()]
    previous = meta.groupby(["topic", "partition"])["leader_id"].shift()
    changed = meta.assign(previous_leader=previous)[previous.notna() & (previous != meta["leader_id"])]
    return changed[["response_ts", "topic", "partition", "previous_leader", "leader_id", "leader_epoch"]].reset_index(
        drop=True
    )


def brokers(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The brokers the cluster described (node id, host, port, rack), and what told us."""
    b = tables["brokers"]
    return b.drop_duplicates(["node_id", "host", "port", "rack"]).sort_values("node_id").reset_index(drop=True)
