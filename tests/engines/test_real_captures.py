"""The real capture corpus (captures/*.pcap*, made by captures/make_captures.py) against the ground
truth each client wrote next to it: what it sent, produced, consumed, committed and administered.

Every capture is opened with no options, as a new user would (brokers on 19092, 29092 and 39092
are found by auto-detection). Where a capture departs from "every request decoded and paired",
the departure is listed in ``QUIRKS`` with its reason, and asserted exactly.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pandas as pd
import pytest

import kdissect

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
NAMES = sorted(p.name.removesuffix(".truth.json") for p in CAPTURES.glob("*.truth.json"))
SNAPLEN, MIDSTREAM = "librdkafka-snaplen200", "librdkafka-midstream-produce"
WHOLE = [n for n in NAMES if n not in (SNAPLEN, MIDSTREAM)]  # every frame captured in full
GROUP_APIS = {8, 9, 11, 12, 14, 28}  # requests whose body names the consumer group (group_id)


@dataclass(frozen=True)
class Quirk:
    """What a capture is known to show besides clean, paired, error-free exchanges, and why."""

    anomaly_kinds: frozenset[str] = frozenset()
    statuses: dict[str, int] = field(default_factory=dict)  # non-ok statuses -> count
    unanswered: tuple[str, ...] = ()  # api names left unanswered, in order
    errors: frozenset[tuple[str, str]] = frozenset({("JoinGroup", "MEMBER_ID_REQUIRED")})
    warnings: dict[str, int] = field(default_factory=dict)  # warning code -> count
    why: str = ""


# MEMBER_ID_REQUIRED is how every JoinGroup v4+ starts (KIP-394): the broker hands out the id.
QUIRKS: dict[str, Quirk] = {
    "sasl-scram-logins": Quirk(
        errors=frozenset({("SaslAuthenticate", "SASL_AUTHENTICATION_FAILED")}),
        why="no user exists: every SCRAM login ends in e=unknown-user (with error_code 0: only the token says so)"),
    "kafka-python-admin": Quirk(
        statuses={"unanswered": 1}, unanswered=("DeleteRecords",),
        errors=frozenset({("CreateTopics", "TOPIC_ALREADY_EXISTS")}),
        why="tansu closes the connection on DeleteRecords; the duplicate create is refused on purpose"),
    "librdkafka-admin": Quirk(
        errors=frozenset({("CreateTopics", "TOPIC_ALREADY_EXISTS")}), warnings={"trailing_bytes": 1},
        why="librdkafka 2.16's describe_cluster Metadata v12 request carries 3 bytes after its body"),
    "kafka-python-produce-consume": Quirk(
        warnings={"acks0_answered": 1},
        why="tansu answers the acks=0 Produce request: paired and flagged, not an orphan"),
    "kcat-apiversions-loop": Quirk(errors=frozenset(), why="three ApiVersions exchanges, nothing else"),
    "kcat-legacy-protocol": Quirk(
        errors=frozenset({("Produce", "UNKNOWN_PRODUCER_ID")}),
        why="tansu refuses the magic-0 Produce v1 requests"),
    "librdkafka-snaplen200": Quirk(
        anomaly_kinds=frozenset({"gap"}), statuses={"truncated": 19},
        why="snap length 200: frames over 134 bytes of payload are cut; gaps of known length keep the "
            "framing in sync, so every exchange is still paired"),
    "librdkafka-midstream-produce": Quirk(
        anomaly_kinds=frozenset({"midstream", "truncated_frame"}),
        statuses={"orphan_response": 3, "unanswered": 2}, unanswered=("Produce", "Produce"), errors=frozenset(),
        warnings={"inferred": 3},
        why="the capture starts mid-connection and stops after 40 packets, inside a Produce request: the "
            "answers to the 3 requests sent before it are orphans (decoded as Produce v10 responses by "
            "inference from the requests seen), the 2 requests in it are unanswered"),
}


@cache
def truth(name: str) -> dict:
    return json.loads((CAPTURES / f"{name}.truth.json").read_text())


@cache
def capture(name: str) -> kdissect.Capture:
    cap = kdissect.open_capture(CAPTURES / truth(name)["capture"]["file"])
    cap.exchanges  # noqa: B018 - decode once, shared by every test of this capture
    return cap


@cache
def exchanges(name: str) -> list:
    return list(capture(name).exchanges_iter())


def requests(name: str, api_key: int) -> list[dict]:
    return [ex.request.body for ex in exchanges(name)
            if ex.request is not None and ex.request.api_key == api_key and ex.request.body is not None]


def hexed(data) -> str | None:
    return None if data is None or data is pd.NA else bytes(data).hex()


def record_key(row) -> tuple:
    """(topic, partition, key, value, headers) of a records-table row, bytes as hex."""
    headers = tuple((k, hexed(v)) for k, v in row["headers"])
    return row["topic"], int(row["partition"]), hexed(row["key"]), hexed(row["value"]), headers


def truth_key(rec: dict) -> tuple:
    headers = tuple((h["key"], h["value"] and h["value"]["hex"]) for h in rec["headers"])
    return (rec["topic"], rec["partition"], rec["key"] and rec["key"]["hex"], rec["value"] and rec["value"]["hex"],
            headers)


def records_of(name: str, direction: str) -> pd.DataFrame:
    r = capture(name).records
    return r[(r["direction"] == direction) & ~r["is_control"].astype(bool)]


def test_the_corpus_is_complete_and_small() -> None:
    assert len(NAMES) == 12
    total = sum((CAPTURES / truth(n)["capture"]["file"]).stat().st_size for n in NAMES)
    assert total < 4_000_000


@pytest.mark.parametrize("name", NAMES)
def test_capture_file_matches_what_the_capture_tool_wrote(name: str) -> None:
    cap, facts = capture(name), truth(name)["capture"]
    assert (CAPTURES / facts["file"]).stat().st_size == facts["bytes"]
    assert facts["tool_stats"]["packets_dropped"] == 0
    conns = cap.connections
    assert conns["is_kafka"].all()
    assert set(conns["broker_port"]) == {truth(name)["broker"]["port"]}


@pytest.mark.parametrize("name", NAMES)
def test_no_undecodable_frame_and_only_the_documented_anomalies(name: str) -> None:
    quirk = QUIRKS.get(name, Quirk())
    cap = capture(name)
    assert set(cap.anomalies["kind"].astype(str)) == quirk.anomaly_kinds, quirk.why
    statuses = Counter(cap.exchanges["status"].astype(str))
    statuses.pop("ok", None)
    statuses.pop("error", None)
    assert dict(statuses) == quirk.statuses, quirk.why
    ex = cap.exchanges
    assert tuple(ex[ex["status"] == "unanswered"]["api_name"].astype(str)) == quirk.unanswered
    assert (cap.batches["crc_ok"].astype(bool)).all()


@pytest.mark.parametrize("name", NAMES)
def test_errors_are_exactly_the_expected_ones(name: str) -> None:
    quirk = QUIRKS.get(name, Quirk())
    err = capture(name).errors
    assert set(zip(err["api_name"].astype(str), err["error_name"].astype(str), strict=True)) == quirk.errors
    ex = capture(name).exchanges
    assert set(ex[ex["status"] == "error"]["api_name"].astype(str)) == {api for api, _ in quirk.errors}


@pytest.mark.parametrize("name", NAMES)
def test_message_warnings_are_the_documented_ones(name: str) -> None:
    quirk = QUIRKS.get(name, Quirk())
    codes = Counter(w["code"] for ex in exchanges(name) for m in (ex.request, ex.response) if m is not None
                    for w in m.warnings)
    codes.pop("cut", None)  # snap-length cuts are counted through their "truncated" exchanges
    assert dict(codes) == quirk.warnings, quirk.why


@pytest.mark.parametrize("name", [n for n in NAMES if not truth(n)["capture"]["starts_mid_connection"]])
def test_requests_match_what_the_client_logged_it_sent(name: str) -> None:
    """Api key, version and count of every request, against the client's own protocol log."""
    ex = capture(name).exchanges
    sent = ex[ex["api_key"].notna() & ex["status"].ne("orphan_response")]
    got = Counter(zip(sent["api_key"].astype(int), sent["api_version"].astype(int), strict=True))
    want = Counter({(r["api_key"], r["api_version"]): r["count"] for r in truth(name)["requests_sent"]})
    assert got == want
    assert sorted({k for k, _ in got}) == truth(name)["expected_api_keys"]
    # correlation ids run 1, 2, 3, ... on every librdkafka/kafka-python connection: none lost, none doubled
    for _, conn in sent.groupby("connection_id"):
        cids = sorted(conn["correlation_id"].astype(int))
        assert len(cids) == len(set(cids))


def test_midstream_capture_holds_only_produce_requests_of_the_stream() -> None:
    name = "librdkafka-midstream-produce"
    ex = capture(name).exchanges
    assert set(ex["api_name"].dropna().astype(str)) == {"Produce"}
    assert set(ex["api_version"].dropna().astype(int)) == {10}
    assert set(ex["client_id"].dropna().astype(str)) == {"confluent-kafka-bulk"}
    assert len(ex[ex["status"] == "unanswered"]) <= truth(name)["requests_sent"][0]["count"]


def test_midstream_records_are_exactly_the_generated_stream() -> None:
    """Every record found is bulk-%06d with its generated 100 KB value and offset seq + shift."""
    name = "librdkafka-midstream-produce"
    window = truth(name)["produced_window"]["possibly_in_capture"]
    shift = window["offset_minus_seq"]
    recs = records_of(name, "produce")
    assert len(recs) >= 10
    seqs = []
    for _, row in recs.iterrows():
        key = bytes(row["key"])
        seq = int(key.decode().removeprefix("bulk-"))
        phrase = b"bulk-%06d " % seq
        assert key == b"bulk-%06d" % seq
        assert bytes(row["value"]) == (phrase * (100_000 // len(phrase) + 1))[:100_000]
        assert window["seq_first"] <= seq <= window["seq_last"]
        seqs.append(seq)
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # consecutive: no record lost or doubled
    # offsets are only known where the response to that Produce request is in the capture
    known = recs[recs["offset"].notna()]
    assert all(int(r["offset"]) == int(bytes(r["key"])[5:]) + shift for _, r in known.iterrows())


@pytest.mark.parametrize("name", WHOLE)
def test_every_produced_record_is_in_the_produce_requests(name: str) -> None:
    produced = truth(name)["produced"]
    recs = records_of(name, "produce")
    assert Counter(record_key(r) for _, r in recs.iterrows()) == Counter(truth_key(p) for p in produced)
    by_key = {record_key(r): r for _, r in recs.iterrows()}
    for p in produced:
        row = by_key[truth_key(p)]
        if p["delivered"] and p["acks"] != 0:  # the offset the broker assigned, learned from its answer
            assert int(row["offset"]) == p["offset"], p
        elif not p["delivered"]:  # refused: the request's offsets are placeholders, not reported
            assert row["offset"] is pd.NA, p
        codec = {"none": "none"}.get(p["codec"], p["codec"])
        assert str(row["compression"]) == codec
        assert bool(row["transactional"]) == ("transactional_id" in p)


@pytest.mark.parametrize("name", WHOLE)
def test_every_consumed_record_is_in_the_fetch_responses_at_its_offset(name: str) -> None:
    consumed = truth(name)["consumed"]
    recs = records_of(name, "fetch")
    got = {(*record_key(r), int(r["offset"])) for _, r in recs.iterrows()}
    want = {(*truth_key(c), c["offset"]) for c in consumed}
    assert want <= got
    # nothing fetched that no consumer handed over, except what the consumer group re-fetched
    assert {g[:5] for g in got} == {w[:5] for w in want}


@pytest.mark.parametrize("name", [n for n in WHOLE if truth(n)["commits"]])
def test_commits_appear_in_partitions(name: str) -> None:
    parts = capture(name).partitions
    for api, via in (("OffsetCommit", None), ("TxnOffsetCommit", "TxnOffsetCommit")):
        want = Counter((c["topic"], c["partition"], c["offset"]) for c in truth(name)["commits"]
                       if c.get("via") == via or (via is None and c.get("via") != "TxnOffsetCommit"))
        rows = parts[(parts["api_name"] == api) & parts["committed_offset"].notna()]
        got = Counter(zip(rows["topic"].astype(str), rows["partition"].astype(int),
                          rows["committed_offset"].astype(int), strict=True))
        assert got == want, api


@pytest.mark.parametrize("name", [n for n in WHOLE if truth(n)["groups"] or truth(n)["commits"]])
def test_groups_named_in_requests(name: str) -> None:
    groups = {g["group_id"] for g in truth(name)["groups"]} | {c["group_id"] for c in truth(name)["commits"]}
    seen = {body["group_id"] for key in GROUP_APIS for body in requests(name, key) if "group_id" in body}
    assert groups <= seen
    join = {body["group_id"] for body in requests(name, 11)}
    assert join == {g["group_id"] for g in truth(name)["groups"]}


@pytest.mark.parametrize("name", [n for n in NAMES if n != MIDSTREAM])
def test_brokers_and_client_software(name: str) -> None:
    t = truth(name)
    cap = capture(name)
    if {3, 10, 60} & set(t["expected_api_keys"]):
        b = cap.brokers
        assert set(zip(b["node_id"].astype(int), b["host"].astype(str), b["port"].astype(int), strict=True)) == {
            (t["broker"]["node_id"], t["broker"]["address"], t["broker"]["port"])}
    software = set(cap.connections["software_version"].dropna().astype(str))
    client = t["client"]
    if "software_versions" in client:  # several clients in one capture
        assert software == set(client["software_versions"])
    elif client["library"] == "confluent-kafka":
        assert software == {f"{client['version']}-rdkafka-{client['librdkafka']}"}
    elif client["library"] == "kafka-python" or (client["library"] == "kcat" and 18 in t["expected_api_keys"]):
        assert software == {client.get("librdkafka") or client["version"]}
    else:  # aiokafka (ApiVersions v0), kafkajs (v2), kcat forced to 0.9: no software fields on the wire
        assert software == set()


@pytest.mark.parametrize("name", [n for n in NAMES if truth(n)["admin_ops"]])
def test_admin_operations_on_the_wire(name: str) -> None:
    t = truth(name)
    created = [(topic["name"], topic["num_partitions"]) for body in requests(name, 19) for topic in body["topics"]]
    assert created == [(c["name"], c["partitions"]) for c in t["topics_created"]] + [
        (a["args"]["topics"][0]["name"], a["args"]["topics"][0]["partitions"])
        for a in t["admin_ops"] if a["op"] == "create_topics_again"]
    deleted = [topic if isinstance(topic, str) else topic["name"] for body in requests(name, 20)
               for topic in body.get("topic_names") or body.get("topics") or []]  # v0-5 names, v6+ structs
    assert deleted == t["topics_deleted"]
    refused_by_client = [a for a in t["admin_ops"] if a["op"] == "create_partitions"]
    assert refused_by_client and not requests(name, 37)  # neither client sends CreatePartitions to tansu
    for op in t["admin_ops"]:
        if op["op"] == "incremental_alter_configs":
            [body] = requests(name, 44)
            [res] = body["resources"]
            assert res["resource_name"] == "inventory"
            assert [(c["name"], c["value"]) for c in res["configs"]] == list(op["args"]["set"].items())
        if op["op"] == "delete_groups":
            assert [g for body in requests(name, 42) for g in body["groups_names"]] == op["args"]["groups"]


def test_transactions_markers_and_flags() -> None:
    name = "librdkafka-transactions"
    t = truth(name)
    txn_id = t["transactions"][0]["transactional_id"]
    assert {b["transactional_id"] for b in requests(name, 22)} == {txn_id}  # InitProducerId
    assert {b["transactional_id"] for b in requests(name, 26)} == {txn_id}  # EndTxn
    assert [b["committed"] for b in requests(name, 26)] == [
        a["action"] == "commit_transaction" for a in t["transactions"] if a["action"].endswith("_transaction")
        and a["action"] != "send_offsets_to_transaction" and a["action"] != "begin_transaction"]
    [add_offsets] = requests(name, 25)
    assert add_offsets["group_id"] == t["groups"][0]["group_id"]
    recs = capture(name).records
    fetched = recs[recs["direction"] == "fetch"]
    markers = fetched[fetched["is_control"].astype(bool)]
    assert list(markers["control_type"].astype(str)) == ["commit", "abort"]
    assert set(markers["topic"].astype(str)) == {"payments"}
    # each marker sits right after the records of its transaction
    sink = fetched[fetched["topic"] == "payments"].sort_values("offset")
    kinds = ["marker:" + str(r["control_type"]) if r["is_control"] else bytes(r["key"]).decode()
             for _, r in sink.iterrows()]
    assert kinds == ["txn-input-none-0", "txn-input-none-1", "txn-input-none-2", "marker:commit",
                     "doomed-0", "doomed-1", "marker:abort"]
    producers = set(sink["producer_id"].astype(int))
    assert len(producers) == 1 and producers.pop() >= 0
    assert sink["transactional"].astype(bool).all()
    # tansu lists no aborted transactions in its Fetch responses (a broker quirk), but the capture
    # holds the ABORT marker (fetched) and the EndTxn with committed=false (produced): the aborted
    # transaction's records are marked, each with the rule that marked it (the marker's name wins over
    # EndTxn's for the produced ones, whose offsets the Produce response gave).
    fetch_bodies = [ex.response.body for ex in exchanges(name) if ex.request and ex.request.api_key == 1]
    assert all(not p["aborted_transactions"] for b in fetch_bodies for r in b["responses"] for p in r["partitions"])
    data = recs[~recs["is_control"].astype(bool) & (recs["topic"] == "payments")]
    by = data["aborted_by"].astype(object).where(data["aborted_by"].notna(), None)
    marked = {(d, bytes(k).decode(), bool(a), r) for d, k, a, r in
              zip(data["direction"], data["key"], data["aborted"], by, strict=True)}
    assert marked == {(d, f"txn-input-none-{i}", False, None) for d in ("produce", "fetch") for i in range(3)} | {
        ("produce", "doomed-0", True, "abort_marker"), ("produce", "doomed-1", True, "abort_marker"),
        ("fetch", "doomed-0", True, "abort_marker"), ("fetch", "doomed-1", True, "abort_marker")}
    assert not recs[recs["topic"] != "payments"]["aborted"].astype(bool).any()


def test_legacy_magic_zero_message_sets_from_kcat() -> None:
    name = "kcat-legacy-protocol"
    recs = records_of(name, "produce")
    assert set(recs["magic"].astype(int)) == {0}
    assert Counter(recs["compression"].astype(str)) == {"none": 2, "gzip": 2}
    assert recs["crc_ok"].astype(bool).all()
    gz = capture(name).batches
    gz = gz[(gz["direction"] == "produce") & (gz["compression"] == "gzip")]
    assert len(gz) == 1 and int(gz["records_decoded"].iloc[0]) == 2  # one wrapper, two inner messages
    # tansu answers Fetch v1 with magic-2 batches (a Kafka broker would down-convert to magic 0/1)
    assert set(records_of(name, "fetch")["magic"].astype(int)) == {2}


def test_answered_acks0_produce_is_paired_and_flagged() -> None:
    name = "kafka-python-produce-consume"
    assert truth(name)["acks0_used"]
    answered = [ex for ex in exchanges(name) if ex.request is not None and ex.request.api_key == 0
                and ex.request.body["acks"] == 0]
    assert len(answered) == 1
    [ex] = answered
    assert ex.status == "ok" and ex.response is not None
    assert [w["code"] for w in ex.response.warnings] == ["acks0_answered"]
    acks0 = [p for p in truth(name)["produced"] if p["acks"] == 0]
    topics = ex.request.body["topic_data"]
    assert {(t["name"], p["index"]) for t in topics for p in t["partition_data"]} == {
        (p["topic"], p["partition"]) for p in acks0}


def test_snap_length_cuts_keep_every_exchange_paired() -> None:
    name = "librdkafka-snaplen200"
    ex = capture(name).exchanges
    cut = ex[ex["status"] == "truncated"]  # the response was cut: header known, body not
    assert cut["api_name"].notna().all() and cut["correlation_id"].notna().all()
    assert {"Fetch", "Metadata", "ApiVersions"} <= set(cut["api_name"].astype(str))
    assert (cut["response_bytes"] > 134 + 4).all()  # 200 - 66 bytes of Ethernet/IP/TCP headers
    assert cut["warnings"].str.contains("only 134 of ").all()
    sent = Counter({r["api_name"]: r["count"] for r in truth(name)["requests_sent"]})
    # Produce requests are cut but their small answers are not: paired, decoded, flagged
    produce = ex[ex["api_name"] == "Produce"]
    assert len(produce) == sent["Produce"] and set(produce["status"]) == {"ok"}
    assert produce["warnings"].str.startswith("only 134 of ").all()
    commits = ex[ex["api_name"] == "OffsetCommit"]
    assert len(commits) == sent["OffsetCommit"] == len(truth(name)["commits"])
    assert set(commits["client_id"].astype(str)) == {"confluent-kafka-group-consumer"}
    assert len(capture(name).records) == 0  # every batch is longer than the snap length


@pytest.mark.parametrize("name", [n for n in NAMES if truth(n)["broker"]["port"] not in (9092, 9093, 9094)])
def test_analyze_finds_kafka_on_an_unusual_port_with_no_flags(name: str) -> None:
    """What a new user types first: `kdissect analyze FILE`, broker on 19092/29092/39092."""
    path = CAPTURES / truth(name)["capture"]["file"]
    done = subprocess.run([sys.executable, "-m", "kdissect.cli", "analyze", str(path)],
                          capture_output=True, text=True, timeout=120, check=True)
    conns = len(capture(name).connections)
    assert f"{conns} TCP connections ({conns} Kafka), {len(capture(name).exchanges)} exchanges" in done.stdout
    listed = {line.split()[0] for line in done.stdout.splitlines()[3:] if line[:1].isalpha() and ":" not in line}
    assert listed == set(capture(name).exchanges["api_name"].dropna().astype(str))
