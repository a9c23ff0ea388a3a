"""The native detail walk (``tables/_native.c``) against the Python schema walk, through the sink.

Random request and response bodies of every API version (tests/strategies.py, from the schema
table) are paired into an exchange and fed to two table sinks: one with the native walk, one with
the Python reference (``detail_walk.native`` and the C row append switched off, as
``KDISSECT_PURE_PYTHON=1`` does). Every table must be equal, cell for cell. Topic names, topic
ids and partition numbers are narrowed to a few values so request and response rows merge, names
collide with ids, and the nil topic id shows up; records fields hold a real batch or random
bytes; error codes are random, so most structs err. Last, whole captures: random exchanges encoded
by kdissect.testing's encoder into a TCP connection, through the local engine both ways.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdissect.decoders import schema
from kdissect.decoders.entities import PARTITION_KEYS, carries_records
from kdissect.engines import local
from kdissect.events import Exchange, KafkaMessage
from kdissect.options import Options
from kdissect.tables import detail_walk, rows
from kdissect.tables.columns import TABLES, cells
from kdissect.tables.sink import TableSink
from kdissect.testing import encoder
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.records_encode import encode_batch, new_record
from tests.strategies import message_values, narrowed

pytestmark = pytest.mark.skipif(detail_walk.native is None, reason="the native detail walk is not built")

_KINDS = {(k, v, kind) for k, v, kind in schema.all_api_versions()}
PAIRS = sorted({(k, v) for k, v, kind in _KINDS if kind == "request" and (k, v, "response") in _KINDS})
RECORD_PAIRS = [(k, v) for k, v in PAIRS if any(carries_records(schema.api_message(k, v, kind))
                                                for kind in ("request", "response"))]
BATCH = encode_batch([new_record(b"k", b"v"), new_record(None, b"w", offset=1)], base_offset=3)


@contextlib.contextmanager
def reference() -> Iterator[None]:
    """The Python path of the sink: no native walk, no C row append."""
    walk, append = detail_walk.native, rows._native_rows
    detail_walk.native = rows._native_rows = None
    try:
        yield
    finally:
        detail_walk.native, rows._native_rows = walk, append


def _detail_values(m: schema.Field, v: Any) -> st.SearchStrategy | None:
    if m.key in PARTITION_KEYS and isinstance(v, int) and m.elem == "int32":
        return st.sampled_from((0, 0, 1))
    if m.key == "records" and isinstance(v, bytes):
        return st.sampled_from((BATCH, BATCH, v, b""))
    if m.key == "base_offset" and isinstance(v, int):
        return st.sampled_from((-1, 5))
    return None


def narrow(f: schema.Field, value: Any, data: st.DataObject) -> Any:
    """``value`` (of struct field ``f``) with its topic names, topic ids and partitions drawn from a few."""
    return narrowed(f, value, data, _detail_values)


def message(key: int, version: int, is_request: bool, data: st.DataObject) -> KafkaMessage:
    msg = schema.api_message(key, version, "request" if is_request else "response")
    body = narrow(msg.root, data.draw(message_values(msg)), data)
    ts = 1_000 if is_request else 5_000
    return KafkaMessage(1, is_request, 0, 100, ts, ts + 10, key, version, 7, {"client_id": "c"}, body)


def tables(ex: Exchange) -> dict[str, dict[str, list[Any]]]:
    sink = TableSink()
    sink.consume(ex)
    return {name: {c: cells(v) for c, v in sink.columns(name).items()} for name in TABLES}


def check_exchange(pair: tuple[int, int], shape: str, data: st.DataObject) -> None:
    key, version = pair
    req = message(key, version, True, data) if shape != "orphan_response" else None
    resp = message(key, version, False, data) if shape != "unanswered" else None
    ex = Exchange(1, req, resp, shape, client=("10.0.0.1", 5000), broker=("10.0.0.2", 9092))
    native = tables(ex)
    with reference():
        python = tables(ex)
    assert native == python


SHAPES = st.sampled_from(("ok", "unanswered", "orphan_response"))


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(pair=st.sampled_from(PAIRS), shape=SHAPES, data=st.data())
def test_every_table_is_the_same_from_the_native_walk(pair: tuple[int, int], shape: str, data: st.DataObject) -> None:
    check_exchange(pair, shape, data)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(pair=st.sampled_from(RECORD_PAIRS), shape=SHAPES, data=st.data())
def test_records_rows_are_the_same_from_the_native_walk(pair: tuple[int, int], shape: str, data: st.DataObject) -> None:
    """Produce and Fetch (the records carriers), where base offsets and aborted lists matter."""
    check_exchange(pair, shape, data)


def test_the_sink_takes_the_native_walk() -> None:
    """The sink really uses the walk (else the comparison above compares Python with itself)."""
    calls = []
    real = detail_walk.walk_exchange

    def spy(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    detail_walk.walk_exchange = spy  # type: ignore[assignment]
    try:
        req = KafkaMessage(1, True, 0, 10, 1, 2, 18, 0, 7, {}, {})
        tables(Exchange(1, req, None, "unanswered"))
    finally:
        detail_walk.walk_exchange = real  # type: ignore[assignment]
    assert calls


TXN_BATCH = encode_batch([new_record(b"k", b"v")], base_offset=3, transactional=True, producer_id=9, producer_epoch=0)


@pytest.mark.parametrize("base_offset", [-1, 0, 5])
def test_produce_offsets_come_from_the_answer_only_when_it_gave_one(base_offset: int) -> None:
    req = KafkaMessage(1, True, 0, 100, 1, 2, 0, 9, 7, {}, {
        "transactional_id": None, "acks": 1, "timeout_ms": 5,
        "topic_data": [{"name": "orders", "partition_data": [{"index": 0, "records": BATCH}]}]})
    resp = KafkaMessage(1, False, 0, 100, 5, 6, 0, 9, 7, {}, {"responses": [{"name": "orders", "partition_responses": [
        {"index": 0, "error_code": 0, "base_offset": base_offset, "log_append_time_ms": -1, "log_start_offset": 0,
         "record_errors": [], "error_message": None}]}], "throttle_time_ms": 0})
    ex = Exchange(1, req, resp, "ok")
    native = tables(ex)
    with reference():
        python = tables(ex)
    assert native == python
    assert native["records"]["offset"] == ([None, None] if base_offset < 0 else [base_offset, base_offset + 1])


@pytest.mark.parametrize("aborted", [[], [{"producer_id": 9, "first_offset": 0}]])
def test_fetched_records_are_aborted_as_the_answer_lists(aborted: list[dict[str, int]]) -> None:
    req = KafkaMessage(1, True, 0, 100, 1, 2, 1, 11, 7, {}, {"replica_id": -1, "max_wait_ms": 5, "min_bytes": 1})
    resp = KafkaMessage(1, False, 0, 100, 5, 6, 1, 11, 7, {}, {
        "throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [{"topic": "orders", "partitions": [
            {"partition_index": 0, "error_code": 0, "high_watermark": 9, "last_stable_offset": 9,
             "log_start_offset": 0, "aborted_transactions": aborted, "preferred_read_replica": -1,
             "records": TXN_BATCH}]}]})
    ex = Exchange(1, req, resp, "ok")
    native = tables(ex)
    with reference():
        python = tables(ex)
    assert native == python
    assert native["records"]["aborted"] == [bool(aborted)]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(pairs=st.lists(st.sampled_from(PAIRS), min_size=1, max_size=4), data=st.data())
def test_captures_of_random_exchanges_give_the_same_tables(pairs: list[tuple[int, int]], data: st.DataObject) -> None:
    """End to end: random exchanges encoded by kdissect.testing's encoder into one TCP connection,
    read by the local engine with and without the native walk (decoded bodies as the decoder makes them)."""
    messages, t = [], 1_700_000_000_000_000_000
    for cid, (key, version) in enumerate(pairs):
        for kind, direction in (("request", 0), ("response", 1)):
            msg = schema.api_message(key, version, kind)
            body = narrow(msg.root, data.draw(message_values(msg)), data)
            encode = encoder.encode_request if kind == "request" else encoder.encode_response
            messages.append((direction, encode(key, version, body, correlation_id=cid), t))
            t += 1_000_000
    items = tcp_conversation(messages)
    native = local.analyze_items(items, Options()).tables
    with reference():
        python = local.analyze_items(items, Options()).tables
    assert {n: {c: cells(v) for c, v in cols.items()} for n, cols in native.items()} == \
        {n: {c: cells(v) for c, v in cols.items()} for n, cols in python.items()}


def test_the_walk_is_exported_to_other_extensions() -> None:
    """The connection engine (another extension) imports the walk through this capsule (_native.h)."""
    capsule = detail_walk.native._C_API  # type: ignore[union-attr]
    name = ctypes.pythonapi.PyCapsule_GetName
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    assert name(capsule) == b"kdissect.tables._native._C_API"
