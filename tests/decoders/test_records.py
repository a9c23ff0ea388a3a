"""Record batches and legacy message sets: hand-checked bytes, round trips, damage handling."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.decoders.codecs import CODEC_GZIP, CODEC_LZ4, CODEC_NAMES, CODEC_NONE, CODEC_SNAPPY, compress
from kdissect.decoders.records import (
    FULL,
    LENGTHS_ONLY,
    Limits,
    Payloads,
    Record,
    decode_records,
)
from kdissect.testing.records_encode import (
    control_record,
    encode_batch,
    encode_decoded,
    encode_message,
    encode_message_set,
    new_record,
    wrapper,
)

CODECS = sorted(CODEC_NAMES)
LEGACY_CODECS = [c for c in CODECS if c <= CODEC_LZ4]

# A magic 2 batch written out field by field (CRC-32C computed with kafka-python's pure-Python code).
HAND_V2 = bytes.fromhex(
    "0000000000000064"  # base offset 100
    "0000003d"  # batch length 61
    "00000005"  # partition leader epoch 5
    "02"  # magic
    "e641a44b"  # crc
    "0000"  # attributes: no codec, create time
    "00000000"  # last offset delta
    "0000018bcfe56800"  # base timestamp 1_700_000_000_000
    "0000018bcfe56800"  # max timestamp
    "ffffffffffffffff"  # producer id -1
    "ffff"  # producer epoch -1
    "ffffffff"  # base sequence -1
    "00000001"  # one record
    "16"  # record length 11 (zig-zag)
    "00"  # attributes
    "00"  # timestamp delta 0
    "00"  # offset delta 0
    "01"  # key length -1: null
    "0a"  # value length 5
    "68656c6c6f"  # "hello"
    "00"  # no headers
)
# A magic 0 message: offset 7, null key, value "abc" (CRC-32 computed with zlib).
HAND_V0 = bytes.fromhex("00000000000000070000001143dc3faf0000ffffffff00000003616263")


def test_hand_written_v2_batch() -> None:
    rs = decode_records(HAND_V2)
    assert rs.truncated == 0 and rs.partial is None and rs.warnings == []
    (b,) = rs.batches
    assert (b.base_offset, b.length, b.partition_leader_epoch, b.magic, b.crc) == (100, 61, 5, 2, 0xE641A44B)
    assert b.crc_ok is True and b.warnings == []
    assert (b.codec, b.codec_name, b.timestamp_type, b.is_transactional, b.is_control, b.has_delete_horizon) == (
        0, "none", 0, False, False, False,
    )  # fmt: skip
    assert (b.last_offset_delta, b.base_timestamp, b.max_timestamp) == (0, 1_700_000_000_000, 1_700_000_000_000)
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.record_count) == (-1, -1, -1, 1)
    assert (b.position, b.size, b.last_offset) == (0, len(HAND_V2), 100)
    assert b.records == [Record(100, 1_700_000_000_000, None, b"hello", (), -1, 5, 0, 11, 0, 0, None)]
    assert encode_decoded(b) == HAND_V2
    assert decode_records(bytearray(HAND_V2)) == decode_records(memoryview(HAND_V2)) == rs


def test_hand_written_v0_message() -> None:
    (b,) = decode_records(HAND_V0).batches
    assert (b.magic, b.base_offset, b.length, b.crc, b.crc_ok, b.timestamp_type) == (0, 7, 17, 0x43DC3FAF, True, None)
    assert b.records == [Record(7, None, None, b"abc", (), -1, 3, 0, 17, 7, None, True)]
    assert encode_decoded(b) == HAND_V0


def test_hand_written_v1_message_reads_its_timestamp() -> None:
    body = struct.pack(">bbq", 1, 0, 1234) + struct.pack(">i", 1) + b"k" + struct.pack(">i", -1)
    msg = struct.pack(">qiI", 3, len(body) + 4, zlib.crc32(body)) + body
    (b,) = decode_records(msg).batches
    assert b.crc_ok and b.max_timestamp == 1234 and b.timestamp_type == 0
    assert b.records[0][:8] == (3, 1234, b"k", None, (), 1, -1, 0)


# -- round trips --------------------------------------------------------------------------------

payload = st.none() | st.binary(max_size=40)
headers = st.lists(st.tuples(st.text(max_size=8), payload), max_size=3)


@st.composite
def v2_records(draw: st.DrawFn) -> list[Record]:
    n = draw(st.integers(0, 12))
    gaps = draw(st.lists(st.integers(0, 300), min_size=n, max_size=n))  # compaction leaves holes
    offsets = [sum(gaps[: i + 1]) + i for i in range(n)]
    return [
        new_record(draw(payload), draw(payload), draw(headers), offset=o, timestamp=draw(st.integers(-(2**40), 2**40)))
        for o in offsets
    ]


@pytest.mark.parametrize("codec", CODECS, ids=[CODEC_NAMES[c] for c in CODECS])
@settings(max_examples=25, deadline=None)
@given(
    records=v2_records(),
    base_offset=st.integers(0, 2**62),
    base_ts=st.integers(0, 2**41),
    pid=st.integers(-1, 2**40),
    flags=st.tuples(st.booleans(), st.booleans(), st.integers(0, 1)),
)
def test_v2_round_trip(codec: int, records: list[Record], base_offset: int, base_ts: int, pid: int, flags) -> None:
    transactional, delete_horizon, ts_type = flags
    data = encode_batch(
        records, base_offset=base_offset, codec=codec, base_timestamp=base_ts, producer_id=pid, producer_epoch=3,
        base_sequence=17, transactional=transactional, delete_horizon=delete_horizon, timestamp_type=ts_type,
    )  # fmt: skip
    (b,) = decode_records(data).batches
    assert b.crc_ok and b.warnings == []
    assert (b.codec, b.is_transactional, b.has_delete_horizon, b.timestamp_type) == (
        codec, transactional, delete_horizon, ts_type,
    )  # fmt: skip
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.record_count) == (pid, 3, 17, len(records))
    got = [(r.wire_offset, r.wire_timestamp, r.key, r.value, r.headers, r.attributes) for r in b.records]
    assert got == [(r.wire_offset, r.wire_timestamp, r.key, r.value, r.headers, r.attributes) for r in records]
    for rec, src in zip(b.records, records, strict=True):
        assert rec.offset == base_offset + src.wire_offset
        assert rec.timestamp == (b.max_timestamp if ts_type else base_ts + src.wire_timestamp)
        assert (rec.key_size, rec.value_size) == (src.key_size, src.value_size)
    if codec == CODEC_NONE:
        assert encode_decoded(b) == data
    else:
        assert decode_records(encode_decoded(b)).batches[0].records == b.records


@st.composite
def legacy_records(draw: st.DrawFn, magic: int) -> list[Record]:
    n = draw(st.integers(1, 8))
    return [
        new_record(draw(payload), draw(payload), offset=i, timestamp=draw(st.integers(0, 2**41)) if magic else None)
        for i in range(n)
    ]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=[CODEC_NAMES[c] for c in LEGACY_CODECS])
@settings(max_examples=15, deadline=None)
@given(data=st.data(), wrapper_offset=st.integers(0, 2**40))
def test_legacy_round_trip(magic: int, codec: int, data: st.DataObject, wrapper_offset: int) -> None:
    records = data.draw(legacy_records(magic))
    last = records[-1].wire_offset
    if codec == CODEC_NONE:
        raw = encode_message_set(records, magic=magic)
        expected_offsets = [r.wire_offset for r in records]
    else:
        raw = encode_message(wrapper(records, magic=magic, codec=codec, offset=wrapper_offset + last), magic=magic)
        # magic 1: inner offsets are relative, the wrapper holds the last absolute one; magic 0: as written
        expected_offsets = [r.wire_offset + (wrapper_offset if magic else 0) for r in records]
    rs = decode_records(raw)
    assert [w for b in rs.batches for w in b.warnings] == []
    assert all(b.crc_ok for b in rs.batches)
    got = list(rs.records())
    assert [r.offset for r in got] == expected_offsets
    assert [(r.key, r.value, r.wire_timestamp, r.crc_ok) for r in got] == [
        (r.key, r.value, r.wire_timestamp if magic else None, True) for r in records
    ]
    rebuilt = b"".join(encode_decoded(b) for b in rs.batches)
    if codec == CODEC_NONE:
        assert rebuilt == raw
    else:
        assert list(decode_records(rebuilt).records()) == got


def test_magic1_wrapper_offset_zero_keeps_relative_offsets() -> None:
    """Produce requests: clients may leave the wrapper offset at 0; Kafka then keeps inner offsets."""
    records = [new_record(b"k", b"v%d" % i, offset=i, timestamp=5) for i in range(3)]
    raw = encode_message(wrapper(records, magic=1, codec=CODEC_GZIP, offset=0), magic=1)
    assert [r.offset for r in decode_records(raw).records()] == [0, 1, 2]


def test_magic1_log_append_time_wrapper_overrides_inner_timestamps() -> None:
    records = [new_record(None, b"v", offset=i, timestamp=10 + i) for i in range(2)]
    raw = encode_message(
        wrapper(records, magic=1, codec=CODEC_GZIP, offset=41, timestamp=999, timestamp_type=1), magic=1
    )
    (b,) = decode_records(raw).batches
    assert b.timestamp_type == 1 and b.max_timestamp == 999
    assert [(r.offset, r.timestamp, r.wire_timestamp) for r in b.records] == [(40, 999, 10), (41, 999, 11)]


def test_v2_log_append_time_uses_max_timestamp() -> None:
    data = encode_batch(
        [new_record(b"a", offset=0, timestamp=3)], timestamp_type=1, base_timestamp=100, max_timestamp=5000
    )
    (rec,) = decode_records(data).batches[0].records
    assert (rec.timestamp, rec.wire_timestamp) == (5000, 3)


def test_nested_wrappers_are_opened_and_offsets_stay_absolute() -> None:
    inner = [new_record(b"x", b"deep%d" % i, offset=i, timestamp=1) for i in range(2)]
    middle = [new_record(b"m", b"mid", offset=0, timestamp=1), wrapper(inner, magic=1, codec=CODEC_SNAPPY, offset=2)]
    raw = encode_message(wrapper(middle, magic=1, codec=CODEC_GZIP, offset=52), magic=1)
    (b,) = decode_records(raw).batches
    assert [(r.offset, r.value) for r in b.records] == [(50, b"mid"), (51, b"deep0"), (52, b"deep1")]
    assert [w.code for w in b.warnings] == ["nested_compression"]
    assert all(r.crc_ok for r in b.records)


def test_nesting_deeper_than_the_limit_is_not_opened() -> None:
    rec = new_record(None, b"core", offset=0)
    for _ in range(4):
        rec = wrapper([rec], magic=0, codec=CODEC_GZIP)
    raw = encode_message(rec, magic=0)
    assert [r.value for r in decode_records(raw, limits=Limits(max_depth=8)).records()] == [b"core"]
    b = decode_records(raw, limits=Limits(max_depth=2)).batches[0]
    assert b.records == [] and "max_depth" in [w.code for w in b.warnings]


def test_old_kafka_lz4_framing_in_magic0_is_read_silently() -> None:
    records = [new_record(b"k%d" % i, b"v" * i, offset=i) for i in range(4)]
    w = wrapper(records, magic=0, codec=CODEC_LZ4)  # magic 0 defaults to the broken header checksum
    good_hc = compress(CODEC_LZ4, encode_message_set(records, magic=0))[6]
    assert w.value is not None and w.value[6] != good_hc
    (b,) = decode_records(encode_message(w, magic=0)).batches
    assert b.warnings == [] and [r.value for r in b.records] == [r.value for r in records]
    # the same framing in a magic 1 message is decoded too, but noted
    w1 = wrapper(records, magic=1, codec=CODEC_LZ4, legacy_lz4=True)
    (b1,) = decode_records(encode_message(w1, magic=1)).batches
    assert [w.code for w in b1.warnings] == ["lz4_legacy_header_checksum"] and len(b1.records) == 4


def test_several_batches_of_mixed_magics_in_one_field() -> None:
    v0 = encode_message_set([new_record(b"a", b"0", offset=0)], magic=0)
    v1 = encode_message(wrapper([new_record(b"b", b"1", offset=0, timestamp=9)], magic=1, codec=CODEC_GZIP), magic=1)
    v2 = encode_batch([new_record(b"c", b"2", offset=0)], base_offset=2, codec=CODEC_SNAPPY)
    rs = decode_records(v0 + v1 + v2 + HAND_V2, origin=1000)
    assert [b.magic for b in rs.batches] == [0, 1, 2, 2]
    assert [r.value for r in rs.records()] == [b"0", b"1", b"2", b"hello"]
    assert [b.position for b in rs.batches] == [
        1000,
        1000 + len(v0),
        1000 + len(v0) + len(v1),
        1000 + len(v0 + v1 + v2),
    ]
    assert rs.crc_ok and list(rs.all_warnings()) == []


# -- control batches ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [FULL, LENGTHS_ONLY, Payloads.preview(2)])
def test_control_batch_markers(mode: Payloads) -> None:
    data = encode_batch(
        [control_record(1, coordinator_epoch=7)], control=True, transactional=True, producer_id=9, producer_epoch=2
    ) + encode_batch([control_record(0, coordinator_epoch=8, version=0)], control=True, transactional=True)
    rs = decode_records(data, payloads=mode)
    markers = [m for b in rs.batches for m in b.control]
    assert [(m.kind, m.type, m.coordinator_epoch, m.version, m.value_version) for m in markers] == [
        ("commit", 1, 7, 0, 0),
        ("abort", 0, 8, 0, 0),
    ]
    assert all(b.is_control and b.is_transactional for b in rs.batches)
    keys = [r.key for r in rs.records()]
    assert keys == ([b"\x00\x00\x00\x01", b"\x00\x00\x00\x00"] if mode is FULL else [k[: mode.keep] for k in keys])
    assert all(len(k or b"") <= (mode.keep if mode.keep is not None else 4) for k in keys)


def test_control_types_beyond_commit_stay_numbers() -> None:
    leader_change = new_record(struct.pack(">hh", 0, 2), b"\x00\x00opaque", offset=0)
    (b,) = decode_records(encode_batch([leader_change], control=True)).batches
    (m,) = b.control
    assert (m.type, m.kind, m.value_version, m.coordinator_epoch) == (2, None, None, None)
    assert b.records[0].value == b"\x00\x00opaque" and b.warnings == []


def test_control_record_with_short_key_is_flagged() -> None:
    (b,) = decode_records(encode_batch([new_record(b"\x00", b"", offset=0)], control=True)).batches
    assert b.control == [] and [w.code for w in b.warnings] == ["control_key_invalid"]


# -- payload modes ------------------------------------------------------------------------------


def test_payload_modes_keep_sizes_and_nulls() -> None:
    recs = [new_record(b"key-1234", b"v" * 50, [("h", b"0123456789"), ("n", None)], offset=0)]
    recs.append(new_record(None, None, offset=1))
    data = encode_batch(recs)
    full = decode_records(data).batches[0].records
    preview = decode_records(data, payloads=Payloads.preview(4)).batches[0].records
    sizes = decode_records(data, payloads=LENGTHS_ONLY).batches[0].records
    assert full[0].value == b"v" * 50 and full[0].headers == (("h", b"0123456789"), ("n", None))
    assert (preview[0].key, preview[0].value, preview[0].headers) == (b"key-", b"vvvv", (("h", b"0123"), ("n", None)))
    assert (sizes[0].key, sizes[0].value, sizes[0].headers) == (b"", b"", (("h", b""), ("n", None)))
    for mode in (preview, sizes):
        assert [(r.key_size, r.value_size, r.offset) for r in mode] == [(8, 50, 0), (-1, -1, 1)]
        assert (mode[1].key, mode[1].value) == (None, None)
    with pytest.raises(ValueError):
        Payloads.preview(-1)


def test_header_key_not_utf8_is_escaped_and_flagged() -> None:
    rec = new_record(None, b"v", offset=0)
    good = encode_batch([rec._replace(headers=(("AB", b"x"),))])
    bad = good.replace(b"AB", b"A\xff")  # same length, so only the CRC notices
    (b,) = decode_records(bad).batches
    assert b.records[0].headers == (("A\\xff", b"x"),)
    assert [w.code for w in b.warnings] == ["crc_mismatch", "header_key_not_utf8"]


# -- damage -------------------------------------------------------------------------------------


def _three_records(codec: int = CODEC_NONE) -> bytes:
    return encode_batch([new_record(b"k%d" % i, b"value-%d" % i, offset=i) for i in range(3)], codec=codec)


@pytest.mark.parametrize("codec", CODECS, ids=[CODEC_NAMES[c] for c in CODECS])
def test_flipped_bit_fails_crc_but_records_are_listed(codec: int) -> None:
    data = bytearray(_three_records(codec))
    data[40] ^= 0x01  # inside the base timestamp: covered by the CRC, harmless to the records
    (b,) = decode_records(bytes(data)).batches
    assert b.crc_ok is False and [w.code for w in b.warnings] == ["crc_mismatch"]
    assert [r.value for r in b.records] == [b"value-0", b"value-1", b"value-2"]


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_flipped_bit_and_zero_crc(magic: int) -> None:
    rec = new_record(b"k", b"payload", offset=0, timestamp=1)
    good = encode_message(rec, magic=magic)
    flipped = bytearray(good)
    flipped[-1] ^= 0x80
    zero = encode_message(rec, magic=magic, crc=0)
    for raw, value in ((bytes(flipped), b"payloa\xe4"), (zero, b"payload")):
        (b,) = decode_records(raw).batches
        assert b.crc_ok is False and b.records[0].crc_ok is False and b.records[0].value == value
        assert [w.code for w in b.warnings] == ["crc_mismatch"]
    assert "zero" in decode_records(zero).batches[0].warnings[0].message


def test_inner_message_with_bad_crc_is_flagged_on_its_record() -> None:
    inner = encode_message(new_record(b"a", b"1", offset=0, timestamp=0), magic=1, crc=123) + encode_message(
        new_record(b"b", b"2", offset=1, timestamp=0), magic=1
    )
    w = new_record(None, compress(CODEC_GZIP, inner), offset=1, timestamp=0, attributes=CODEC_GZIP)
    (b,) = decode_records(encode_message(w, magic=1)).batches
    assert b.crc_ok is True
    assert [(r.value, r.crc_ok) for r in b.records] == [(b"1", False), (b"2", True)]
    assert [w.code for w in b.warnings] == ["crc_mismatch"]


def test_zero_crc_is_flagged_and_records_still_decoded() -> None:
    (b,) = decode_records(encode_batch([new_record(b"k", b"v", offset=0)], crc=0)).batches
    assert b.crc == 0 and b.crc_ok is False and b.records[0].value == b"v"
    assert "zero" in b.warnings[0].message


def test_truncated_trailing_batch_is_normal() -> None:
    first, second = _three_records(), _three_records(CODEC_GZIP)
    for cut in (1, 11, 12, 30, 61, 70, len(second) - 1):
        rs = decode_records(first + second[:cut])
        assert rs.truncated == cut and len(rs.batches) == 1 and rs.warnings == []
        assert list(rs.all_warnings()) == []
        assert (rs.partial is not None) == (cut >= 61)
    # an uncompressed cut batch still shows the records that arrived whole
    rs = decode_records(first[:-3])
    assert rs.partial is not None and rs.partial.complete is False and rs.partial.crc_ok is None
    assert [r.value for r in rs.partial.records] == [b"value-0", b"value-1"]
    assert rs.partial.base_offset == 0 and rs.partial.record_count == 3


def test_truncated_legacy_message_keeps_its_header() -> None:
    raw = encode_message(new_record(b"k", b"v" * 20, offset=5, timestamp=77), magic=1)
    rs = decode_records(raw[:-4])
    assert rs.truncated == len(raw) - 4 and rs.partial is not None
    assert (rs.partial.base_offset, rs.partial.max_timestamp, rs.partial.records) == (5, 77, [])


def test_declared_record_count_mismatch_is_flagged() -> None:
    recs = [new_record(b"k", b"v", offset=i) for i in range(3)]
    (b,) = decode_records(encode_batch(recs, record_count=5)).batches
    assert len(b.records) == 3 and b.crc_ok
    assert [w.code for w in b.warnings] == ["record_count_mismatch"]


def test_corrupt_record_keeps_earlier_records_and_next_batch() -> None:
    recs = [new_record(b"k", b"value-%d" % i, offset=i) for i in range(3)]
    good = encode_batch(recs)
    bad = bytearray(good)
    second = 61 + len(good[61:]) // 3  # records are the same size: the second starts here
    # its key length, after length, attributes and the two deltas: 63 bytes, far past the record end
    bad[second + 4] = 0x7E
    rs = decode_records(bytes(bad) + HAND_V2, origin=100)
    first, last = rs.batches
    assert [r.value for r in first.records] == [b"value-0"]
    assert [w.code for w in first.warnings] == ["crc_mismatch", "corrupt_record", "record_count_mismatch"]
    assert first.warnings[1].offset == 100 + second
    assert [r.value for r in last.records] == [b"hello"] and last.warnings == []


def test_corrupt_record_in_compressed_batch_is_placed_in_decompressed_bytes() -> None:
    body = b"\x10" + b"\x00" * 3  # record length 8 but only 3 bytes follow
    data = encode_batch([], codec=CODEC_GZIP, record_count=1, compressor=lambda _: compress(CODEC_GZIP, body))
    (b,) = decode_records(data).batches
    assert b.crc_ok and b.records == []
    corrupt = [w for w in b.warnings if w.code == "corrupt_record"]
    assert len(corrupt) == 1 and "byte 0 of the decompressed records" in corrupt[0].message


def test_bad_batch_length_stops_with_a_warning() -> None:
    data = HAND_V2 + struct.pack(">qi", 0, 3) + b"\x00" * 60
    rs = decode_records(data)
    assert len(rs.batches) == 1 and rs.truncated == 0
    assert [w.code for w in rs.warnings] == ["bad_batch_length"] and rs.warnings[0].offset == len(HAND_V2)


def test_unknown_magic_is_skipped_by_its_length() -> None:
    odd = bytearray(HAND_V2)
    odd[16] = 7
    rs = decode_records(bytes(odd) + HAND_V2)
    assert [w.code for w in rs.warnings] == ["unknown_magic"]
    assert [b.position for b in rs.batches] == [len(HAND_V2)]


def test_unknown_codec_is_flagged() -> None:
    data = bytearray(encode_batch([new_record(b"k", offset=0)]))
    data[22] |= 0x06  # codec 6 in the low attribute bits
    (b,) = decode_records(bytes(data)).batches
    assert "unknown_codec" in [w.code for w in b.warnings] and b.records == []
