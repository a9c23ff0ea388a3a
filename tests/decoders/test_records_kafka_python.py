"""Differential: batches written by kafka-python's builders decode to what kafka-python reads back."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.decoders.codecs import CODEC_LZ4, CODEC_NAMES, CODEC_SNAPPY
from kdissect.decoders.records import decode_records

pytest.importorskip("kafka")
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

CODECS = sorted(CODEC_NAMES)
LEGACY_CODECS = [c for c in CODECS if c <= CODEC_LZ4]

payload = st.none() | st.binary(max_size=60)
header = st.tuples(st.text(max_size=6), payload)
entry = st.tuples(st.integers(0, 2**42), payload, payload, st.lists(header, max_size=3))


def need_codec(codec: int, magic: int) -> None:
    """kafka-python needs python-snappy for snappy, and xxhash for its old-Kafka LZ4 framing."""
    if codec == CODEC_SNAPPY:
        pytest.importorskip("snappy")
    if codec == CODEC_LZ4 and magic == 0:
        pytest.importorskip("xxhash")


def theirs(buffer: bytes) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for b in MemoryRecords(buffer) for r in b]


def ours(buffer: bytes) -> list[tuple]:
    rs = decode_records(buffer)
    assert list(rs.all_warnings()) == [] and rs.crc_ok and rs.truncated == 0
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in rs.records()]


@pytest.mark.parametrize("codec", CODECS, ids=[CODEC_NAMES[c] for c in CODECS])
@settings(max_examples=20, deadline=None)
@given(
    entries=st.lists(entry, min_size=1, max_size=10),
    producer=st.tuples(st.booleans(), st.integers(0, 2**40), st.integers(0, 2**15 - 1), st.integers(0, 2**30)),
)
def test_default_record_batch_builder(codec: int, entries: list[tuple], producer: tuple) -> None:
    """kafka-python's builder leaves the base offset at 0 (the broker's job): offsets are deltas."""
    need_codec(codec, 2)
    transactional, pid, epoch, seq = producer
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=transactional, producer_id=pid, producer_epoch=epoch,
        base_sequence=seq, batch_size=1 << 20,
    )  # fmt: skip
    for i, (ts, key, value, hdrs) in enumerate(entries):
        assert builder.append(i, ts, key, value, hdrs) is not None
    buffer = bytes(builder.build())
    assert ours(buffer) == theirs(buffer)
    ref = DefaultRecordBatch(buffer)
    (b,) = decode_records(buffer).batches
    assert (b.base_offset, b.codec, b.is_transactional, b.record_count) == (
        ref.base_offset, ref.compression_type, ref.is_transactional, ref.records_count,
    )  # fmt: skip
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (pid, epoch, seq)
    assert (b.base_timestamp, b.max_timestamp, b.last_offset) == (
        ref.first_timestamp,
        ref.max_timestamp,
        ref.last_offset,
    )
    assert b.crc == ref.crc and ref.validate_crc()


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=[CODEC_NAMES[c] for c in LEGACY_CODECS])
@settings(max_examples=15, deadline=None)
@given(entries=st.lists(entry, min_size=1, max_size=8), base_offset=st.integers(0, 2**40))
def test_legacy_memory_records_builder(magic: int, codec: int, entries: list[tuple], base_offset: int) -> None:
    need_codec(codec, magic)
    builder = MemoryRecordsBuilder(magic=magic, compression_type=codec, batch_size=1 << 20, offset=base_offset)
    for ts, key, value, _ in entries:
        assert builder.append(ts, key, value) is not None
    builder.close()
    buffer = bytes(builder.buffer())
    assert ours(buffer) == theirs(buffer)
    for b in decode_records(buffer).batches:
        assert b.magic == magic and b.codec == codec


@pytest.mark.parametrize("codec", CODECS, ids=[CODEC_NAMES[c] for c in CODECS])
def test_several_kafka_python_batches_in_one_field(codec: int) -> None:
    need_codec(codec, 2)
    buffers = []
    for n in range(3):
        builder = MemoryRecordsBuilder(magic=2, compression_type=codec, batch_size=1 << 20, offset=n * 10)
        for i in range(n + 1):
            builder.append(1_700_000_000_000 + i, b"k%d" % i, b"v" * i, [("trace", b"%d" % n)])
        builder.close()
        buffers.append(bytes(builder.buffer()))
    field = b"".join(buffers)
    assert ours(field) == theirs(field)
    assert [r[0] for r in ours(field)] == [0, 10, 11, 20, 21, 22]
