"""A request with zero padding after a complete body (librdkafka has sent ApiVersions v0 requests
with 4 zero bytes after the client id, and brokers answer them) is a frame: decoded, paired and
warned about, also where hunting must prove it (the first captured bytes of a mid-stream direction)."""

from __future__ import annotations

import struct

import pytest

from kdissect.decoders import api, compiler
from kdissect.engines import local
from kdissect.events import Exchange
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.encoder import encode_request, encode_response
from kdissect.testing.synthetic import T0

API_VERSIONS = 18
ANSWER = {"error_code": 0, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 3}]}


def padded_request(cid: int, padding: bytes, version: int = 0) -> bytes:
    """An ApiVersions request (size prefix included) with ``padding`` after its body."""
    body = {"client_software_name": "rdkafka", "client_software_version": "1"} if version >= 3 else {}
    frame = encode_request(API_VERSIONS, version, body, correlation_id=cid, client_id="rdkafka", size_prefix=False)
    return struct.pack(">i", len(frame) + len(padding)) + frame + padding


def _exchanges(messages, handshake: bool) -> list[Exchange]:
    return [e for e in local.events_from(tcp_conversation(messages, handshake=handshake)) if isinstance(e, Exchange)]


@pytest.mark.parametrize("handshake", [False, True], ids=["midstream", "from-syn"])
def test_a_padded_api_versions_v0_request_is_decoded_paired_and_warned(handshake: bool) -> None:
    answer = encode_response(API_VERSIONS, 0, ANSWER, correlation_id=1)
    messages = [(0, padded_request(1, bytes(4)), T0), (1, answer, T0 + 1),
                (0, padded_request(2, b""), T0 + 2), (1, encode_response(API_VERSIONS, 0, ANSWER, correlation_id=2),
                                                       T0 + 3)]
    exchanges = _exchanges(messages, handshake)
    assert [(e.status, e.request.correlation_id) for e in exchanges if e.request] == [("ok", 1), ("ok", 2)]
    assert len(exchanges) == 2
    [warning] = exchanges[0].request.warnings
    assert warning["code"] == "trailing_bytes"
    assert warning["message"] == "4 bytes after the end of the body: 00 00 00 00"


def test_the_warning_shows_a_bounded_prefix_of_the_leftover_bytes() -> None:
    frame = padded_request(3, bytes(range(40)))[4:]
    [warning] = api.decode_request(frame)["warnings"]
    shown = " ".join(f"{i:02x}" for i in range(api.TRAILING_SHOWN))
    assert warning["message"] == f"40 bytes after the end of the body: {shown} ..."


PROOFS = [  # (padding, version, accepted while hunting)
    (bytes(4), 0, True),
    (bytes(api.MAX_PADDING), 0, True),
    (bytes(api.MAX_PADDING + 1), 0, False),  # more than padding
    (b"\x00\x00\x01\x00", 0, False),  # not zeros: a size field landing past a body by chance
    (bytes(4), 3, False),  # flexible versions end in tagged fields: no padding
    (b"", 0, True),
]


@pytest.mark.parametrize(("padding", "version", "accepted"), PROOFS)
def test_padded_request_proofs_agree_natively_and_in_python(padding: bytes, version: int, accepted: bool) -> None:
    frame = padded_request(5, padding, version)
    buf, start, end = bytearray(b"xx" + frame[4:] + b"yy"), 2, 2 + len(frame) - 4
    native = api.frame_proof(buf, API_VERSIONS, version, "request", start, end, 10**6)[0]
    compiler.use_native(False)
    try:
        python = api.frame_proof(buf, API_VERSIONS, version, "request", start, end, 10**6)[0]
    finally:
        compiler.use_native(True)
    assert native is python is accepted
