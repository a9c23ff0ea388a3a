"""The records and batches rows in C (``tables/_record_rows.c``) against the Python reference.

Messages carrying records fields of random batches — every codec, both timestamp types, offsets
near the ends of int64, and damage the C code must leave to Python (control and transactional
batches, wrong CRCs, lying counts, cut batches, legacy messages, trailing bytes, bombs) — go to
two table sinks, one message or one lane piece at a time: one sink makes the rows in C where it
can, the other always in Python (``rows_in_c`` and ``lane_rows_in_c`` declining, as without the
extension). The records, batches and anomalies tables must be equal cell for cell, also with a
small payload budget and a small decompression budget, and in a run writing batches without records
(C then decodes into a scratch arena); and the C path must really be taken.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdissect.decoders.records import Limits, RunMeter
from kdissect.options import Options
from kdissect.tables import record_rows, sink
from kdissect.tables.columns import NULLABLE, Typed, cells
from kdissect.tables.detail_walk import LaneParts
from kdissect.tables.sink import TableSink
from kdissect.testing.records_encode import control_record, encode_batch, encode_message_set, new_record

pytestmark = pytest.mark.skipif(record_rows._native_rows is None, reason="the tables extension is not built")

TABLES = ("records", "batches", "anomalies")
CODECS = (0, 0, 1, 2, 3, 4)  # none (twice as likely), gzip, snappy, lz4, zstd

payloads = st.one_of(st.none(), st.binary(max_size=12))
records = st.lists(st.tuples(payloads, payloads, st.lists(st.tuples(st.text(max_size=4), payloads), max_size=2)),
                   max_size=4)


@st.composite
def batches(draw: st.DrawFn) -> bytes:
    """One magic 2 batch, plain most of the time, else with a damage the C code declines."""
    recs = [new_record(k, v, h, offset=i, timestamp=i) for i, (k, v, h) in enumerate(draw(records))]
    damage = draw(st.sampled_from(["none"] * 6 + ["control", "transactional", "crc", "count", "cut", "legacy",
                                                  "tail", "empty"]))
    if damage == "control":
        recs = [control_record(draw(st.sampled_from([0, 1])))]
    if damage == "legacy":
        return encode_message_set(recs or [new_record(b"k", b"v")], magic=draw(st.sampled_from([0, 1])))
    base = draw(st.one_of(st.integers(0, 1000), st.just(2**63 - 2)))
    raw = encode_batch(recs if damage != "empty" else [], base_offset=base, codec=draw(st.sampled_from(CODECS)),
                       timestamp_type=draw(st.sampled_from([0, 1])), base_timestamp=1_700_000_000_000,
                       control=damage == "control", transactional=damage == "transactional",
                       producer_id=draw(st.integers(-1, 5)), producer_epoch=draw(st.integers(-1, 3)),
                       crc=1 if damage == "crc" else None,
                       record_count=len(recs) + 1 if damage == "count" else None)
    if damage == "cut":
        return raw[: draw(st.integers(1, len(raw) - 1))]
    return raw + (b"\x00\x01" if damage == "tail" else b"")


fields = st.lists(st.tuples(st.sampled_from(["t", "u"]), st.integers(0, 2), st.lists(batches(), min_size=1,
                                                                                     max_size=3)), max_size=3)
messages = st.lists(st.tuples(fields, fields, st.dictionaries(st.tuples(st.sampled_from(["t", "u"]),
                                                                        st.integers(0, 2)), st.integers(0, 10**6),
                                                              max_size=2)), min_size=1, max_size=8)


def _located(field: list[tuple[str, int, list[bytes]]]) -> list[tuple]:
    return [(topic, None, partition, b"".join(raw), None) for topic, partition, raw in field]


@contextlib.contextmanager
def _python_only() -> Iterator[None]:
    """The sink as without the extension: every message's rows made by the Python reference."""
    saved = sink.rows_in_c, sink.lane_rows_in_c
    sink.rows_in_c = lambda *args: None  # type: ignore[assignment]
    sink.lane_rows_in_c = lambda left, start, *args: (start, 0)  # type: ignore[assignment]
    try:
        yield
    finally:
        sink.rows_in_c, sink.lane_rows_in_c = saved


def _options(payload_bytes: int, run: int) -> Options:
    return replace(Options(), payload_bytes=payload_bytes, limits=Limits(run=RunMeter(run)))


def _tables(msgs: list, options: Options, lane: bool, wanted: tuple[str, ...] = TABLES
            ) -> dict[str, dict[str, list[Any]]]:  # fmt: skip
    out = TableSink((*wanted, "errors"), options=options)
    if lane:  # one piece of the native pairing's left exchanges, some with an error the sink makes
        error = ("", "error_code", 3, "t", None, 0, None, None)
        left = [(7, cid, 0, (cid, cid), (cid, cid + 1), [error] * (cid % 3 == 0), [], _located(req), _located(resp),
                 base) for cid, (req, resp, base) in enumerate(msgs)]
        out._lane_parts(LaneParts(left=left))
    else:
        for cid, (req, resp, base) in enumerate(msgs):
            out._record_rows(7, cid, (cid, cid), (cid, cid + 1), _located(req), _located(resp), base)
    if out._c_arena is not None and out._arena is None:  # (a scratch arena keeps nothing)
        assert not any(out._c_arena.buffers)
    return {name: {c: cells(v) for c, v in out.columns(name).items()} for name in (*wanted, "errors")}


def _compare(msgs: list, payload_bytes: int, run: int, lane: bool, wanted: tuple[str, ...] = TABLES) -> None:
    native = _tables(msgs, _options(payload_bytes, run), lane, wanted)
    with _python_only():
        python = _tables(msgs, _options(payload_bytes, run), lane, wanted)
    assert native == python


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(msgs=messages, lane=st.booleans())
def test_records_and_batches_rows_equal_the_reference(msgs: list, lane: bool) -> None:
    _compare(msgs, 256 << 20, 1 << 40, lane)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(msgs=messages, lane=st.booleans(), run=st.sampled_from([1 << 40, 300]))
def test_batches_alone_equal_the_reference(msgs: list, lane: bool, run: int) -> None:
    _compare(msgs, 256 << 20, run, lane, ("batches", "anomalies"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(msgs=messages, lane=st.booleans(), payload_bytes=st.integers(0, 200), run=st.integers(0, 400))
def test_the_payload_and_decompression_budgets_hold_as_in_the_reference(msgs: list, lane: bool, payload_bytes: int,
                                                                        run: int) -> None:
    _compare(msgs, payload_bytes, run, lane)


def _plain(cid: int) -> tuple:
    batch = encode_batch([new_record(b"k%d" % cid, b"v", [("h", b"x")])], codec=CODECS[cid % len(CODECS)])
    return ([("t", 0, [batch])], [], {("t", 0): 100 + cid})


@pytest.mark.parametrize("wanted", [TABLES, ("batches",)])
@pytest.mark.parametrize("lane", [False, True])
def test_plain_batches_take_the_c_path(lane: bool, wanted: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[Any] = []
    for name in ("rows_in_c", "lane_rows_in_c"):
        original = getattr(sink, name)
        monkeypatch.setattr(sink, name, lambda *args, _f=original: taken.append(_f(*args)) or taken[-1])
    msgs = [_plain(cid) for cid in range(12)]
    _compare(msgs, 256 << 20, 1 << 40, lane, wanted)
    if lane:  # (the first exchange has an errors row: Python; the others go in one C call)
        assert max(t[0] for t in taken if isinstance(t, tuple)) == len(msgs)
    else:
        assert sum(isinstance(t, int) for t in taken) == len(msgs)  # (the records table is steady from the start)


def test_the_batches_of_a_call_are_one_piece_of_the_records_block() -> None:
    """A batch per record (chatty traffic): the C rows add one arena span per call, not one per batch,
    with each batch's first offset and count beside it."""
    msgs = [_plain(cid) for cid in range(12)]
    out = TableSink(options=_options(256 << 20, 1 << 40))
    out._lane_parts(LaneParts(left=[(7, cid, 0, (cid, cid), (cid, cid + 1), [], [], _located(req), _located(resp),
                                     base) for cid, (req, resp, base) in enumerate(msgs)]))
    block = out.rows["records"].block
    assert block is not None
    assert block.counts == [0] + [1] * len(msgs)  # (the steady table's empty start: TableRows.steady)
    assert Typed(block.first_offsets, NULLABLE).tolist() == [None] + [100 + cid for cid in range(len(msgs))]
    assert len(block.batches) == 2  # that empty start, then the one C call's
    assert sum(piece.count for piece in block.batches) == len(msgs)
