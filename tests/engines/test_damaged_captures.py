"""Damaged captures: each case names the anomaly rows it must produce and the exchanges that
must still decode. Bad input is normal input: nothing here may raise."""

from __future__ import annotations

import random
import struct
import tracemalloc
import zlib
from pathlib import Path

import pandas as pd

import kdissect
from kdissect.decoders.codecs import CODEC_GZIP
from kdissect.decoders.records import Limits
from kdissect.engines import local
from kdissect.kafka.pipeline import KafkaPipeline
from kdissect.options import Options
from kdissect.tables.frames import to_dataframe
from kdissect.tables.sink import TableSink
from kdissect.testing.accounting import accounted
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.kafka_frames import metadata_request, metadata_response, produce_request, produce_response
from kdissect.testing.pcapwrite import write_capture
from kdissect.testing.records_encode import encode_batch, encode_message, new_record, wrapper
from kdissect.testing.synthetic import T0, conversation, kafka_messages, with_payload, write

MiB = 1 << 20
ALL4 = {1, 2, 3, 4, 101, 102, 103, 104}


def statuses(cap: kdissect.Capture) -> dict[int, str]:
    ex = cap.exchanges
    return dict(zip(ex["correlation_id"].astype(int), ex["status"].astype(str), strict=True))


def kinds(cap: kdissect.Capture) -> list[str]:
    return sorted(cap.anomalies["kind"].astype(str))


def rows(cap: kdissect.Capture, kind: str) -> pd.DataFrame:
    an = cap.anomalies
    return an[an["kind"] == kind]


def segment_of(segs: list, cid: int, nth: int = 0) -> int:
    """Index of the ``nth`` segment of the message with correlation id ``cid``."""
    first = next(i for i, s in enumerate(segs) if s.payload[4:12].find(struct.pack(">i", cid)) >= 0)
    return first + nth


def exchange(i: int, produce: bytes | None = None) -> list[tuple[int, bytes, int]]:
    t = T0 + i * 10_000_000
    if produce is None:
        return [(0, metadata_request(i), t), (1, metadata_response(i), t + 1000)]
    return [(0, produce, t), (1, produce_response(i), t + 1000)]


# -- the capture file itself --------------------------------------------------------------------


def test_capture_truncated_mid_packet_keeps_everything_before_the_cut(tmp_path: Path) -> None:
    segs = conversation(4)
    k = segment_of(segs, 103, 1)  # the second of produce 103's three segments
    cut = len(write_capture(segs[:k])) + 30  # 30 bytes into that packet's record
    path = tmp_path / "cut.pcap"
    path.write_bytes(write_capture(segs)[:cut])
    cap = kdissect.open_capture(path)
    assert statuses(cap) == {1: "ok", 2: "ok", 3: "ok", 101: "ok", 102: "ok"}
    assert kinds(cap) == ["truncated_file", "truncated_frame"]
    assert "stream ended" in rows(cap, "truncated_file")["detail"].iloc[0]
    frame = rows(cap, "truncated_frame").iloc[0]
    assert frame["direction"] == "request" and frame["length"] == len(segs[k - 1].payload)


def test_capture_truncated_between_packets_reports_the_cut_frame_only(tmp_path: Path) -> None:
    segs = conversation(4)
    k = segment_of(segs, 103, 1)
    cap = kdissect.open_capture(write(tmp_path / "short.pcap", segs[:k]))
    assert statuses(cap) == {1: "ok", 2: "ok", 3: "ok", 101: "ok", 102: "ok"}
    assert kinds(cap) == ["truncated_frame"]
    assert cap.connections["end_reason"].iloc[0] == "eof"


def _pcapng_blocks(data: bytes) -> list[int]:
    offsets, at = [], 0
    while at + 8 <= len(data):
        offsets.append(at)
        at += struct.unpack_from("<I", data, at + 4)[0]
    return offsets


def test_pcapng_with_a_corrupt_block_loses_that_packet_only(tmp_path: Path) -> None:
    segs = conversation(4)
    data = bytearray(write_capture(segs, fmt="pcapng"))
    k = segment_of(segs, 2)  # metadata request 2 (one segment): its block follows SHB and IDB
    at = _pcapng_blocks(bytes(data))[2 + k]
    data[at + 4 : at + 8] = struct.pack("<I", 0x7FFF_FFF0)  # a block length no reader can honour
    path = tmp_path / "corrupt.pcapng"
    path.write_bytes(bytes(data))
    cap = kdissect.open_capture(path)
    st = statuses(cap)
    assert st.pop(2) == "orphan_response"  # its request's packet was in the corrupt block
    assert st == dict.fromkeys(ALL4 - {2}, "ok")
    assert {"corrupt_record", "gap"} <= set(kinds(cap))
    gap = rows(cap, "gap").iloc[0]
    assert gap["direction"] == "request" and gap["length"] == len(segs[k].payload)


def test_snap_length_cuts_are_gaps_and_small_frames_survive(tmp_path: Path) -> None:
    cap = kdissect.open_capture(write(tmp_path / "snap.pcap", conversation(4), snaplen=300))
    assert statuses(cap) == dict.fromkeys(ALL4, "ok")  # cut requests keep their head and pair
    ex = cap.exchanges
    cut = ex[ex["correlation_id"].isin([101, 102, 103, 104])]
    assert cut["warnings"].str.startswith("only ").all() and set(cut["request_bytes"]) == {3050}
    gaps = rows(cap, "gap")
    assert len(gaps) and gaps["detail"].str.contains("snaplen").all()
    assert set(gaps["direction"]) == {"request"}  # responses are all shorter than the snap length


def test_random_byte_flips_in_payloads_cost_only_the_flipped_exchanges() -> None:
    base = conversation(4)
    for seed in range(12):
        rng = random.Random(seed)
        segs = list(base)
        k = rng.choice([i for i, s in enumerate(segs) if s.payload])
        payload = bytearray(segs[k].payload)
        for _ in range(rng.randint(1, 4)):
            payload[rng.randrange(len(payload))] ^= rng.randint(1, 255)
        segs[k] = with_payload(segs[k], bytes(payload))
        p = KafkaPipeline()
        events = [e for s in segs for e in p.feed(s)] + p.finish()
        sent = {"request": sum(len(m) for d, m, _ in kafka_messages(4) if d == 0),
                "response": sum(len(m) for d, m, _ in kafka_messages(4) if d == 1)}
        assert dict(accounted(events)) == {(0, r): n for r, n in sent.items()}, seed
        ok = {(e.request or e.response).correlation_id for e in events
              if isinstance(e, kdissect.events.Exchange) and e.status == "ok"}
        assert len(ok) >= len(ALL4) - 2, (seed, ok)  # a flip touches one frame, maybe its partner


# -- hostile frames -------------------------------------------------------------------------------


def _run(messages: list[tuple[int, bytes, int]], port: int = 9092, options: Options | None = None):
    segs = tcp_conversation(messages, server=("10.0.0.2", port))
    p = KafkaPipeline(Options())
    events = [e for s in segs for e in p.feed(s)] + p.finish()
    sink = TableSink(options=options)
    sink.consume_all(events)
    return events, sink


def _rows(sink: TableSink, table: str) -> list[dict]:
    return to_dataframe(table, sink.columns(table)).to_dict("records")


def _statuses(sink: TableSink) -> dict[int, str]:
    return {r["correlation_id"]: r["status"] for r in _rows(sink, "exchanges")}


def _kinds(sink: TableSink) -> list[str]:
    return sorted(r["kind"] for r in _rows(sink, "anomalies"))


def test_frame_claiming_2_gib_is_a_desync_not_an_allocation() -> None:
    claim = struct.pack(">i", 0x7FFF_FFFF) + b"\xee" * 60
    msgs = [*exchange(1), (0, claim, T0 + 5000000), (1, claim, T0 + 5000001), *exchange(2), *exchange(3)]
    tracemalloc.start()
    _events, sink = _run(msgs)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16 * MiB
    assert _statuses(sink) == {1: "ok", 2: "ok", 3: "ok"}
    desync = [r for r in _rows(sink, "anomalies") if r["kind"] == "desync"]
    assert {r["direction"] for r in desync} == {"request", "response"}
    assert all("size 2147483647" in r["detail"] for r in desync)
    assert set(_kinds(sink)) == {"desync", "resync"}


def test_records_field_claiming_more_records_than_bytes() -> None:
    recs = [new_record(b"k", b"v%d" % i, offset=i) for i in range(3)]
    batch = encode_batch(recs, record_count=0x7FFF_FFFF)
    _events, sink = _run(exchange(1) + exchange(2, produce_request(2, records=batch)) + exchange(3))
    assert _statuses(sink) == {1: "ok", 2: "ok", 3: "ok"}
    assert _kinds(sink) == ["record_count_mismatch"]
    assert [r["value"] for r in _rows(sink, "records")] == [b"v0", b"v1", b"v2"]


def test_deeply_nested_wrappers_stop_at_the_depth_limit() -> None:
    inner = new_record(None, b"deep", offset=0)
    for _ in range(200):  # each level a gzip wrapper around the one before
        inner = wrapper([inner], magic=1, codec=CODEC_GZIP, offset=0)
    _events, sink = _run(exchange(1) + exchange(2, produce_request(2, records=encode_message(inner, magic=1))))
    assert _statuses(sink) == {1: "ok", 2: "ok"}
    found = _kinds(sink)
    assert found.count("max_depth") == 1 and set(found) == {"max_depth", "nested_compression"}


def _gzip_bomb(total: int) -> bytes:
    member = zlib.compress(b"\0" * (16 * MiB), level=9, wbits=31)
    return member * (total // (16 * MiB))


def _bomb_peak(total: int) -> tuple[int, TableSink]:
    batch = encode_batch([], codec=CODEC_GZIP, record_count=1, compressor=lambda _: _gzip_bomb(total))
    msgs = exchange(1) + exchange(2, produce_request(2, records=batch)) + exchange(3)
    tracemalloc.start()
    try:
        _, sink = _run(msgs, options=Options(limits=Limits(max_decompressed=8 * MiB)))
        return tracemalloc.get_traced_memory()[1], sink
    finally:
        tracemalloc.stop()


def test_zip_bomb_batch_stays_within_the_decompression_cap() -> None:
    small, _ = _bomb_peak(256 * MiB)
    peak, sink = _bomb_peak(1024 * MiB)  # four times the inflated size
    assert peak < 5 * 8 * MiB + 2 * len(_gzip_bomb(1024 * MiB))
    assert peak < 1.5 * small + 4 * MiB  # the cap, not the claim, sets the memory
    assert _statuses(sink) == {1: "ok", 2: "ok", 3: "ok"}
    assert "decompression_capped" in _kinds(sink)


# -- not Kafka at all -----------------------------------------------------------------------------


def test_http_on_a_kafka_port_is_reported_not_kafka() -> None:
    http = [(0, b"GET /metrics HTTP/1.1\r\nHost: broker\r\n\r\n", T0),
            (1, b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 500, T0 + 1)]
    events, sink = _run(http * 3)
    assert not _rows(sink, "exchanges")
    # Never Kafka: one not_kafka row for the whole connection, no framing anomalies
    [row] = _rows(sink, "anomalies")
    assert row["kind"] == "not_kafka" and row["length"] == 3 * (len(http[0][1]) + len(http[1][1]))
    assert dict(accounted(events)) == {(0, "request"): 3 * len(http[0][1]), (0, "response"): 3 * len(http[1][1])}
    [conn] = _rows(sink, "connections")
    assert not conn["is_kafka"]


def test_tls_on_a_kafka_port_is_reported_encrypted() -> None:
    hello = b"\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03" + bytes(190)
    _events, sink = _run([(0, hello, T0), (1, b"\x16\x03\x03\x00\x40" + bytes(64), T0 + 1)])
    assert _kinds(sink) == ["tls_no_key"]
    [conn] = _rows(sink, "connections")
    assert conn["encrypted"]


def test_random_bytes_on_a_kafka_port_decode_nothing() -> None:
    rng = random.Random(5)
    noise = [(i % 2, rng.randbytes(rng.randint(1, 3000)), T0 + i) for i in range(20)]
    events, sink = _run(noise)
    assert "ok" not in _statuses(sink).values()
    assert "not_kafka" in _kinds(sink)
    sent = {r: sum(len(m) for d, m, _ in noise if d == k) for k, r in enumerate(("request", "response"))}
    assert dict(accounted(events)) == {(0, r): n for r, n in sent.items()}


def test_stream_alternating_garbage_and_valid_frames_decodes_every_exchange() -> None:
    junk = [
        struct.pack(">i", 0x7FFF_FFFF) + b"\xee" * 20,  # absurd size
        b"\xff\xff\xff\xfe",  # negative size
        b"GET / HTTP/1.1\r\n\r\n",
        b"\x00" * 5,  # size 0
        b"\x16\x03\x01\x00\x05hello",  # TLS-like, but after Kafka was decoded
        b"\x00\x00\x00\x06\xfe\xfe\xfe\xfe\xfe\xfe",  # a small frame that is not a request
    ]  # (the last would be a fine orphan response: it is sent to the broker only)
    msgs = []
    for i in range(1, 13):
        t = T0 + i * 10_000_000
        msgs += [(0, junk[i % len(junk)], t), (0, metadata_request(i), t + 1),
                 (1, junk[(i + 3) % (len(junk) - 1)], t + 2), (1, metadata_response(i), t + 3)]
    events, sink = _run(msgs)
    assert _statuses(sink) == dict.fromkeys(range(1, 13), "ok")
    assert set(_kinds(sink)) <= {"desync", "resync", "decode_error"}
    sent = {r: sum(len(m) for d, m, _ in msgs if d == k) for k, r in enumerate(("request", "response"))}
    assert dict(accounted(events)) == {(0, r): n for r, n in sent.items()}


def test_engine_on_a_damaged_file_yields_events_not_exceptions(tmp_path: Path) -> None:
    data = bytearray(write_capture(conversation(3)))
    rng = random.Random(11)
    for _ in range(200):
        data[rng.randrange(24, len(data))] ^= rng.randint(1, 255)
    path = tmp_path / "flipped.pcap"
    path.write_bytes(bytes(data))
    events = list(local.events([path]))
    assert events and all(isinstance(e, kdissect.events.Exchange | kdissect.events.Anomaly
                                      | kdissect.events.ConnectionSummary) for e in events)
