"""The exchange scan asked for names (``scan_frame`` in ``decoders/_native.c``, for the live figures)
against its reference: ``named_topics.contexts`` (the (topic, topic id) contexts ``entities.walk`` gives
the structs) and the walk's non-zero error codes, in its order, on random messages of every API version."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdissect.decoders import compiler, schema
from kdissect.decoders.api import decode_request_frame, decode_response_frame
from kdissect.decoders.entities import is_error_field, walk
from kdissect.decoders.named_topics import contexts
from kdissect.decoders.program import native_module
from kdissect.testing.encoder import encode_request, encode_response
from tests.strategies import message_values, narrowed

native = native_module()
pytestmark = pytest.mark.skipif(native is None, reason="the native decoder is not built")
MESSAGES = sorted(schema.all_api_versions())


def _codes(m: schema.Field, v: Any) -> st.SearchStrategy | None:
    return st.sampled_from((0, 0, 3, 6)) if is_error_field(m.key) and isinstance(v, int) else None


def narrow(f: schema.Field, value: Any, data: st.DataObject) -> Any:
    """``value`` with topic names, topic ids and error codes drawn from a few, so contexts repeat."""
    return narrowed(f, value, data, _codes)


def scanned(key: int, version: int, kind: str, body: dict) -> tuple[Any, list, list] | None:
    """The scan's (row values, contexts, codes) of the encoded message, and the reference's contexts and
    codes from the decoded one."""
    if kind == "request":
        frame = encode_request(key, version, body, correlation_id=7, client_id="c", size_prefix=False)
        decoded = decode_request_frame(frame)["body"]
    else:
        frame = encode_response(key, version, body, correlation_id=7, size_prefix=False)
        decoded = decode_response_frame(frame, key, version)["body"]
    found = native.scan(frame, compiler.FRAME_PROGRAMS[kind], key, version, True)
    msg = schema.api_message(key, version, kind)
    reference = ([(None if t is None else t.encode(), None if i is None else i.bytes)
                  for t, i in contexts(key, version, kind, decoded)],
                 [v for e in walk(msg, decoded) for k, v in e.scalars.items() if is_error_field(k) and v])
    return None if found is None else (found, *reference)


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(which=st.sampled_from(MESSAGES), data=st.data())
def test_the_scan_lists_the_walks_contexts_and_codes(which: tuple[int, int, str], data: st.DataObject) -> None:
    key, version, kind = which
    msg = schema.api_message(key, version, kind)
    got = scanned(key, version, kind, narrow(msg.root, data.draw(message_values(msg)), data))
    if got is None:  # left to Python (a tagged error code, more contexts or codes than a scan lists...)
        return
    (row, named, codes), contexts_, codes_ = got
    assert list(named) == contexts_
    assert list(codes) == codes_
    assert row[3] == len(codes_) and row[2] == (codes_[0] if codes_ else 0)


def test_the_scan_names_topics_and_ids_and_every_code() -> None:
    """Not vacuous: a Fetch by topic id, a Metadata answer naming ids, nested codes in walk order."""
    a, b = uuid.UUID(int=7), uuid.UUID(int=8)
    fetch = {"max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0,
             "session_epoch": -1, "rack_id": "",
             "topics": [{"topic_id": a, "partitions": [{"partition": p, "current_leader_epoch": 0, "fetch_offset": 0,
                                                         "last_fetched_epoch": -1, "log_start_offset": -1,
                                                         "partition_max_bytes": 1024} for p in (0, 1)]},
                        {"topic_id": b, "partitions": []}],
             "forgotten_topics_data": []}
    (_, named, _), ref_named, _ = scanned(1, 13, "request", fetch)
    assert list(named) == ref_named == [(None, a.bytes), (None, b.bytes)]
    metadata = {"throttle_time_ms": 0, "brokers": [], "cluster_id": None, "controller_id": 1,
                "topics": [{"error_code": 3, "name": "orders", "topic_id": a, "is_internal": False,
                            "partitions": [{"error_code": 6, "partition_index": 0, "leader_id": 1, "leader_epoch": 0,
                                            "replica_nodes": [], "isr_nodes": [], "offline_replicas": []}],
                            "topic_authorized_operations": 0}]}
    (row, named, codes), ref_named, ref_codes = scanned(3, 12, "response", metadata)
    assert list(named) == ref_named == [(b"orders", a.bytes)]
    assert list(codes) == ref_codes == [3, 6] and row[3] == 2
    plain = native.scan(encode_request(1, 13, fetch, size_prefix=False), compiler.FRAME_PROGRAMS["request"], 1, 13)
    assert len(plain) == 4 and plain[2:] == (0, 0)  # without names: what the exchanges row reads only


def test_tagged_structs_without_codes_or_names_are_scanned() -> None:
    """Fetch v16's node_endpoints (brokers send it even empty) and a partition's current_leader hold no error
    code and no topic: the scan walks over them rather than leaving every such answer to Python."""
    a = uuid.UUID(int=9)
    fetch = {"throttle_time_ms": 0, "error_code": 0, "session_id": 0,
             "node_endpoints": [{"node_id": 1, "host": "b1", "port": 9092, "rack": None}],
             "responses": [{"topic_id": a, "partitions": [
                 {"partition_index": 0, "error_code": 6, "high_watermark": 5, "last_stable_offset": 5,
                  "log_start_offset": 0, "aborted_transactions": [], "preferred_read_replica": -1, "records": None,
                  "current_leader": {"leader_id": 1, "leader_epoch": 3}}]}]}
    (row, named, codes), ref_named, ref_codes = scanned(1, 16, "response", fetch)
    assert list(named) == ref_named == [(None, a.bytes)]
    assert list(codes) == ref_codes == [6] and row[2:] == (6, 1)
