"""The analysis figures on the synthetic three-broker cluster of ``kdissect/testing/cluster.py``, whose
every latency, error, rebalance, lag, transaction and partition state is known by construction."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import kdissect
from kdissect.analysis import (
    clients,
    errors,
    groups,
    kafka_latency,
    lag,
    throughput,
    timeseries,
    topology,
    transactions,
)
from kdissect.analysis.latency import latency_by
from kdissect.analysis.overview import overview
from kdissect.decoders.apis import removed_version
from kdissect.engines import local
from kdissect.testing.cluster import cluster_capture

NODES = ["node 1 10.0.0.11:9092 (rack r1)", "node 2 10.0.0.12:9092 (rack r2)", "node 3 10.0.0.13:9092 (rack r3)"]


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cluster_capture(tmp_path_factory.mktemp("cluster") / "cluster.pcap")


@pytest.fixture(scope="module")
def tables(capture: Path) -> dict[str, pd.DataFrame]:
    return kdissect.open_capture(capture).tables


def rows(frame: pd.DataFrame, **match: object) -> pd.DataFrame:
    for column, value in match.items():
        frame = frame[frame[column] == value]
    return frame


def test_brokers_are_named_by_node_id_host_and_rack(tables: dict[str, pd.DataFrame]) -> None:
    by_broker = latency_by(tables, "broker")
    assert sorted(by_broker["broker"]) == NODES
    assert dict(zip(by_broker["broker"], by_broker["count"], strict=True)) == {NODES[0]: 12, NODES[1]: 5, NODES[2]: 13}
    produce_1 = rows(latency_by(tables, "broker_api"), broker=NODES[0], api_name="Produce").iloc[0]
    assert produce_1["count"] == 5 and produce_1["max"] == pytest.approx(800)


def test_latency_by_topic_and_client(tables: dict[str, pd.DataFrame]) -> None:
    by_topic = latency_by(tables, "topic").set_index("topic")
    assert by_topic.loc["orders", "max"] == pytest.approx(1500) and by_topic.loc["payments", "max"] == pytest.approx(3)
    by_client = latency_by(tables, "client_id").set_index("client_id")
    assert by_client.loc["app-producer", "count"] == 8  # the acks=0 Produce has no latency
    assert by_client.loc["legacy-app", "p50"] == pytest.approx(1)


def test_fetch_long_polls_are_judged_against_their_max_wait(tables: dict[str, pd.DataFrame]) -> None:
    waits = kafka_latency.fetch_waits(tables).set_index("broker")
    node1 = waits.loc[NODES[0]]
    assert (node1["fetches"], node1["returned_data"], node1["waited_full"], node1["overran"]) == (4, 2, 2, 1)
    assert node1["max_wait_ms"] == 500


def test_slowest_leaves_out_waits_within_their_bound(tables: dict[str, pd.DataFrame]) -> None:
    slow = kafka_latency.slowest(tables, 5)
    first, second = slow.iloc[0], slow.iloc[1]
    assert (first["api_name"], first["latency_ms"], first["bound_ms"]) == ("Fetch", 1500, 500)
    assert (second["api_name"], second["latency_ms"], second["broker"]) == ("Produce", 800, NODES[0])
    assert "JoinGroup" not in set(slow["api_name"])  # held 300 and 500 ms, within the 30 s rebalance timeout
    assert 499 not in set(slow["latency_ms"])  # the empty long poll


def test_produce_is_split_by_acks(tables: dict[str, pd.DataFrame]) -> None:
    by_acks = kafka_latency.produce_by_acks(tables).set_index("acks")
    assert by_acks.loc[-1, "count"] == 4 and by_acks.loc[-1, "max"] == pytest.approx(800)
    assert by_acks.loc[1, "count"] == 3 and by_acks.loc[1, "max"] == pytest.approx(1)
    assert 0 not in by_acks.index  # acks=0 expects no answer: nothing to time


def test_errors_by_name_with_the_member_id_step_expected(tables: dict[str, pd.DataFrame]) -> None:
    by_code = errors.errors_by(tables, "code")
    counts = dict(zip(by_code["error_name"], by_code["count"], strict=True))
    assert counts == {
        "LEADER_NOT_AVAILABLE": 2,
        "NOT_LEADER_OR_FOLLOWER": 1,
        "REBALANCE_IN_PROGRESS": 1,
        "MEMBER_ID_REQUIRED": 1,
    }
    assert list(by_code["expected"]) == [False, False, False, True]  # the normal step sorts last
    assert errors.headline_errors(tables) == 4
    by_topic = errors.errors_by(tables, "topic")
    assert rows(by_topic, error_name="NOT_LEADER_OR_FOLLOWER").iloc[0]["partition"] == 1
    assert set(errors.errors_by(tables, "broker")["broker"]) == {NODES[0], NODES[2]}


def test_rebalances_generations_and_assignments(tables: dict[str, pd.DataFrame]) -> None:
    reb = groups.rebalances(tables)
    assert list(reb["generation"]) == [1, 2]
    assert list(reb["duration_ms"]) == pytest.approx([305, 503])
    assert list(reb["members"]) == [2, 1]
    assert list(reb["assignments"]) == ["m1: orders[0,1]", "m1: orders[0,1,2]"]
    assert list(reb["joins"]) == [2, 1]  # the first includes the MEMBER_ID_REQUIRED round trip
    errs = groups.group_errors(tables)
    assert dict(zip(errs["error_name"], errs["expected"], strict=True)) == {
        "REBALANCE_IN_PROGRESS": False,
        "MEMBER_ID_REQUIRED": True,
    }
    timeline = groups.timeline(tables)
    assert list(rows(timeline, group_id="orders-group")["api_name"])[:3] == [
        "FindCoordinator",
        "JoinGroup",
        "JoinGroup",
    ]


def test_kip848_member_epochs(tables: dict[str, pd.DataFrame]) -> None:
    epochs = groups.member_epochs(tables)
    assert list(epochs["member_epoch"]) == [1, 2]
    assert epochs.iloc[0]["assignment"] == "payments[0]"  # topic id named from Metadata


def test_lag_of_the_lagging_consumer(tables: dict[str, pd.DataFrame]) -> None:
    fetch_lag = lag.fetch_lag(tables)
    orders = rows(fetch_lag, topic="orders")
    assert list(orders["lag"]) == [400, 395, 395, 220]
    assert set(orders["group_id"]) == {"orders-group"}
    summary = rows(lag.lag_summary(tables), topic="orders").iloc[0]
    assert (summary["max_lag"], summary["last_lag"], summary["fetches"]) == (400, 220, 4)
    commit = lag.commit_lag(tables).iloc[0]
    assert (commit["group_id"], commit["committed_offset"], commit["log_end"], commit["lag"]) == (
        "orders-group",
        150,
        520,
        370,
    )


def test_the_aborted_transaction_and_its_records(tables: dict[str, pd.DataFrame]) -> None:
    txns = transactions.transactions(tables)
    assert len(txns) == 1
    txn = txns.iloc[0]
    assert (txn["transactional_id"], txn["producer_id"], txn["outcome"], txn["partitions"]) == (
        "tx-1",
        7000,
        "abort",
        "payments[0]",
    )
    assert txn["duration_ms"] == pytest.approx(93)
    recs = transactions.transactional_records(tables)
    assert len(recs) == 6 and set(recs["outcome"]) == {"aborted"} and set(recs["rule"]) == {"abort marker"}
    assert sorted(recs["offset"]) == [10, 10, 11, 11, 12, 12] and set(recs["transactional_id"]) == {"tx-1"}
    # the broker's list was empty; the records table marks them from the ABORT marker, as analysis does
    data = tables["records"][~tables["records"]["is_control"].fillna(False).astype(bool)]
    marked = data[data["aborted"].fillna(False).astype(bool)]
    assert len(marked) == 6 and set(marked["aborted_by"].astype(str)) == {"abort_marker"}


def test_abort_rules_without_the_marker(tables: dict[str, pd.DataFrame]) -> None:
    """No ABORT marker in the capture: produced records fall back to their producer's EndTxn(abort);
    records the broker lists as aborted are marked by that list."""
    records = tables["records"]
    unmarked = records.assign(aborted=False, aborted_by=None)  # as the table is without the marker
    without_marker = {**tables, "records": unmarked[~unmarked["is_control"].fillna(False).astype(bool)]}
    recs = transactions.transactional_records(without_marker)
    assert set(rows(recs, direction="produce")["rule"]) == {"EndTxn abort"}
    assert rows(recs, direction="fetch")["rule"].isna().all()
    assert set(rows(recs, direction="fetch")["outcome"]) == {"unknown"}
    listed = without_marker["records"].copy()
    listed["aborted"] = listed["direction"] == "fetch"
    recs = transactions.transactional_records({**without_marker, "records": listed})
    assert set(rows(recs, direction="fetch")["rule"]) == {"broker aborted list"}


def test_topology_health_and_leader_changes(tables: dict[str, pd.DataFrame]) -> None:
    bad = topology.unhealthy(tables).set_index("partition")
    assert list(bad.index) == [1, 2] and set(bad["topic"]) == {"orders"}
    assert bad.loc[2, "leaderless"] and bad.loc[2, "leader_id"] == -1
    assert bad.loc[1, "under_replicated"] and bad.loc[1, "offline"] and not bad.loc[1, "leaderless"]
    changes = topology.leader_changes(tables)
    assert [
        tuple(r) for r in changes[["topic", "partition", "previous_leader", "leader_id"]].itertuples(index=False)
    ] == [("orders", 0, 1, 2)]
    assert list(topology.brokers(tables)["host"].drop_duplicates()) == ["10.0.0.11", "10.0.0.12", "10.0.0.13"]


def test_client_inventory_flags_versions_kafka_4_removed(tables: dict[str, pd.DataFrame]) -> None:
    inv = clients.inventory(tables, removed_version).set_index("client_id")
    assert inv.loc["legacy-app", "removed_versions"] == "Produce v2"
    assert inv.loc["app-producer", "software"] == "synth-client 1.2.3"
    assert pd.isna(inv.loc["app-producer", "removed_versions"])
    assert inv.loc["app-consumer-1", "connections"] == 3


def test_throughput_per_topic_and_partition(tables: dict[str, pd.DataFrame]) -> None:
    by_topic = throughput.per_topic(tables).set_index(["direction", "topic"])
    assert by_topic.loc[("produce", "orders"), "records"] == 13
    assert by_topic.loc[("fetch", "orders"), "records"] == 10
    assert by_topic.loc[("fetch", "payments"), "records"] == 3  # the ABORT marker is not data
    span = throughput.capture_span_s(tables)
    assert span == pytest.approx(6.001, abs=1e-3)
    assert by_topic.loc[("produce", "orders"), "records_per_s"] == pytest.approx(13 / span)
    assert throughput.compression(tables).empty  # every batch is uncompressed: no codec to rate


def test_time_series_and_overview(tables: dict[str, pd.DataFrame], capture: Path) -> None:
    series = timeseries.time_series(tables)
    assert series["requests"].sum() == 31 and series["errors"].sum() == 4
    first = series.iloc[0]
    assert first["requests"] == 16 and first["p50_ms"] is not None
    assert first["p99_ms"] is None  # 16 latencies do not support a p99 (MIN_SAMPLES)
    o = overview(tables, local.analyze([capture]).summary, files=[str(capture)])
    assert (o.brokers, o.exchanges, o.errors, o.expected_errors, o.kafka_connections) == (3, 31, 4, 1, 8)


def test_a_join_without_rebalance_timeout_is_bounded_by_its_session_timeout(tables: dict[str, pd.DataFrame]) -> None:
    """JoinGroup v0 carries only a session timeout (10 s here): the 300 and 500 ms waits are within it."""
    v0 = tables["request_params"].assign(rebalance_timeout_ms=pd.NA)
    joins = kafka_latency.join_waits({**tables, "request_params": v0})
    assert list(joins["expected_wait"]) == [True, True, True]
    short = v0.assign(session_timeout_ms=400)
    assert list(kafka_latency.join_waits({**tables, "request_params": short})["expected_wait"]) == [True, True, False]
