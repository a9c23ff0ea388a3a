"""Transactions per transactional id, and which records each one committed or aborted.

A transaction runs from the producer's first AddPartitionsToTxn after InitProducerId (or after its
previous EndTxn) to its EndTxn; ``committed`` in the EndTxn says the outcome. A record is marked
aborted by whichever of three rules applies, and ``rule`` says which:

- ``abort marker``: a later ABORT control record of the same producer in the same partition is in the
  capture (what a read_committed consumer must skip, whatever the broker's list says);
- ``broker aborted list``: the Fetch response's aborted-transactions list covers it;
- ``EndTxn abort``: it was produced inside a transaction its producer ended with EndTxn(abort).

A record of a transaction whose COMMIT marker or EndTxn(commit) is in the capture is committed;
otherwise its outcome is ``unknown``. The records table's ``aborted`` column already applies the
abort rules (``kdissect.tables.transactions``); ``aborted_by`` names the rule, read here.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kdissect.analysis.cells import flag, given

if TYPE_CHECKING:
    import pandas as pd

RULE_MARKER, RULE_BROKER, RULE_END_TXN = "abort marker", "broker aborted list", "EndTxn abort"
# The records table's ``aborted_by`` values (kdissect.tables.transactions) as these rules' names.
_TABLE_RULES = {"aborted_transactions": RULE_BROKER, "abort_marker": RULE_MARKER, "end_txn": RULE_END_TXN}


def transactions(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per transaction: id, producer, partitions added, outcome, start, end and duration."""
    import pandas as pd

    columns = [
        "transactional_id",
        "producer_id",
        "producer_epoch",
        "partitions",
        "offsets_group",
        "outcome",
        "started",
        "ended",
        "duration_ms",
        "errors",
    ]
    events = tables["txn_events"].sort_values("request_ts", kind="stable")
    rows = []
    for txn_id, g in events.groupby("transactional_id", sort=True, dropna=True):
        current: dict | None = None
        producer: tuple = (None, None)
        for ev in g.itertuples():
            if ev.api_name == "InitProducerId":
                producer = (ev.producer_id, ev.producer_epoch)
                continue
            if current is None:
                current = {"started": ev.request_ts, "partitions": [], "groups": [], "errors": []}
            if given(ev.partitions) and ev.partitions and ev.api_name == "AddPartitionsToTxn":
                current["partitions"].append(ev.partitions)
            if given(ev.group_id):
                current["groups"].append(ev.group_id)
            if given(ev.error_name) and ev.error_name != "NONE":
                current["errors"].append(f"{ev.api_name}: {ev.error_name}")
            if ev.api_name == "EndTxn":
                outcome = "commit" if flag(ev.committed) else "abort"
                ended = ev.request_ts + pd.Timedelta(milliseconds=ev.latency_ms if given(ev.latency_ms) else 0)
                rows.append(
                    (
                        txn_id,
                        producer[0] if given(producer[0]) else ev.producer_id,
                        producer[1] if given(producer[1]) else ev.producer_epoch,
                        " ".join(current["partitions"]),
                        ",".join(sorted(set(current["groups"]))),
                        outcome,
                        current["started"],
                        ended,
                        (ended - current["started"]).total_seconds() * 1000,
                        "; ".join(current["errors"]),
                    )
                )
                current = None
        if current is not None:
            rows.append(
                (
                    txn_id,
                    producer[0],
                    producer[1],
                    " ".join(current["partitions"]),
                    ",".join(sorted(set(current["groups"]))),
                    "open (no EndTxn in the capture)",
                    current["started"],
                    None,
                    None,
                    "; ".join(current["errors"]),
                )
            )
    return pd.DataFrame(rows, columns=columns)


def transactional_records(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Every data record written in a transaction (produced or fetched), with its ``outcome`` and the
    ``rule`` that decided it."""
    import pandas as pd

    rec = tables["records"]
    columns = [
        "transactional_id",
        "direction",
        "topic",
        "partition",
        "offset",
        "producer_id",
        "producer_epoch",
        "request_ts",
        "outcome",
        "rule",
    ]
    txn = rec[rec["transactional"].fillna(False).astype(bool)]
    if txn.empty:
        return pd.DataFrame(columns=columns)
    times = tables["exchanges"][["connection_id", "correlation_id", "request_ts"]].drop_duplicates(
        ["connection_id", "correlation_id"]
    )
    txn = txn.merge(times, on=["connection_id", "correlation_id"], how="left")
    placed = txn["offset"].notna() & txn["partition"].notna() & txn["producer_id"].notna()
    markers = txn[txn["is_control"].fillna(False).astype(bool) & placed]
    marker_index: dict[tuple, list[tuple[int, str]]] = {}
    for m in markers.drop_duplicates(["topic", "partition", "producer_id", "offset"]).itertuples():
        marker_index.setdefault((str(m.topic), int(m.partition), int(m.producer_id)), []).append(
            (int(m.offset), str(m.control_type))
        )
    for found in marker_index.values():
        found.sort()
    end_txns = _end_txns_by_producer(tables)
    data = txn[~txn["is_control"].fillna(False).astype(bool)]
    outcomes, rules = [], []
    for r in data.itertuples():
        outcome, rule = "unknown", None
        placed_row = given(r.producer_id) and given(r.partition)
        key = (str(r.topic), int(r.partition), int(r.producer_id)) if placed_row else None
        marker = _next_marker(marker_index.get(key, []), r.offset) if key else None
        if marker is not None:
            outcome, rule = ("aborted", RULE_MARKER) if marker == "abort" else ("committed", "commit marker")
        if flag(r.aborted):
            by = getattr(r, "aborted_by", None)
            outcome, rule = "aborted", rule if rule == RULE_MARKER else _TABLE_RULES.get(by, RULE_BROKER)
        if r.direction == "produce" and outcome == "unknown":
            ended = _ending(end_txns.get(r.producer_id, []), r.request_ts)
            if ended is not None:
                outcome, rule = ("committed", "EndTxn commit") if ended else ("aborted", RULE_END_TXN)
        outcomes.append(outcome)
        rules.append(rule)
    ids = _transactional_ids(tables)
    out = data.assign(outcome=outcomes, rule=rules, transactional_id=[ids.get(p) for p in data["producer_id"]])
    return out[columns].reset_index(drop=True)


def _transactional_ids(tables: Mapping[str, pd.DataFrame]) -> dict[object, str]:
    """producer id -> transactional id, from the producer ids InitProducerId handed out (and later calls)."""
    events = tables["txn_events"].dropna(subset=["producer_id", "transactional_id"])
    return {int(p): str(t) for p, t in zip(events["producer_id"], events["transactional_id"], strict=True) if p >= 0}


def _next_marker(markers: list[tuple[int, str]], offset: object) -> str | None:
    """The control type of the first marker after ``offset`` (the one that closes its transaction)."""
    if not given(offset):
        return None
    at = bisect.bisect_right(markers, offset, key=lambda marker: marker[0])  # markers sorted by offset
    return markers[at][1] if at < len(markers) else None


def _end_txns_by_producer(tables: Mapping[str, pd.DataFrame]) -> dict[int, list[tuple]]:
    events = tables["txn_events"]
    ends = events[(events["api_name"] == "EndTxn") & events["producer_id"].notna() & events["request_ts"].notna()]
    ends = ends.sort_values("request_ts")
    out: dict[int, list[tuple]] = {}
    for e in ends.itertuples():
        out.setdefault(int(e.producer_id), []).append((e.request_ts, flag(e.committed)))
    return out


def _ending(ends: list[tuple], produced_at: object) -> bool | None:
    """``committed`` of the first EndTxn after a record was produced, None when there is none."""
    if not given(produced_at):
        return None
    at = bisect.bisect_left(ends, produced_at, key=lambda end: end[0])  # ends sorted by time
    return ends[at][1] if at < len(ends) else None


NOT_KEPT = "not kept (past the journal's limit)"  # the outcome of records a bounded journal only counted


def record_outcomes(tables: Mapping[str, pd.DataFrame], not_kept: Mapping[tuple, int] | None = None) -> pd.DataFrame:
    """Transactional records counted by direction, topic, outcome and rule; ``not_kept`` counts, per
    (direction, topic), records a bounded journal (:mod:`.journal`) counted without keeping."""
    import pandas as pd

    columns = ["direction", "topic", "outcome", "rule", "records"]
    recs = transactional_records(tables)
    counted = (
        recs.groupby(["direction", "topic", "outcome", "rule"], observed=True, dropna=False)
        .size()
        .rename("records")
        .reset_index()
        if not recs.empty
        else pd.DataFrame(columns=columns)
    )
    if not not_kept:
        return counted
    extra = pd.DataFrame([(d, t, NOT_KEPT, None, n) for (d, t), n in not_kept.items()], columns=columns)
    return pd.concat([counted.astype(object), extra], ignore_index=True) if len(counted) else extra
