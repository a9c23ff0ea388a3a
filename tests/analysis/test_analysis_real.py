"""The analysis figures on real captures, checked against what the clients themselves recorded
(``captures/*.truth.json``)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pandas as pd
import pytest

import kdissect
from kdissect.analysis import clients, groups, lag, throughput, transactions
from kdissect.analysis.latency import latency_by
from kdissect.decoders.apis import removed_version
from tests.shapes.invariants import ordered_percentiles

CAPTURES = Path(__file__).resolve().parents[2] / "captures"


@cache
def truth(name: str) -> dict:
    return json.loads((CAPTURES / f"{name}.truth.json").read_text())


@cache
def tables(name: str) -> dict[str, pd.DataFrame]:
    return kdissect.open_capture(CAPTURES / truth(name)["capture"]["file"]).tables


@pytest.mark.parametrize("name", ["librdkafka-transactions", "librdkafka-produce-consume", "kcat-legacy-protocol"])
def test_latency_counts_match_the_requests_the_client_sent(name: str) -> None:
    ex = tables(name)["exchanges"]
    answered = ex[ex["latency_ms"].notna()].groupby("api_name", observed=True).size().to_dict()
    by_api = latency_by(tables(name), "api")
    assert dict(zip(by_api["api_name"], by_api["count"], strict=True)) == answered
    sent = {r["api_name"]: r["count"] for r in truth(name)["requests_sent"]}  # as the client logged them
    unanswered = ex[ex["latency_ms"].isna()].groupby("api_name", observed=True).size().to_dict()
    for api, count in dict(zip(by_api["api_name"], by_api["count"], strict=True)).items():
        if api in sent:
            assert count == sent[api] - unanswered.get(api, 0)
    assert ordered_percentiles(by_api) == []


def test_transactions_follow_the_clients_commit_then_abort() -> None:
    t = tables("librdkafka-transactions")
    actions = [a["action"] for a in truth("librdkafka-transactions")["transactions"]]
    ended = [a.removesuffix("_transaction") for a in actions if a in ("commit_transaction", "abort_transaction")]
    txns = transactions.transactions(t)
    assert list(txns["outcome"]) == ended == ["commit", "abort"]
    offsets_group = next(
        a["group_id"]
        for a in truth("librdkafka-transactions")["transactions"]
        if a["action"] == "send_offsets_to_transaction"
    )
    assert list(txns["offsets_group"]) == [offsets_group, ""]  # only the first sent offsets
    assert set(txns["transactional_id"]) == {"confluent-kafka-txn"}


def test_records_of_the_aborted_transaction_are_flagged_by_its_abort_marker() -> None:
    """tansu lists no aborted transactions in its Fetch answers (a known quirk), so only the ABORT marker
    in the capture tells that payments[1] offsets 4 and 5 were aborted."""
    t = tables("librdkafka-transactions")
    assert "lists no aborted transactions" in (CAPTURES / "README.md").read_text()
    recs = transactions.transactional_records(t)
    fetched = recs[recs["direction"] == "fetch"].set_index("offset")
    assert set(fetched.loc[[4, 5], "outcome"]) == {"aborted"} and set(fetched.loc[[4, 5], "rule"]) == {"abort marker"}
    assert set(fetched.loc[[0, 1, 2], "outcome"]) == {"committed"}
    produced = {(p["topic"], p["partition"], p["offset"]) for p in truth("librdkafka-transactions")["produced"]}
    produce = recs[recs["direction"] == "produce"]
    assert {("payments", 1, int(o)) for o in produce["offset"]} <= produced
    assert set(produce.loc[produce["offset"].isin([4, 5]), "rule"]) == {"abort marker"}


@pytest.mark.parametrize("name", ["librdkafka-transactions", "librdkafka-produce-consume"])
def test_each_group_of_the_client_rebalanced_and_its_commits_are_seen(name: str) -> None:
    t = tables(name)
    reb = groups.rebalances(t)
    assert set(reb["group_id"]) == {g["group_id"] for g in truth(name)["groups"]}
    assert (reb["duration_ms"] > 0).all() and set(reb["protocol"]) <= {"range", "roundrobin", "cooperative-sticky"}
    errs = groups.group_errors(t)
    assert set(errs["error_name"]) == {"MEMBER_ID_REQUIRED"} and errs["expected"].all()  # KIP-394 first joins
    commits = lag.commit_lag(t)
    wire = {
        (g, tp, p, o)
        for g, tp, p, o in commits[["group_id", "topic", "partition", "committed_offset"]].itertuples(index=False)
    }
    told = {
        (c["group_id"], c["topic"], c["partition"], c["offset"])
        for c in truth(name)["commits"]
        if c.get("via") != "TxnOffsetCommit"
    }
    assert wire == told


def test_client_software_and_versions_kafka_4_removed() -> None:
    inv = clients.inventory(tables("librdkafka-transactions"), removed_version)
    client = truth("librdkafka-transactions")["client"]
    assert set(inv["software"]) == {f"confluent-kafka-python {client['version']}-rdkafka-{client['librdkafka']}"}
    assert inv["removed_versions"].isna().all()
    legacy = clients.inventory(tables("kcat-legacy-protocol"), removed_version)
    removed = {v for cell in legacy["removed_versions"].dropna() for v in cell.split(", ")}
    sent = {f"{r['api_name']} v{r['api_version']}" for r in truth("kcat-legacy-protocol")["requests_sent"]}
    assert removed == {"Produce v1", "Fetch v1"} and removed <= sent  # Metadata v0 is still accepted


def test_compression_ratio_per_codec() -> None:
    t = tables("librdkafka-produce-consume")
    comp = throughput.compression(t).set_index("compression")
    assert set(comp.index) == set(truth("librdkafka-produce-consume")["codecs_used"]) - {"none"}
    b = t["batches"]
    gzip = b[b["compression"] == "gzip"]
    assert comp.loc["gzip", "ratio"] == pytest.approx(gzip["decompressed_bytes"].sum() / gzip["compressed_bytes"].sum())
    assert (comp["ratio"] > 1).all()
