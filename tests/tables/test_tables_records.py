"""Records and batches tables: produce offsets from the response, fetch records, CRC, aborted txns."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pandas as pd

import kdissect
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.encoder import encode_request, encode_response
from kdissect.testing.records_encode import control_record, encode_batch, new_record
from kdissect.testing.synthetic import MS, T0, write

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


def test_timestamps_and_offsets_beyond_what_a_table_can_hold_are_unknown_not_fatal(tmp_path: Path) -> None:
    """A hostile batch: a timestamp no datetime can hold and a base offset that overflows int64
    once the record's index is added. The run goes on; those cells are null, the rest is kept."""
    recs = [new_record(b"k%d" % i, b"v", offset=i, timestamp=2**62 + i) for i in range(2)]
    msgs = [(0, _produce(1, encode_batch(recs))), (1, _produce_response(1, 2**63 - 1))]
    cap = _capture(tmp_path, msgs)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "kdissect.cli", "analyze", str(tmp_path / "r.pcap"), "--out",
                           str(out), "--tables", "records"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for r in (cap.records, pd.read_parquet(out / "records.parquet")):
        assert list(r["key"]) == [b"k0", b"k1"] and r["timestamp"].isna().all()
        assert list(r["offset"].astype(object).where(r["offset"].notna(), None)) == [2**63 - 1, None]


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
    import pandas as pd

    recs = [new_record(b"key", b"v" * 50, offset=0), new_record(b"bin", b"\xff\x00\x01", offset=1)]
    timed = [(0, _produce(1, encode_batch(recs)), T0), (1, _produce_response(1, 9), T0 + MS)]
    path = write(tmp_path / "p.pcap", tcp_conversation(timed))

    def run(*args: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "kdissect.cli", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300)

    for flag, expect in (([], b"v" * 50), (["--preview", "4"], b"vvvv"), (["--no-payloads"], None)):
        out_dir = tmp_path / ("o" + "".join(flag))
        res = run("analyze", str(path), "--out", str(out_dir), "--tables", "records", *flag)
        assert res.returncode == 0, res.stderr
        df = pd.read_parquet(out_dir / "records.parquet")
        assert df["value"].iloc[0] == expect and df["value_size"].iloc[0] == 50
    shown = run("show", str(path))
    assert 'value: "vvvv' in shown.stdout and "value: 0xff0001" in shown.stdout and "offset: 0" in shown.stdout


# The columns issue #4 names for the records table, in its order (key_size/value_size sit beside them
# so --no-payloads still tells how big each key and value was).
RECORD_COLUMNS = [
    "connection_id", "correlation_id", "direction", "topic", "partition", "offset", "timestamp", "timestamp_type",
    "key", "value", "headers", "batch_base_offset", "magic", "compression", "batch_bytes", "batch_compressed_bytes",
    "crc_ok", "is_control", "control_type", "producer_id", "producer_epoch", "base_sequence", "transactional",
    "aborted", "aborted_by",
]  # fmt: skip


def test_records_and_batches_tables_have_the_named_columns_from_the_public_api(tmp_path: Path) -> None:
    recs = [new_record(b"k", b"v", offset=0)]
    cap = _capture(tmp_path, [(0, _produce(1, encode_batch(recs, codec=GZIP))), (1, _produce_response(1, 3))])
    cols = list(cap.records.columns)
    assert [c for c in cols if c in RECORD_COLUMNS] == RECORD_COLUMNS
    assert set(cols) - set(RECORD_COLUMNS) == {"key_size", "value_size", "source_file"}
    assert {"compression_ratio", "record_count", "crc_ok", "compressed_bytes"} <= set(cap.batches.columns)
    assert list(cap.records["offset"]) == [3]


def test_decompression_bomb_becomes_an_anomaly_and_the_cap_is_configurable(tmp_path: Path) -> None:
    payload = gzip.compress(b"\0" * (4 << 20))  # 4 MiB of zeros in a few KiB
    batch = encode_batch([], codec=GZIP, record_count=1, compressor=lambda _: payload)
    timed = [(0, _produce(1, batch), T0), (1, _produce_response(1, 0), T0 + MS)]
    path = write(tmp_path / "bomb.pcap", tcp_conversation(timed))
    cap = kdissect.open_capture(path, limits=kdissect.Limits(max_decompressed=1 << 20))
    assert "decompression_capped" in set(cap.anomalies["kind"].astype(str))
    assert cap.batches["decompressed_bytes"].iloc[0] == 1 << 20
    uncapped = kdissect.open_capture(path)  # the default cap (256 MiB) lets it through
    assert "decompression_capped" not in set(uncapped.anomalies["kind"].astype(str))
    assert uncapped.batches["decompressed_bytes"].iloc[0] == 4 << 20
    # (a run that writes tables: the summary alone decodes no record batch)
    res = subprocess.run([sys.executable, "-m", "kdissect.cli", "analyze", str(path), "--max-decompressed", "1048576",
                          "--tables", "anomalies", "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert res.returncode == 0 and "decompression_capped" in res.stdout


def test_show_truncates_long_values_unless_full(tmp_path: Path) -> None:
    long_text, long_bin = b"t" * 300, bytes(range(200))
    recs = [new_record(b"key", long_text, offset=0), new_record(None, long_bin, offset=1)]
    timed = [(0, _produce(1, encode_batch(recs)), T0), (1, _produce_response(1, 9), T0 + MS)]
    path = write(tmp_path / "long.pcap", tcp_conversation(timed))

    def show(*flags: str) -> str:
        res = subprocess.run([sys.executable, "-m", "kdissect.cli", "show", str(path), *flags],
                             capture_output=True, text=True, timeout=300)  # fmt: skip
        assert res.returncode == 0, res.stderr
        return res.stdout

    short, full = show(), show("--full")
    assert "t" * 300 not in short and "t" * 40 in short
    assert bytes(range(200)).hex() not in short and bytes(range(20)).hex() in short
    assert "t" * 300 in full and bytes(range(200)).hex() in full
