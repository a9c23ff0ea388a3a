"""A failed decode names the real fault: the field path and byte where the bytes went wrong.

Two faults once hid the real one: an error past a known tagged field inside an array was reported
as an internal ``NameError`` (the tagged value's function could not see the loop indices), and a
sized frame whose body failed was retried as if unsized, so its size became a correlation id and
the bytes "decoded" as another message.
"""

from __future__ import annotations

import struct

import pytest

import kdissect
from kdissect.decoders import api, schema
from kdissect.testing import encoder

pytestmark = pytest.mark.usefixtures("decoder_mode")  # native and pure-Python decoders alike

_FETCH_V12 = {
    "throttle_time_ms": 0,
    "error_code": 0,
    "session_id": 0,
    "responses": [
        {
            "topic": "t",
            "partitions": [
                {
                    "partition_index": 0,
                    "error_code": 0,
                    "high_watermark": 5,
                    "last_stable_offset": 5,
                    "log_start_offset": 0,
                    "diverging_epoch": {"epoch": 1, "end_offset": 2},
                    "aborted_transactions": None,
                    "preferred_read_replica": -1,
                    "records": b"",
                }
            ],
        }
    ],
}


def _fetch_v12_body() -> bytearray:
    return bytearray(encoder.encode_message(schema.api_message(1, 12, "response"), _FETCH_V12))


def _slot_size_at(raw: bytearray) -> int:
    """Byte index of the size of the partition's first tagged field (diverging_epoch, tag 0)."""
    head = raw.index(b"\x01\x00")  # one tagged field, tag 0, right after the partition's records
    return head + 2


def test_a_cut_past_a_tagged_field_in_an_array_names_the_field_that_is_cut() -> None:
    raw = _fetch_v12_body()
    with pytest.raises(kdissect.DecodeError) as err:
        api.decode_body(1, 12, "response", bytes(raw[:-1]))  # only the top-level tag count is missing
    assert "NameError" not in str(err.value)
    assert (err.value.path, err.value.offset) == ("_tagged_fields", len(raw) - 1)


def test_a_tagged_value_that_overruns_its_slot_is_named_with_its_loop_indices() -> None:
    raw = _fetch_v12_body()
    raw[_slot_size_at(raw)] = 5  # the diverging_epoch struct needs 13 bytes, the slot says 5
    with pytest.raises(kdissect.DecodeError) as err:
        api.decode_body(1, 12, "response", bytes(raw))
    assert "NameError" not in str(err.value)
    assert err.value.path.startswith("responses[0].partitions[0].diverging_epoch")
    assert "needs 8 bytes more than its slot" in str(err.value)


def _fetch_v4_frame_with_absurd_count() -> bytes:
    body = {
        "throttle_time_ms": 0,
        "responses": [
            {
                "topic": "orders",
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": 0,
                        "high_watermark": 5,
                        "last_stable_offset": 5,
                        "aborted_transactions": [],
                        "records": b"",
                    }
                ],
            }
        ],
    }
    frame = bytearray(encoder.encode_response(1, 4, body, correlation_id=7))
    count_at = 4 + 4 + 4 + 4 + 2 + len("orders")  # size, correlation id, throttle, topics count, topic
    assert struct.unpack_from(">i", frame, count_at) == (1,)
    frame[count_at : count_at + 4] = struct.pack(">i", 0x7FFFFFF0)
    return bytes(frame)


def test_a_sized_frame_whose_body_fails_reports_that_failure() -> None:
    frame = _fetch_v4_frame_with_absurd_count()
    with pytest.raises(kdissect.DecodeError) as err:
        kdissect.decode_response(frame, api_key=1, api_version=4)
    assert err.value.path == "responses[0].partitions"
    assert "cannot fit" in str(err.value)


def _unsized_fetch_v4(partitions: int, client_id_len: int) -> bytes:
    parts = [{"partition": i, "fetch_offset": 0, "partition_max_bytes": 1} for i in range(partitions)]
    body = {
        "replica_id": -1,
        "max_wait_ms": 500,
        "min_bytes": 1,
        "max_bytes": 1024,
        "isolation_level": 0,
        "topics": [{"topic": "orders", "partitions": parts}],
    }
    cid = 0x7F7F7F7F  # read as an api key and version, unknown: these bytes cannot start a request
    return encoder.encode_request(1, 4, body, correlation_id=cid, client_id="c" * client_id_len, size_prefix=False)


def test_four_bytes_that_only_look_like_a_size_are_still_read_as_the_request() -> None:
    """Fetch v4's key and version (0x0001, 0x0004) read as the int32 65540: an unsized Fetch of
    65544 bytes seems to carry a size prefix. The bytes after it cannot start a request, so the
    whole frame is decoded as the request it is."""
    base = len(_unsized_fetch_v4(0, 0))
    partitions, pad = divmod(65544 - base, 16)  # a v4 partition entry takes 16 bytes
    frame = _unsized_fetch_v4(partitions, pad)
    assert struct.unpack_from(">i", frame) == (len(frame) - 4,)
    decoded = kdissect.decode_request(frame)
    assert decoded["header"]["request_api_key"] == 1
    assert len(decoded["body"]["topics"][0]["partitions"]) == partitions
