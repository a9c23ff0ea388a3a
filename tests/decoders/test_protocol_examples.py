"""Byte-exact examples written by hand from the protocol guide, independent of our encoder."""

from __future__ import annotations

import struct
import zlib

import pytest

import kdissect
from kdissect.testing import encoder

pytestmark = pytest.mark.usefixtures("decoder_mode")  # native and pure-Python decoders alike


def _produce_v0_frame() -> bytes:
    """The Produce v0 example: client "foo", topic "test", one message "hello world"."""
    message = b"\x00\x00" + b"\xff\xff\xff\xff" + struct.pack(">i", 11) + b"hello world"  # magic, attrs, key, value
    crc = zlib.crc32(message)
    assert crc == 0x73ACF77C  # the CRC printed in the guide
    entry = struct.pack(">qi", 0, 4 + len(message)) + struct.pack(">I", crc) + message
    body = (
        struct.pack(">hi", 1, 1000)  # acks, timeout
        + struct.pack(">i", 1) + struct.pack(">h", 4) + b"test"  # topics[1], name
        + struct.pack(">i", 1) + struct.pack(">i", 0)  # partitions[1], index 0
        + struct.pack(">i", len(entry)) + entry  # message set
    )
    header = struct.pack(">hhi", 0, 0, 1) + struct.pack(">h", 3) + b"foo"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def test_produce_v0_example_is_78_bytes_and_decodes_exactly() -> None:
    frame = _produce_v0_frame()
    assert len(frame) - 4 == 78
    msg = kdissect.decode_request(frame)
    assert msg["header"] == {
        "request_api_key": 0,
        "request_api_version": 0,
        "correlation_id": 1,
        "client_id": "foo",
    }
    body = msg["body"]
    assert body["acks"] == 1 and body["timeout_ms"] == 1000
    [topic] = body["topic_data"]
    assert topic["name"] == "test"
    [part] = topic["partition_data"]
    assert part["index"] == 0
    records = part["records"]
    assert records[:8] == b"\x00" * 8 and records.endswith(b"hello world")
    assert struct.unpack_from(">I", records, 12)[0] == 0x73ACF77C
    assert "warnings" not in msg


def test_produce_v0_example_encodes_back_to_the_same_bytes() -> None:
    frame = _produce_v0_frame()
    msg = kdissect.decode_request(frame)
    again = encoder.encode_request(0, 0, msg["body"], correlation_id=1, client_id="foo")
    assert again == frame


def _api_versions_v3_frame() -> bytes:
    header = struct.pack(">hhi", 18, 3, 7) + struct.pack(">h", 2) + b"c1" + b"\x00"  # ClientId keeps INT16 length
    name, version = b"apache-kafka-java", b"3.9.0"
    body = bytes([len(name) + 1]) + name + bytes([len(version) + 1]) + version + b"\x00"
    return struct.pack(">i", len(header) + len(body)) + header + body


def test_api_versions_v3_request_layout() -> None:
    frame = _api_versions_v3_frame()
    msg = kdissect.decode_request(frame)
    assert msg["header"] == {"request_api_key": 18, "request_api_version": 3, "correlation_id": 7, "client_id": "c1"}
    assert msg["body"] == {"client_software_name": "apache-kafka-java", "client_software_version": "3.9.0"}
    assert encoder.encode_request(18, 3, msg["body"], correlation_id=7, client_id="c1") == frame


def test_frames_decode_with_or_without_size_prefix() -> None:
    frame = _api_versions_v3_frame()
    assert kdissect.decode_request(frame) == kdissect.decode_request(frame[4:])


def test_api_versions_response_header_is_v0_even_when_flexible() -> None:
    body = {"error_code": 0, "api_keys": [{"api_key": 0, "min_version": 0, "max_version": 11}], "throttle_time_ms": 0}
    frame = encoder.encode_response(18, 3, body, correlation_id=7)
    # header v0: just the correlation id, no tagged-field byte after it
    assert frame[4:8] == struct.pack(">i", 7) and frame[8:10] == b"\x00\x00"
    msg = kdissect.decode_response(frame, 18, 3)
    assert msg["header"] == {"correlation_id": 7}
    assert msg["body"]["api_keys"] == [{"api_key": 0, "min_version": 0, "max_version": 11}]


def test_trailing_bytes_are_kept_as_a_warning_not_an_error() -> None:
    # librdkafka has been seen padding ApiVersions v0 requests
    frame = encoder.encode_request(18, 0, {}, correlation_id=3, size_prefix=False) + b"\x00\x00\x00\x00"
    msg = kdissect.decode_request(frame)
    assert msg["body"] == {}
    assert msg["trailing_bytes"] == b"\x00\x00\x00\x00"
    assert msg["warnings"][0]["code"] == "trailing_bytes"
    assert msg["warnings"][0]["offset"] == len(frame) - 4


@pytest.mark.parametrize(
    ("frame", "fragment"),
    [
        (struct.pack(">hhi", 999, 0, 1), "unknown api key 999"),
        (struct.pack(">hhi", 0, 99, 1), "unsupported Produce request version 99"),
        (b"\x00\x01", "shorter than a header"),
    ],
)
def test_unknown_or_short_requests_raise_decode_error(frame: bytes, fragment: str) -> None:
    with pytest.raises(kdissect.DecodeError) as err:
        kdissect.decode_request(frame)
    assert fragment in str(err.value)


def test_decode_error_names_the_field_path_and_offset() -> None:
    body = {"topics": [{"name": "t", "partitions": [{"partition_index": 0}, {"partition_index": 1}]}]}
    frame = encoder.encode_response(3, 12, body, correlation_id=1, size_prefix=False)
    # Cut inside the topic's last int32: the error points at it.
    cut = frame[:-4]
    with pytest.raises(kdissect.DecodeError) as err:
        kdissect.decode_response(cut, 3, 12)
    e = err.value
    assert e.api_key == 3 and e.api_version == 12
    assert e.path == "topics[0].topic_authorized_operations"
    assert e.offset == len(frame) - 6  # int32, then two tagged-field counts
    # Cut deeper: two partitions can no longer fit, caught at the array length before any loop.
    with pytest.raises(kdissect.DecodeError) as err:
        kdissect.decode_response(frame[:-30], 3, 12)
    assert err.value.path == "topics[0].partitions"
    assert "cannot fit" in err.value.reason


def test_absurd_lengths_do_not_allocate() -> None:
    # Metadata v0 request claiming 2**31-1 topics in a 10-byte body: rejected before any loop runs.
    frame = struct.pack(">hhi", 3, 0, 1) + struct.pack(">h", 1) + b"x" + struct.pack(">i", 2**31 - 1) + b"\x00" * 6
    with pytest.raises(kdissect.DecodeError) as err:
        kdissect.decode_request(frame)
    assert "cannot fit" in str(err.value)
    assert err.value.path == "topics"


def test_unknown_tagged_fields_are_kept_raw() -> None:
    frame = encoder.encode_request(
        18, 3, {"client_software_name": "x", "client_software_version": "1", "unknown_tagged_fields": [(99, b"ab")]},
        size_prefix=False,
    )
    msg = kdissect.decode_request(frame)
    assert msg["body"]["unknown_tagged_fields"] == [(99, b"ab")]
    assert encoder.encode_request(18, 3, msg["body"], client_id="kdissect", size_prefix=False) == frame
