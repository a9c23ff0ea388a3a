"""The C record loops (``_native.v2_records``, ``_native.v2_columns``) against the Python one
(``records._v2_records``).

On valid, mutated and truncated record buffers both paths must leave identical records (same
Record class, same field values and types), identical batch warnings and report the same
problem (position and reason). Whatever C leaves to Python (bad UTF-8 header keys, numbers
wider than 64 bits, any broken rule) is redone by Python from the start. The column loop gives
the same records as buffers, or declines (None) wherever the Record loop would fall back. Plus:
no leaks, and records stay visible to the cycle collector.
"""

from __future__ import annotations

import gc
import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdissect.decoders import records
from kdissect.decoders.codecs import CODEC_NAMES
from kdissect.decoders.records import (
    FULL,
    LENGTHS_ONLY,
    ArenaColumns,
    Batch,
    Payloads,
    Record,
    RecordArena,
    RecordColumns,
    decode_records,
)
from kdissect.decoders.wire import write_varint
from kdissect.tables.blocks import WIRE, RecordBlock
from kdissect.testing.records_encode import encode_batch, encode_record, new_record
from tests.conftest import PURE_PYTHON_FORCED, assert_no_leaks

pytestmark = pytest.mark.skipif(
    PURE_PYTHON_FORCED, reason="KDISSECT_PURE_PYTHON forces the Python loop: nothing native to compare"
)
INT64 = (-(1 << 63), (1 << 63) - 1)
CUTS = (sys.maxsize, 0, 1, 3)


def same(a: Any, b: Any) -> bool:
    """Equal values of identical types, all the way down (``True == 1`` is not enough)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


payloads = st.none() | st.binary(max_size=20)
headers = st.lists(st.tuples(st.text(max_size=6), payloads), max_size=3)
record = st.builds(
    lambda key, value, hdrs, offset, ts, attrs: new_record(
        key, value, hdrs, offset=offset, timestamp=ts, attributes=attrs
    ),
    payloads,
    payloads,
    headers,
    st.integers(-(1 << 31), (1 << 31) - 1),
    st.integers(*INT64),
    st.integers(0, 255),
)


def mutate(data: st.DataObject, raw: bytes) -> bytes:
    b = bytearray(raw)
    for _ in range(data.draw(st.integers(0, 3))):
        if not b:
            break
        i = data.draw(st.integers(0, len(b) - 1))
        how = data.draw(st.sampled_from(["set", "ff", "80", "insert", "truncate"]))
        if how == "set":
            b[i] = data.draw(st.integers(0, 255))
        elif how in ("ff", "80"):
            b[i] = int(how, 16)
        elif how == "insert":
            b.insert(i, data.draw(st.integers(0, 255)))
        else:
            del b[i:]
    return bytes(b)


def batch(base_offset: int = 0, base_ts: int = 0, max_ts: int = 0) -> Batch:
    return Batch(0, 0, 2, base_offset, 0, 0, True, 0, base_timestamp=base_ts, max_timestamp=max_ts)


def both(buf: bytes, p: int, end: int, cut: int, log_append_time: int, **fields: int) -> tuple[Batch, Batch]:
    """Run both loops on fresh batches; assert they agree; return (native, python) batches."""
    native, python = batch(**fields), batch(**fields)
    problem_n = records._native_v2_records(buf, p, end, native, cut, log_append_time)
    problem_p = records._v2_records(buf, p, end, python, cut, log_append_time)
    assert problem_n == problem_p
    assert same(native.records, python.records)
    assert all(type(r) is Record for r in native.records)
    assert native.warnings == python.warnings
    return native, python


def test_the_record_loop_is_native_by_default() -> None:
    assert records.native_enabled()


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), recs=st.lists(record, max_size=6))
def test_native_and_python_agree_on_valid_mutated_and_truncated_records(data: st.DataObject, recs: list) -> None:
    raw = b"".join(encode_record(r) for r in recs)
    if data.draw(st.booleans()):
        raw = mutate(data, raw)
    pad = data.draw(st.binary(max_size=4))  # bytes around the range, as in a field holding several batches
    buf = pad + raw + data.draw(st.binary(max_size=4))
    both(
        buf, len(pad), len(pad) + len(raw), data.draw(st.sampled_from(CUTS)), data.draw(st.sampled_from([0, 8])),
        base_offset=data.draw(st.sampled_from([0, 1000, *INT64])),
        base_ts=data.draw(st.sampled_from([0, 1_700_000_000_000, *INT64])),
        max_ts=data.draw(st.integers(*INT64)),
    )  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), raw=st.binary(max_size=60))
def test_native_and_python_agree_on_arbitrary_bytes(data: st.DataObject, raw: bytes) -> None:
    both(raw, 0, len(raw), data.draw(st.sampled_from(CUTS)), 0)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), recs=st.lists(record, min_size=1, max_size=5))
def test_whole_fields_decode_identically(data: st.DataObject, recs: list) -> None:
    """Through decode_records: every batch's records and warnings, and the set's, are the same."""
    base_offset, timestamp_type = data.draw(st.integers(0, 1 << 40)), data.draw(st.integers(0, 1))
    field = encode_batch(recs, base_offset=base_offset, timestamp_type=timestamp_type)
    field = mutate(data, field + encode_batch(recs[:1]))
    mode = data.draw(st.sampled_from([FULL, LENGTHS_ONLY, Payloads.preview(2)]))
    try:
        native = decode_records(field, payloads=mode)
        records.use_native(False)
        python = decode_records(field, payloads=mode)
    finally:
        records.use_native(True)
    assert native == python
    assert all(same(a.records, b.records) for a, b in zip(native.batches, python.batches, strict=True))


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=200), start=st.integers(0, 9))
def test_the_batch_checksum_in_c_is_the_crc32c_modules(raw: bytes, start: int) -> None:
    """Both ways the C code computes it (the processor's instruction where there is one, the table),
    on views starting anywhere (a batch is not aligned in its frame)."""
    from crc32c import crc32c

    view = memoryview(raw)[min(start, len(raw)) :]
    expected = crc32c(view)
    assert records._native.crc32c(view) == expected
    assert records._native.crc32c(view, True) == expected
    assert records._crc32c(view) == expected


def varbytes(b: bytes) -> bytes:
    return write_varint(len(b)) + b


def raw_record(body: bytes) -> bytes:
    return write_varint(len(body)) + body


BAD_UTF8_KEY = raw_record(b"\0\0\0" + varbytes(b"k") + varbytes(b"v") + write_varint(1) + varbytes(b"\xff") + b"\0")


def test_a_header_key_that_is_not_utf8_is_left_to_python_and_warned_once() -> None:
    good = encode_record(new_record(b"k", b"v", [("h", b"x")]))
    buf = good + BAD_UTF8_KEY + good
    native, _ = both(buf, 0, len(buf), sys.maxsize, 0)
    assert [r.headers for r in native.records] == [(("h", b"x"),), (("\\xff", b""),), (("h", b"x"),)]
    assert [w.code for w in native.warnings] == ["header_key_not_utf8"]


def test_numbers_past_64_bits_are_left_to_python() -> None:
    """A varlong of ten bytes carrying 70 bits, and offsets or timestamps past int64 after adding
    the batch's base: Python's integers, and Python's answer."""
    wide = raw_record(b"\x00" + b"\xff" * 9 + b"\x7f" + b"\x00\x01\x01\x00")
    native, _ = both(wide, 0, len(wide), sys.maxsize, 0)
    assert native.records[0].wire_timestamp == -(1 << 69)
    up = encode_record(new_record(b"k", offset=5, timestamp=5))
    native, _ = both(up, 0, len(up), sys.maxsize, 0, base_offset=INT64[1], base_ts=INT64[1])
    assert native.records[0].offset == INT64[1] + 5 and native.records[0].timestamp == INT64[1] + 5


def test_payloads_are_cut_and_nulls_stay_none() -> None:
    raw = encode_record(new_record(b"abcdef", None, [("h", b"123456"), ("n", None)]))
    native, _ = both(raw, 0, len(raw), 2, 0)
    rec = native.records[0]
    assert (rec.key, rec.value, rec.key_size, rec.value_size) == (b"ab", None, 6, -1)
    assert rec.headers == (("h", b"12"), ("n", None))


def test_log_append_time_replaces_every_timestamp() -> None:
    raw = b"".join(encode_record(new_record(b"k", offset=i, timestamp=i)) for i in range(3))
    native, _ = both(raw, 0, len(raw), sys.maxsize, 8, base_ts=100, max_ts=777)
    assert [r.timestamp for r in native.records] == [777] * 3
    assert [r.wire_timestamp for r in native.records] == [0, 1, 2]


def test_no_memory_or_reference_leaks_over_many_calls() -> None:
    hdrs = [("trace", b"t" * 16), ("x", None)]
    good = b"".join(encode_record(new_record(b"key-%d" % i, b"v" * 50, hdrs)) for i in range(50))
    buffers = [good, good[: len(good) // 2], good + BAD_UTF8_KEY, good[:-1] + b"\x07"]
    append_ts = 1 << 70  # a Python int object shared by every record of a log-append-time batch

    def run(times: int) -> None:
        for _ in range(times):
            for buf in buffers:
                for cut in (sys.maxsize, 4):
                    records._native_v2_records(buf, 0, len(buf), batch(max_ts=append_ts), cut, 8)
                    records._native_v2_records(buf, 0, len(buf), batch(), cut, 0)

    assert_no_leaks(run, [*buffers, append_ts, Record])


def test_records_and_their_headers_stay_visible_to_the_cycle_collector() -> None:
    import weakref

    raw = encode_record(new_record(b"k", b"v", [("h", b"x")]))
    out = batch()
    assert records._native_v2_records(raw, 0, len(raw), out, sys.maxsize, 0) is None
    rec = out.records[0]
    assert gc.is_tracked(rec) and gc.is_tracked(rec.headers) and gc.is_tracked(out.records)

    class Holder:
        pass

    holder = Holder()
    holder.back = out.records
    out.records.append(holder)  # a cycle through the list the C loop filled
    ref = weakref.ref(holder)
    del holder, out, rec
    gc.collect()
    assert ref() is None


@settings(max_examples=100, deadline=None)
@given(recs=st.lists(record, min_size=1, max_size=6))
def test_valid_records_are_decoded_in_c_without_falling_back(recs: list) -> None:
    raw = b"".join(encode_record(r) for r in recs)
    out = batch()
    assert records._native.v2_records(raw, 0, len(raw), out.records, Record, 0, 0, None, sys.maxsize) is True
    python = batch()
    assert records._v2_records(raw, 0, len(raw), python, sys.maxsize, 0) is None
    assert same(out.records, python.records)


def test_buffers_other_than_bytes_and_odd_ranges_are_left_to_python() -> None:
    raw = encode_record(new_record(b"k", b"v"))
    for buf, p, end in ((bytearray(raw), 0, len(raw)), (raw, 0, len(raw) + 1), (raw, 2, 1)):
        assert records._native.v2_records(buf, p, end, [], Record, 0, 0, None, sys.maxsize) is False
    native, _ = both(bytearray(raw), 0, len(raw), sys.maxsize, 0)  # type: ignore[arg-type]
    assert type(native.records[0].key) is bytearray


# -- the column loop -----------------------------------------------------------------------------


def as_records(columns: RecordColumns) -> list[tuple]:
    """The columns as (offset, timestamp, key, value, headers, key_size, value_size) per record."""
    block = RecordBlock()
    block.add(columns, WIRE)
    offsets = [int(v) for v in np.frombuffer(columns.offset, dtype=np.int64)]
    stamps = [int(v) for v in np.frombuffer(columns.timestamp, dtype=np.int64)]
    headers = [tuple(h) for h in block.listed("headers")]
    return list(zip(offsets, stamps, block.listed("key"), block.listed("value"), headers,
                    block.listed("key_size"), block.listed("value_size"), strict=True))  # fmt: skip


def columns_agree(buf: bytes, p: int, end: int, cut: int, log_append_time: int, **fields: int) -> RecordColumns | None:
    """The column loop's answer, once checked against the Python loop's: the same records, or None
    where Python warned or stopped (or kept numbers that columns cannot hold)."""
    python = batch(**fields)
    problem = records._v2_records(buf, p, end, python, cut, log_append_time)
    columns = records._native_v2_columns(buf, p, end, batch(**fields), cut, log_append_time)
    if columns is not None:
        assert problem is None and not python.warnings
        assert same(as_records(columns), [tuple(r)[:7] for r in python.records])
    assert in_arena(buf, p, end, cut, log_append_time, fields) == columns
    return columns


def in_arena(buf: bytes, p: int, end: int, cut: int, log_append_time: int, fields: dict[str, int]
             ) -> RecordColumns | None:  # fmt: skip
    """The same batch decoded into an arena already holding a batch: its spans' bytes, as columns
    (None: declined, and the arena cut back to what it held)."""
    arena = RecordArena()
    seed = encode_record(new_record(b"seed", b"x" * 300, [("s", b"y")]))
    assert records._native_v2_columns(seed, 0, len(seed), batch(), sys.maxsize, 0, arena) is not None
    held = [bytes(b) for b in arena.buffers]
    spans = records._native_v2_columns(buf, p, end, batch(**fields), cut, log_append_time, arena)
    if spans is None:
        assert [bytes(b) for b in arena.buffers] == held
        return None
    assert type(spans) is ArenaColumns and spans.starts == tuple(map(len, held))
    assert spans.ends == arena.lengths()
    assert [bytes(b[: len(h)]) for b, h in zip(arena.buffers, held, strict=True)] == held
    return RecordColumns(*(bytes(b[a:z]) for b, a, z in zip(spans.buffers, spans.starts, spans.ends, strict=True)))


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), recs=st.lists(record, max_size=6))
def test_columns_and_python_agree_on_valid_mutated_and_truncated_records(data: st.DataObject, recs: list) -> None:
    raw = b"".join(encode_record(r) for r in recs)
    mutated = data.draw(st.booleans())
    if mutated:
        raw = mutate(data, raw)
    pad = data.draw(st.binary(max_size=4))
    buf = pad + raw + data.draw(st.binary(max_size=4))
    base_offset = data.draw(st.sampled_from([0, 1000, *INT64]))
    base_ts = data.draw(st.sampled_from([0, 1_700_000_000_000, *INT64]))
    log_append_time = data.draw(st.sampled_from([0, 8]))
    cut, max_ts = data.draw(st.sampled_from(CUTS)), data.draw(st.integers(*INT64))
    columns = columns_agree(buf, len(pad), len(pad) + len(raw), cut, log_append_time,
                            base_offset=base_offset, base_ts=base_ts, max_ts=max_ts)  # fmt: skip
    no_overflow = base_offset == 0 and (base_ts == 0 or log_append_time)
    if not mutated and no_overflow:  # valid records: decoded in C, none left to Python
        assert columns is not None and columns.count == len(recs)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), raw=st.binary(max_size=60))
def test_columns_and_python_agree_on_arbitrary_bytes(data: st.DataObject, raw: bytes) -> None:
    columns_agree(raw, 0, len(raw), data.draw(st.sampled_from(CUTS)), 0)


def test_columns_keep_cuts_nulls_headers_and_append_times() -> None:
    recs = [new_record(b"abcdef", None, [("h", b"123456"), ("n", None), ("é", b"")], offset=i, timestamp=i)
            for i in range(3)]  # fmt: skip
    raw = b"".join(encode_record(r) for r in recs)
    columns = columns_agree(raw, 0, len(raw), 2, 8, base_offset=10, max_ts=777)
    assert columns is not None
    assert as_records(columns) == [(10 + i, 777, b"ab", None, (("h", b"12"), ("n", None), ("é", b"")), 6, -1)
                                   for i in range(3)]  # fmt: skip


def test_columns_decline_what_the_record_loop_leaves_to_python() -> None:
    good = encode_record(new_record(b"k", b"v", [("h", b"x")]))
    assert columns_agree(good + BAD_UTF8_KEY + good, 0, 2 * len(good) + len(BAD_UTF8_KEY), sys.maxsize, 0) is None
    wide = raw_record(b"\x00" + b"\xff" * 9 + b"\x7f" + b"\x00\x01\x01\x00")
    assert columns_agree(wide, 0, len(wide), sys.maxsize, 0) is None
    up = encode_record(new_record(b"k", offset=5, timestamp=5))
    assert columns_agree(up, 0, len(up), sys.maxsize, 0, base_offset=INT64[1]) is None
    huge_null = raw_record(b"\0\0\0" + write_varint(-(1 << 33)) + b"\0\0")  # a null key of size -2**33
    assert columns_agree(huge_null, 0, len(huge_null), sys.maxsize, 0) is None
    for buf, p, end in ((bytearray(good), 0, len(good)), (good, 0, len(good) + 1), (good, 2, 1)):
        assert records._native.v2_columns(buf, p, end, 0, 0, None, sys.maxsize) is None
    assert records._native.v2_columns(good, 0, len(good), 0, 0, 1 << 70, sys.maxsize) is None
    assert records._native.v2_columns(good, 0, len(good), 0, 0, "soon", sys.maxsize) is None
    assert records._native.v2_columns(good, 0, 0, 0, 0, None, sys.maxsize) == RecordColumns(*[b""] * 13)


@pytest.mark.parametrize("codec", sorted(CODEC_NAMES))
@pytest.mark.parametrize("mode", [FULL, LENGTHS_ONLY, Payloads.preview(2)], ids=["full", "lengths", "preview"])
def test_whole_fields_as_columns_hold_the_records_of_every_codec(codec: int, mode: Payloads) -> None:
    """decode_records(columns=True) against the Python loop: same batches and warnings, and the
    columns hold the Python loop's records; control batches keep their Records."""
    recs = [new_record(b"key-%d" % i, b"v" * i, [("trace", b"t" * i)] * (i % 3), offset=i, timestamp=i)
            for i in range(40)]  # fmt: skip
    field = (encode_batch(recs, base_offset=100, codec=codec) + encode_batch(recs[:3], timestamp_type=1, codec=codec)
             + encode_batch([recs[0]], control=True))  # fmt: skip
    columnar = decode_records(field, payloads=mode, columns=True)
    arena = RecordArena()
    arena_set = decode_records(field + field, payloads=mode, columns=arena)  # (twice: batches end to end)
    assert [type(b.columns) for b in arena_set.batches] == [ArenaColumns, ArenaColumns, type(None)] * 2
    block, spans = RecordBlock(), RecordBlock()
    for b in columnar.batches[:2] * 2:
        block.add(b.columns, WIRE)  # type: ignore[arg-type]
    for b in arena_set.batches:
        if b.columns is not None:
            spans.add(b.columns, WIRE)
    assert spans._joined("value") is arena.buffers[RecordColumns._fields.index("value")]  # no copy
    for name in ("offset", "timestamp", "key", "value", "headers", "key_size", "value_size"):
        assert same(spans.listed(name), block.listed(name))
    try:
        records.use_native(False)
        python = decode_records(field, payloads=mode, columns=True)
    finally:
        records.use_native(True)
    assert [b.columns is not None for b in columnar.batches] == [True, True, False]
    assert all(b.columns is None for b in python.batches)
    for c, p in zip(columnar.batches, python.batches, strict=True):
        if c.columns is not None:
            assert same(as_records(c.columns), [tuple(r)[:7] for r in p.records])
            assert c.records_decoded == len(p.records) and c.records == []
            c.columns, p.records = None, []
        assert c == p
    assert columnar.warnings == python.warnings


def test_column_loop_leaks_nothing() -> None:
    hdrs = [("trace", b"t" * 16), ("x", None)]
    good = b"".join(encode_record(new_record(b"key-%d" % i, b"v" * 50, hdrs)) for i in range(50))
    buffers = [good, good[: len(good) // 2], good + BAD_UTF8_KEY, good[:-1] + b"\x07", good + b"\x7e" * 9]
    append_ts = 1 << 40

    def run(times: int) -> None:
        for _ in range(times):
            for buf in buffers:
                for cut in (sys.maxsize, 4):
                    records._native.v2_columns(buf, 0, len(buf), 0, 0, append_ts, cut)
                    records._native.v2_columns(buf, 0, len(buf), 0, 0, None, cut)
                    records._native.v2_columns(buf, 0, len(buf), 0, 0, None, cut, RecordArena().buffers)

    assert_no_leaks(run, [*buffers, append_ts])


def test_an_arena_an_array_still_points_into_is_renewed_not_written() -> None:
    """A table handed on may still be written from the arena's buffers: a batch decoded meanwhile
    goes to new buffers, and what the array shows stays as it was."""
    arena = RecordArena()
    one = encode_record(new_record(b"k1", b"first"))
    first = records._native_v2_columns(one, 0, len(one), batch(), sys.maxsize, 0, arena)
    block = RecordBlock()
    block.add(first, WIRE)  # type: ignore[arg-type]
    _, shown = block.binary("value")
    held = memoryview(shown)  # (as an Arrow buffer holds it)
    two = encode_record(new_record(b"k2", b"second"))
    second = records._native_v2_columns(two, 0, len(two), batch(), sys.maxsize, 0, arena)
    assert second is not None and second.buffers is arena.buffers is not first.buffers  # type: ignore[union-attr]
    assert bytes(held) == b"first" and bytes(arena.buffers[7]) == b"second"
    with pytest.raises(TypeError):
        records._native.v2_columns(two, 0, len(two), 0, 0, None, sys.maxsize, (bytearray(),) * 12)
    with pytest.raises(TypeError):
        records._native.v2_columns(two, 0, len(two), 0, 0, None, sys.maxsize, (b"",) * 13)
