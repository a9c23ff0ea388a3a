"""Whole pipeline (capture file -> tables) on synthetic captures of what goes wrong in real life."""

from __future__ import annotations

import gzip
import random
import subprocess
import sys
from pathlib import Path

import pytest

import kdissect
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.kafka_frames import produce_request, produce_response
from kdissect.testing.packets import Encapsulation
from kdissect.testing.synthetic import MS, T0, conversation, with_payload, write

ALL_CIDS = {*range(1, 7), *range(101, 107)}


def _statuses(path: Path, **kw) -> dict[int, str]:
    ex = kdissect.open_capture(path, **kw).exchanges
    return dict(zip(ex["correlation_id"].astype(int), ex["status"].astype(str), strict=True))


def test_clean_capture_on_an_unusual_port_needs_no_flags(tmp_path: Path) -> None:
    cap = kdissect.open_capture(write(tmp_path / "c.pcap", conversation(port=31337)))
    ex = cap.exchanges
    assert set(ex["correlation_id"]) == ALL_CIDS
    assert set(ex["status"]) == {"ok"}
    assert set(ex["broker_port"]) == {31337} and set(ex["client_port"]) == {40000}
    assert (ex["latency_ms"].dropna() > 0).all()
    assert len(cap.anomalies) == 0
    conn = cap.connections.iloc[0]
    assert bool(conn["is_kafka"]) and conn["frames_to_broker"] == 12 and conn["gaps"] == 0


def test_lost_segment_costs_only_the_exchanges_it_touches(tmp_path: Path) -> None:
    segs = conversation()
    # the 2nd segment of produce 103 (3000-byte records: 3 segments of 1448)
    produce_103 = [i for i, s in enumerate(segs) if s.payload[:4] and b"\x00\x00\x00\x67" in s.payload[:12]]
    lost = produce_103[0] + 1
    del segs[lost]
    path = write(tmp_path / "loss.pcap", segs)
    # The gap's length is known and falls inside produce 103, so the next frame boundary is too:
    # 103 keeps its header fields and still pairs with its (complete) response.
    cap = kdissect.open_capture(path)
    ex = cap.exchanges
    assert _statuses(path) == dict.fromkeys(ALL_CIDS, "ok")
    cut = ex[ex["warnings"].notna()]
    assert list(cut["correlation_id"]) == [103] and list(cut["api_name"]) == ["Produce"]
    assert cut["warnings"].iloc[0] == "only 1448 of 3050 bytes captured: body not decoded"
    an = cap.anomalies
    assert "gap" in set(an["kind"].astype(str))
    gap = an[an["kind"] == "gap"].iloc[0]
    assert gap["length"] == 1448 and gap["direction"] == "request"


def test_reordered_and_retransmitted_segments_change_nothing(tmp_path: Path) -> None:
    segs = conversation()
    rng = random.Random(7)
    shuffled = list(segs)
    for i in range(3, len(shuffled) - 4, 2):  # swap same-direction neighbours (a multi-segment message)
        a, b = shuffled[i], shuffled[i + 1]
        if a.src_port == b.src_port and a.payload and b.payload:
            shuffled[i], shuffled[i + 1] = b, a
    for d in [s for s in segs if s.payload and rng.random() < 0.3]:  # retransmitted a little later
        at = shuffled.index(d)
        shuffled.insert(min(len(shuffled) - 3, at + rng.randrange(1, 4)), d)
    path = write(tmp_path / "reorder.pcap", shuffled)
    cap = kdissect.open_capture(path)
    statuses = dict(zip(cap.exchanges["correlation_id"], cap.exchanges["status"].astype(str), strict=True))
    assert statuses == dict.fromkeys(ALL_CIDS, "ok")
    assert int(cap.connections["retransmissions"].iloc[0]) >= 1
    assert len(cap.anomalies) == 0


def test_capture_starting_mid_connection_picks_up_at_a_proven_frame(tmp_path: Path) -> None:
    segs = conversation()
    start = next(i for i, s in enumerate(segs) if b"\x00\x00\x00\x66" in s.payload[:12]) + 1  # inside produce 102
    path = write(tmp_path / "mid.pcap", segs[start:])
    statuses = _statuses(path)
    for cid in (3, 4, 5, 6, 103, 104, 105, 106):
        assert statuses[cid] == "ok"
    assert 102 not in statuses or statuses[102] == "orphan_response"
    assert {1, 2, 101} & set(statuses) == set()


def test_snap_length_cuts_large_frames_only(tmp_path: Path) -> None:
    path = write(tmp_path / "snap.pcap", conversation(), snaplen=200)
    cap = kdissect.open_capture(path)
    ex = cap.exchanges
    # Small frames fit in 200 bytes; the cut produce requests keep api, version, correlation id,
    # client id and real size from their captured head, and pair with their small responses.
    assert _statuses(path) == dict.fromkeys(ALL_CIDS, "ok")
    produce = ex[ex["api_name"] == "Produce"]
    assert set(produce["request_bytes"]) == {3050}
    assert set(produce["warnings"]) == {"only 146 of 3050 bytes captured: body not decoded"}
    assert ex[ex["api_name"] == "Metadata"]["warnings"].isna().all()
    assert set(cap.anomalies["kind"].astype(str)) == {"gap"}


@pytest.mark.parametrize("version", [2, 3, 9])  # acks first; after a string; after a compact string
def test_a_cut_acks0_produce_is_still_known_to_expect_no_answer(tmp_path: Path, version: int) -> None:
    """The body's leading fields survive a snap length: acks=0 is read from the captured head, so
    the cut request is settled as no_response_expected, not reported unanswered."""
    big = bytes(3000)
    msgs = [(0, produce_request(7, acks=0, records=big, version=version), T0),
            (0, produce_request(8, acks=1, records=big, version=version), T0 + MS),
            (1, produce_response(8, version=version), T0 + 2 * MS)]
    path = write(tmp_path / "acks0.pcap", tcp_conversation(msgs), snaplen=200)
    assert _statuses(path) == {7: "no_response_expected", 8: "ok"}
    request = next(ex.request for ex in kdissect.open_capture(path).exchanges_iter() if ex.request.correlation_id == 7)
    assert request.body["acks"] == 0 and request.body["timeout_ms"] == 1000 and "topic_data" not in request.body
    assert request.error.startswith("only ")


def test_tls_on_the_kafka_port_is_flagged_encrypted(tmp_path: Path) -> None:
    segs = conversation(1)
    hello = b"\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03" + bytes(190)
    data = [i for i, s in enumerate(segs) if s.payload]
    segs[data[0]] = with_payload(segs[data[0]], hello)
    cap = kdissect.open_capture(write(tmp_path / "tls.pcap", segs[: data[0] + 1]))
    conn = cap.connections.iloc[0]
    assert bool(conn["encrypted"])
    assert len(cap.exchanges) == 0
    assert "tls_no_key" in set(cap.anomalies["kind"].astype(str))


def test_garbage_on_the_kafka_port_never_crashes(tmp_path: Path) -> None:
    rng = random.Random(3)
    segs = conversation(2)
    segs = [with_payload(s, rng.randbytes(len(s.payload))) if s.payload else s for s in segs]
    cap = kdissect.open_capture(write(tmp_path / "garbage.pcap", segs))
    assert len(cap.exchanges) == 0 or set(cap.exchanges["status"].astype(str)) <= {"undecodable", "orphan_response"}
    assert len(cap.connections) == 1


def test_four_tuple_reused_by_a_new_connection(tmp_path: Path) -> None:
    first = conversation(2)
    second = conversation(2, t0=first[-1].ts_ns + 10**9, isn=(7_000_000, 9_000_000))
    cap = kdissect.open_capture(write(tmp_path / "reuse.pcap", first + second))
    assert len(cap.connections) == 2
    ex = cap.exchanges
    assert len(ex) == 8 and set(ex["status"].astype(str)) == {"ok"}
    assert ex["connection_id"].nunique() == 2


def test_link_types_and_containers_give_the_same_exchanges(tmp_path: Path) -> None:
    segs = conversation(3)
    base = kdissect.open_capture(write(tmp_path / "eth.pcap", segs)).exchanges[["correlation_id", "status"]]
    variants = {
        "vlan.pcapng": {"encap": Encapsulation(vlans=(10, 20)), "fmt": "pcapng"},
        "ns.pcap": {"nanosecond": True, "byteorder": "big"},
    }
    for name, kw in variants.items():
        other = kdissect.open_capture(write(tmp_path / name, segs, **kw)).exchanges[["correlation_id", "status"]]
        assert other.equals(base), name
    gz = tmp_path / "eth.pcap.gz"
    gz.write_bytes(gzip.compress((tmp_path / "eth.pcap").read_bytes()))
    assert kdissect.open_capture(gz).exchanges[["correlation_id", "status"]].equals(base)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kdissect.cli", *args], capture_output=True, text=True, timeout=300)


def test_cli_on_a_capture_with_no_kafka(tmp_path: Path) -> None:
    from kdissect.testing.conversation import tcp_conversation
    from kdissect.testing.pcapwrite import write_capture

    http = [(0, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", 1), (1, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 2)]
    path = tmp_path / "http.pcap"
    path.write_bytes(write_capture(tcp_conversation(http, server=("10.0.0.2", 8080))))
    out = _cli("analyze", str(path))
    assert out.returncode == 0, out.stderr
    assert "no Kafka traffic found" in out.stdout


def test_cli_unreadable_files_fail_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("hello, not a capture\n")
    for target in (str(bad), str(tmp_path / "missing.pcap")):
        out = _cli("analyze", target)
        assert out.returncode != 0
        assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_cli_analyze_writes_every_table(tmp_path: Path) -> None:
    path = write(tmp_path / "c.pcap", conversation(2, port=19092))
    for fmt in ("parquet", "csv", "jsonl"):
        out = _cli("analyze", str(path), "--out", str(tmp_path / fmt), "--format", fmt)
        assert out.returncode == 0, out.stderr
        assert "Produce" in out.stdout and "Metadata" in out.stdout
        names = {p.name for p in (tmp_path / fmt).iterdir()}
        assert {f"exchanges.{fmt}", f"partitions.{fmt}", f"errors.{fmt}", f"connections.{fmt}", f"brokers.{fmt}",
                f"anomalies.{fmt}"} <= names
    out = _cli("analyze", str(path), "--out", str(tmp_path / "only"), "--tables", "exchanges", "--format", "csv")
    assert sorted(p.name for p in (tmp_path / "only").iterdir()) == ["exchanges.csv"]


def test_cli_show_filters_exchanges(tmp_path: Path) -> None:
    path = write(tmp_path / "c.pcap", conversation(2))
    out = _cli("show", str(path), "--filter", 'api_name == "Produce" and correlation_id == 102')
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("=== conn") == 1 and "corr=102" in out.stdout and "partition_data" in out.stdout
    bad = _cli("show", str(path), "--filter", "__import__('os').system('true')")
    assert bad.returncode == 2 and "not allowed" in bad.stderr
