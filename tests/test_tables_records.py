"""Records and batches tables: produce offsets from the response, fetch records, CRC, aborted txns."""

from __future__ import annotations

from pathlib import Path

import kdissect
from kdissect.decoders.encoder import encode_request, encode_response
from kdissect.decoders.records_encode import control_record, encode_batch, new_record
from kdissect.synth.conversation import tcp_conversation
from tests.synthetic import MS, T0, write

GZIP, ZSTD = 1, 4


def _produce(cid: int, batch: bytes) -> bytes:
    body = {"acks": -1, "timeout_ms": 500,
            "topic_data": [{"name": "payments", "partition_data": [{"index": 1, "records": batch}]}]}
    return encode_request(0, 9, body, correlation_id=cid, client_id="p")


def _produce_response(cid: int, base_offset: int) -> bytes:
    body = {"responses": [{"name": "payments", "partition_responses": [{"index": 1, "base_offset": base_offset}]}]}
    return encode_response(0, 9, body, correlation_id=cid)


def _fetch(cid: int) -> bytes:
    body = {"max_wait_ms": 100, "min_bytes": 1, "max_bytes": 1 << 20,
            "topics": [{"topic": "payments", "partitions": [{"partition": 1, "fetch_offset": 0}]}]}
    return encode_request(1, 11, body, correlation_id=cid, client_id="c")


def _fetch_response(cid: int, records: bytes, aborted: list | None = None) -> bytes:
    body = {"responses": [{"topic": "payments", "partitions": [
        {"partition_index": 1, "high_watermark": 10, "records": records, "aborted_transactions": aborted}]}]}
    return encode_response(1, 11, body, correlation_id=cid)


def _capture(tmp_path: Path, msgs: list[tuple[int, bytes]]) -> kdissect.Capture:
    timed = [(d, m, T0 + i * MS) for i, (d, m) in enumerate(msgs)]
    return kdissect.open_capture(write(tmp_path / "r.pcap", tcp_conversation(timed)))


def test_produce_records_get_the_offsets_the_broker_assigned(tmp_path: Path) -> None:
    recs = [new_record(b"k%d" % i, b"v%d" % i, [("h", b"x")], offset=i, timestamp=1_700_000_000_000 + i)
            for i in range(3)]
    cap = _capture(tmp_path, [(0, _produce(1, encode_batch(recs, codec=ZSTD))), (1, _produce_response(1, 500))])
    r = cap._tables["records"]
    assert list(r["offset"]) == [500, 501, 502]
    assert list(r["key"]) == [b"k0", b"k1", b"k2"] and list(r["value"]) == [b"v0", b"v1", b"v2"]
    assert r["headers"].iloc[0] == [("h", b"x")]
    assert set(r["direction"]) == {"produce"} and set(r["topic"]) == {"payments"} and set(r["partition"]) == {1}
    assert set(r["compression"]) == {"zstd"} and r["crc_ok"].all()
    assert str(r["timestamp"].iloc[0]) == "2023-11-14 22:13:20+00:00"
    b = cap._tables["batches"]
    assert len(b) == 1 and b["record_count"].iloc[0] == 3 and b["compression_ratio"].iloc[0] > 0


def test_fetch_records_crc_failure_still_lists_records_and_flags_it(tmp_path: Path) -> None:
    good = encode_batch([new_record(b"a", b"1", offset=0)], base_offset=7, codec=GZIP)
    bad = bytearray(encode_batch([new_record(b"b", b"2", offset=0)], base_offset=8))
    bad[bad.rindex(b"2")] ^= 0x01  # flip one bit of the last record's value
    cap = _capture(tmp_path, [(0, _fetch(1)), (1, _fetch_response(1, good + bytes(bad)))])
    r = cap._tables["records"]
    assert list(r["offset"]) == [7, 8]
    assert list(r["crc_ok"]) == [True, False]
    assert set(r["direction"]) == {"fetch"}
    assert "crc_mismatch" in set(cap.anomalies["kind"].astype(str))


def test_aborted_transaction_records_and_control_markers(tmp_path: Path) -> None:
    txn = encode_batch([new_record(b"t", b"x", offset=0)], base_offset=3, producer_id=42, producer_epoch=1,
                       transactional=True)
    marker = encode_batch([control_record(0, coordinator_epoch=5)], base_offset=4, producer_id=42,
                          producer_epoch=1, transactional=True, control=True)
    cap = _capture(tmp_path, [(0, _fetch(1)), (1, _fetch_response(1, txn + marker, [
        {"producer_id": 42, "first_offset": 3}]))])
    r = cap._tables["records"]
    data = r[~r["is_control"].astype(bool)]
    assert list(data["aborted"]) == [True] and list(data["producer_id"]) == [42]
    ctl = r[r["is_control"].astype(bool)]
    assert list(ctl["control_type"].astype(str)) == ["abort"]


def test_truncated_trailing_fetch_batch_is_normal(tmp_path: Path) -> None:
    full = encode_batch([new_record(b"a", b"1" * 100, offset=0)], base_offset=0)
    cut = encode_batch([new_record(b"b", b"2" * 100, offset=0)], base_offset=1)[:70]  # header complete, record cut
    cap = _capture(tmp_path, [(0, _fetch(1)), (1, _fetch_response(1, full + cut))])
    assert list(cap._tables["records"]["offset"]) == [0]
    b = cap._tables["batches"]
    assert list(b["complete"]) == [True, False]
    assert set(cap.exchanges["status"].astype(str)) == {"ok"}


def test_cli_payload_modes_and_show_prints_records(tmp_path: Path) -> None:
    import subprocess
    import sys

    import pandas as pd

    recs = [new_record(b"key", b"v" * 50, offset=0), new_record(b"bin", b"\xff\x00\x01", offset=1)]
    timed = [(0, _produce(1, encode_batch(recs)), T0), (1, _produce_response(1, 9), T0 + MS)]
    path = write(tmp_path / "p.pcap", tcp_conversation(timed))

    def run(*args: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "kdissect.cli", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300)

    for flag, expect in (([], b"v" * 50), (["--preview", "4"], b"vvvv"), (["--no-payloads"], b"")):
        out_dir = tmp_path / ("o" + "".join(flag))
        res = run("analyze", str(path), "--out", str(out_dir), "--tables", "records", *flag)
        assert res.returncode == 0, res.stderr
        df = pd.read_parquet(out_dir / "records.parquet")
        assert df["value"].iloc[0] == expect and df["value_size"].iloc[0] == 50
    shown = run("show", str(path))
    assert 'value: "vvvv' in shown.stdout and "value: 0xff0001" in shown.stdout and "offset: 0" in shown.stdout
