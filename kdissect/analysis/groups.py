"""Consumer groups as seen on the wire: the membership timeline, generations, assignments, rebalances.

Covers the classic protocol (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
OffsetCommit) and KIP-848's ConsumerGroupHeartbeat (member epochs instead of generations). A
rebalance of the classic protocol runs from the first JoinGroup request after the previous
generation was synced to the last SyncGroup answer of the new generation. A generation synced in
the capture whose JoinGroup is not in it (the capture began later) is listed as joined before the
capture: its start and duration are unknown, not zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .cells import given
from .errors import expected_mask
from .moments import moment

if TYPE_CHECKING:
    import pandas as pd


JOINED_BEFORE = "joined before the capture: its JoinGroup is not in it"


def timeline(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Every group request in time order, with ``expected`` marking normal steps answered with an error code."""
    events = tables["group_events"]
    order = moment(events).sort_values(kind="stable").index
    events = events.loc[order].reset_index(drop=True)
    events["expected"] = expected_mask(events)
    return events


def rebalances(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per (group, generation) the classic protocol completed: when the rebalance started and
    ended, its duration, members, protocol, leader and the assignment each member was sent."""
    import pandas as pd

    columns = [
        "group_id",
        "generation",
        "started",
        "synced",
        "duration_ms",
        "members",
        "protocol",
        "leader",
        "assignments",
        "joins",
        "rebalance_errors",
        "note",
    ]
    events = timeline(tables)
    rows = []
    for group, g in events.groupby("group_id", sort=True, dropna=True):
        start = None
        joins = errors = 0
        done: dict[int, dict] = {}
        for ev in g.itertuples():
            answered_ok = given(ev.error_name) and ev.error_name == "NONE"
            if ev.api_name == "JoinGroup":
                if start is None and given(ev.request_ts):
                    start, joins, errors = ev.request_ts, 0, 0
                joins += 1
                if given(ev.error_name) and ev.error_name != "NONE" and not ev.expected:
                    errors += 1
                if given(ev.members) and given(ev.generation) and answered_ok:
                    row = done.setdefault(int(ev.generation), {"assignments": {}})
                    row.update(members=int(ev.members), protocol=ev.protocol, leader=ev.leader)
            elif ev.api_name == "SyncGroup" and answered_ok and given(ev.generation):
                row = done.setdefault(int(ev.generation), {"assignments": {}})
                row["assignments"][ev.member_id] = ev.assignment
                if "started" not in row:
                    row.update(started=start, joins=joins, rebalance_errors=errors)
                    start = None
                row["synced"] = ev.response_ts
        for generation, row in sorted(done.items()):
            if "started" not in row:
                continue
            started, synced = row["started"], row["synced"]
            known = given(started) and given(synced)
            assignments = "; ".join(f"{m}: {a}" for m, a in sorted(row["assignments"].items(), key=str))
            rows.append(
                (
                    group,
                    generation,
                    started,
                    synced,
                    (synced - started).total_seconds() * 1000 if known else None,
                    row.get("members"),
                    row.get("protocol"),
                    row.get("leader"),
                    assignments,
                    row["joins"],
                    row["rebalance_errors"],
                    None if given(started) else JOINED_BEFORE,
                )
            )
    return pd.DataFrame(rows, columns=columns)


def member_epochs(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """KIP-848 ConsumerGroupHeartbeat answers where a member's epoch or assignment changed."""
    events = timeline(tables)
    hb = events[(events["api_name"] == "ConsumerGroupHeartbeat") & events["generation"].notna()]
    changed = hb[(hb.groupby(["group_id", "member_id"])["generation"].diff() != 0) | hb["assignment"].notna()]
    return (
        changed[["response_ts", "group_id", "member_id", "client_id", "generation", "assignment", "error_name"]]
        .rename(columns={"generation": "member_epoch"})
        .reset_index(drop=True)
    )


def group_errors(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Group requests answered with an error, by group, API and error (``expected``: normal steps)."""
    import pandas as pd

    events = timeline(tables)
    failed = events[events["error_name"].notna() & (events["error_name"] != "NONE")]
    if failed.empty:
        return pd.DataFrame(columns=["group_id", "api_name", "error_name", "count", "expected"])
    return (
        failed.groupby(["group_id", "api_name", "error_name"], dropna=False)
        .agg(count=("error_name", "size"), expected=("expected", "all"))
        .reset_index()
        .sort_values(["expected", "count"], ascending=[True, False])
        .reset_index(drop=True)
    )


def members_by_client(tables: Mapping[str, pd.DataFrame]) -> dict[str, str]:
    """client id -> the group(s) it joined (comma-separated when one client id is in several)."""
    events = tables["group_events"]
    joined = events[events["api_name"].isin(["JoinGroup", "ConsumerGroupHeartbeat", "OffsetCommit"])]
    out: dict[str, set[str]] = {}
    for client, group in zip(joined["client_id"], joined["group_id"], strict=True):
        if given(client) and given(group):
            out.setdefault(str(client), set()).add(str(group))
    return {c: ",".join(sorted(g)) for c, g in out.items()}
