"""The detail walk over a frame's bytes (``tables/_walk_bytes.c``) against the walk over its decoded body.

Random bodies of every message version (tests/strategies.py, narrowed as the detail walk's own tests
narrow them: few topics, partitions and ids, real batches in records fields, random error codes) are
encoded into frames; where the bytes walk takes a frame it must find exactly what ``tables/_native.c``'s
walk finds in the body the decoder's C path makes of it (partition rows, records, topic ids, base
offsets, the top-level fields asked for), and where that C path leaves the frame the bytes walk must
decline too. The lanes' differential tests (tests/reassembly/test_native_lanes.py) then compare whole
tables made this way with the Python reference.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdissect.decoders import api, compiler, schema
from kdissect.tables import detail_walk
from kdissect.tables.details import PARAMS
from kdissect.testing import encoder
from tests.strategies import message_values
from tests.tables.test_detail_walk import BATCH, narrow

pytestmark = pytest.mark.skipif(detail_walk.native is None or compiler.FRAME_PROGRAMS is None,
                                reason="the native detail walk is not built")

MESSAGES = sorted(schema.all_api_versions())
WANT = {False: tuple(map(sys.intern, PARAMS[3:])), True: (sys.intern("throttle_time_ms"),)}


def _frame(key: int, version: int, response: bool, body: dict[str, Any]) -> bytes:
    if response:
        frame = encoder.encode_response(key, version, body, correlation_id=7, size_prefix=False)
        api.decode_response_frame(frame, key, version)  # (registers the frame's programs)
    else:
        frame = encoder.encode_request(key, version, body, correlation_id=7, size_prefix=False)
        api.decode_request_frame(frame)
    return frame


def _compare(key: int, version: int, response: bool, frame: bytes) -> bool:
    """Both walks of one frame: True when the bytes walk took it (and found the same), False when it declined."""
    kind = "response" if response else "request"
    programs = compiler.FRAME_PROGRAMS[kind]
    plan = detail_walk.plan_of(schema.api_message(key, version, kind))
    walk = detail_walk.native
    assert walk is not None
    decoded = compiler.frame_decoder(frame, programs, key if response else None, version if response else None, False)
    found: dict[str, Any] = {"partitions": {}, "records": [], "topics": {}, "base_offsets": {}}
    got = walk.walk_frame(plan, programs, frame, key, version, response, found["partitions"], found["records"],
                          found["topics"], found["base_offsets"] if response else None, True, WANT[response])
    if got is None:
        return False
    assert decoded is not None, "the bytes walk took a frame the decoder's C path leaves"
    body = decoded["body"]
    ref: dict[str, Any] = {"partitions": {}, "records": [], "topics": {}, "base_offsets": {}}
    errors: list[tuple] = []
    brokers: list[dict] = []
    walk.walk(plan, body, response, ref["partitions"], errors if response else None, ref["records"], ref["topics"],
              ref["base_offsets"] if response else None, brokers if response else None)
    assert not errors and not brokers  # (the bytes walk declines those)
    assert found == ref
    assert list(found["partitions"]) == list(ref["partitions"])  # (the rows' order: dicts compare without it)
    assert got == tuple(body.get(k) for k in WANT[response])
    return True


@settings(max_examples=800, deadline=None, suppress_health_check=list(HealthCheck))
@given(message=st.sampled_from(MESSAGES), data=st.data())
def test_the_bytes_walk_finds_what_the_body_walk_finds(message: tuple[int, int, str], data: st.DataObject) -> None:
    key, version, kind = message
    msg = schema.api_message(key, version, kind)
    body = narrow(msg.root, data.draw(message_values(msg)), data)
    if data.draw(st.booleans()):  # most answers of chatty traffic: no error anywhere
        body = _no_errors(body)
    _compare(key, version, kind == "response", _frame(key, version, kind == "response", body))


def _names_ids(plan: detail_walk.Plan) -> bool:
    flags = [m[1] for m in plan]
    if any(f & detail_walk.TOPIC_NAME for f in flags) and any(f & detail_walk.TOPIC_ID for f in flags):
        return True
    return any(m[2] is not None and _names_ids(m[2]) for m in plan)


# The messages with a struct naming a topic and its id (what the walk learns topic ids from): rare among all.
NAMING = [m for m in MESSAGES if _names_ids(detail_walk.plan_of(schema.api_message(*m)))]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(message=st.sampled_from(NAMING), data=st.data())
def test_the_bytes_walk_learns_the_topic_ids_the_body_walk_learns(message: tuple[int, int, str],
                                                                  data: st.DataObject) -> None:
    key, version, kind = message
    msg = schema.api_message(key, version, kind)
    body = _no_errors(narrow(msg.root, data.draw(message_values(msg)), data))
    _compare(key, version, kind == "response", _frame(key, version, kind == "response", body))


def _no_errors(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: 0 if k.endswith("error_code") and isinstance(v, int) else _no_errors(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_errors(v) for v in value]
    return value


PRODUCE_REQUEST = {"transactional_id": None, "acks": 1, "timeout_ms": 5,
                   "topic_data": [{"name": "orders", "partition_data": [{"index": 0, "records": BATCH},
                                                                        {"index": 1, "records": None}]}]}
PRODUCE_RESPONSE = {"responses": [{"name": "orders", "partition_responses": [
    {"index": 0, "error_code": 0, "base_offset": 5, "log_append_time_ms": -1, "log_start_offset": 0,
     "record_errors": [], "error_message": None}]}], "throttle_time_ms": 3}


@pytest.mark.parametrize("response, body", [(False, PRODUCE_REQUEST), (True, PRODUCE_RESPONSE)])
def test_a_produce_exchange_is_walked_in_its_bytes(response: bool, body: dict[str, Any]) -> None:
    """The common case is taken (else the comparison above could compare nothing)."""
    assert _compare(0, 9, response, _frame(0, 9, response, body))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from(["orders", "", "audit"]),
                          st.lists(st.tuples(st.integers(0, 40), st.integers(-1, 2**62)), max_size=30)),
                min_size=1, max_size=6))
def test_many_partitions_merge_as_the_body_walk_merges_them(topics: list[tuple[str, list[tuple[int, int]]]]) -> None:
    """Up to 180 rows of an answer, keys met again (a topic listed twice, a partition twice, the empty name
    whose rows key on None): the rows past the first few are found through the index (tables/_part_rows.c),
    each keeps its first base offset, in the order first met, as the body walk's dict."""
    body = {"responses": [{"name": name, "partition_responses": [
        {"index": index, "error_code": 0, "base_offset": offset, "log_append_time_ms": -1, "log_start_offset": 0,
         "record_errors": [], "error_message": None} for index, offset in partitions]} for name, partitions in topics],
        "throttle_time_ms": 0}
    assert _compare(0, 9, True, _frame(0, 9, True, body))


def test_a_name_met_again_is_one_text_and_names_sharing_a_slot_keep_their_own() -> None:
    """A string the bytes walk reads is decoded once per distinct bytes (_walk_bytes.c's texts): a topic named
    in two frames is one object in both walks' rows (hashed once, compared by identity). More names than the
    texts kept (so that some share a slot), met again after others took their slot, and one longer than any
    text kept, each come out as the body walk finds them."""
    names = [f"topic-{i}" for i in range(300)] + ["x" * 300]
    for name in names + names[:5] + names[-1:]:
        body = {**PRODUCE_RESPONSE, "responses": [{**PRODUCE_RESPONSE["responses"][0], "name": name}]}
        assert _compare(0, 9, True, _frame(0, 9, True, body))
    frame = _frame(0, 9, True, PRODUCE_RESPONSE)
    programs = compiler.FRAME_PROGRAMS["response"]
    plan = detail_walk.plan_of(schema.api_message(0, 9, "response"))
    walk = detail_walk.native
    assert walk is not None
    topics = []
    for _ in range(2):
        partitions: dict = {}
        walk.walk_frame(plan, programs, frame, 0, 9, True, partitions, None, None, None, True, ())
        (row,) = partitions.values()
        topics.append(row[0])  # (PARTITION_SLOTS: the topic first)
    assert topics[0] == "orders" and topics[0] is topics[1]


@pytest.mark.parametrize("change", ["error", "tagged", "trailing"])
def test_what_the_bytes_walk_does_not_reproduce_is_declined(change: str) -> None:
    """An error code (the errors rows want paths), tagged fields, bytes after the body: the caller decodes."""
    body = PRODUCE_RESPONSE
    if change == "error":
        body = {**body, "responses": [{**body["responses"][0], "partition_responses": [
            {**body["responses"][0]["partition_responses"][0], "error_code": 6}]}]}
    frame = _frame(0, 9, True, body)
    if change == "tagged":  # the top level's empty tagged section becomes one unknown tagged field
        frame = frame[:-1] + b"\x01\x07\x01\x00"
    if change == "trailing":
        frame += b"\x00"
    assert not _compare(0, 9, True, frame)


def _without(plan: detail_walk.Plan, flag: int) -> detail_walk.Plan:
    """The plan with ``flag`` cleared on every member (a new plan: other tuples, the same node)."""
    return tuple((key, flags & ~flag, None if child is None else _without(child, flag), slot)
                 for key, flags, child, slot in plan)  # fmt: skip


def test_each_plan_and_wanted_keys_take_the_struct_their_own_way() -> None:
    """How a struct's members are taken is compiled once per node, plan and wanted keys (_walk_bytes.c's
    shapes): a second plan over the same program's node, or other wanted keys, must not get the first's."""
    frame = _frame(0, 9, True, PRODUCE_RESPONSE)
    programs = compiler.FRAME_PROGRAMS["response"]
    plan = detail_walk.plan_of(schema.api_message(0, 9, "response"))
    other = _without(plan, detail_walk.BASE_OFFSET)
    walk = detail_walk.native
    assert walk is not None
    for p, want in [(plan, WANT[True]), (other, WANT[True]), (plan, ()), (other, ()), (plan, WANT[True])]:
        base_offsets: dict = {}
        got = walk.walk_frame(p, programs, frame, 0, 9, True, None, None, None, base_offsets, True, want)
        assert got == ((3,) if want else ())
        assert base_offsets == ({} if p is other else {("orders", 0): 5})
