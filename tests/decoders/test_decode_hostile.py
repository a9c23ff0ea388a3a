"""Header and body decoding of every API key and version on hostile bytes.

Random bytes and mutated valid encodings (byte flips, cuts, insertions, absurd length fields):
only :class:`kdissect.DecodeError` may escape, its offset points inside the frame, and
whatever decodes can be rendered the way the CLI renders it.
"""

from __future__ import annotations

import json
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kdissect
from fuzz.targets import ALL_APIS, decode
from kdissect.decoders import schema
from kdissect.decoders.jsonable import to_jsonable
from kdissect.testing import encoder
from tests.strategies import message_values

apis = st.sampled_from(ALL_APIS)
edits = st.lists(
    st.tuples(st.sampled_from(["flip", "cut", "insert", "max_len"]), st.integers(0, 1 << 16), st.integers(1, 255)),
    min_size=1,
    max_size=4,
)


# A correlation id no frame here is as long as: four bytes equal to the length of the rest are a size prefix.
_CORRELATION_ID = 0x12345678


def frame_of(key: int, version: int, kind: str, value: dict) -> bytes:
    body = encoder.encode_message(schema.api_message(key, version, kind), value)
    if kind == "request":
        header = schema.message("RequestHeader", schema.api_message(key, version, kind).header_version or 0)
        head = {"request_api_key": key, "request_api_version": version, "correlation_id": _CORRELATION_ID}
        head["client_id"] = "c"
    else:
        header = schema.message("ResponseHeader", schema.api_message(key, version, kind).header_version or 0)
        head = {"correlation_id": _CORRELATION_ID}
    return encoder.encode_message(header, head) + body


def mutate(raw: bytes, ops: list[tuple[str, int, int]]) -> bytes:
    b = bytearray(raw)
    for op, at, value in ops:
        at %= len(b) + 1
        if op == "flip" and at < len(b):
            b[at] ^= value
        elif op == "cut":
            del b[at:]
        elif op == "insert":
            b[at:at] = bytes([value])
        elif op == "max_len":  # a length or count field claiming (nearly) everything
            b[at : at + 4] = struct.pack(">i", 0x7FFFFFFF - value)
        if not b:
            break
    return bytes(b)


def decode_one(kind: str, key: int, version: int, frame: bytes) -> dict | None:
    try:
        out = kdissect.decode_request(frame) if kind == "request" else kdissect.decode_response(frame, key, version)
    except kdissect.DecodeError as exc:
        assert exc.offset is None or 0 <= exc.offset <= len(frame)
        assert "\n" not in str(exc)
        return None
    json.dumps(to_jsonable(out))
    return out


@settings(max_examples=300, deadline=None)
@given(api=apis, data=st.binary(max_size=300))
def test_random_bytes_raise_only_decode_error(api: tuple[int, int, str], data: bytes) -> None:
    key, version, kind = api
    decode_one(kind, key, version, data)
    decode_one("request", key, version, struct.pack(">hh", key, version) + data)  # reaches the body decoder


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), ops=edits)
def test_mutated_valid_frames_raise_only_decode_error(data: st.DataObject, ops: list) -> None:
    key, version, kind = data.draw(apis)
    raw = frame_of(key, version, kind, data.draw(message_values(schema.api_message(key, version, kind))))
    assert decode_one(kind, key, version, raw) is not None
    decode_one(kind, key, version, mutate(raw, ops))


@settings(max_examples=200, deadline=None)
@given(pick=st.integers(0, 0xFFFF), data=st.binary(max_size=200))
def test_the_decode_fuzz_target_accepts_any_input(pick: int, data: bytes) -> None:
    decode(struct.pack(">H", pick) + data)


def test_count_fields_claiming_billions_fail_fast_without_allocating() -> None:
    import tracemalloc

    for key, version, kind in ALL_APIS[::7]:
        raw = frame_of(key, version, kind, {})
        tracemalloc.start()
        for at in range(len(raw)):
            decode_one(kind, key, version, mutate(raw, [("max_len", at, 1)]))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 4 << 20, (key, version, kind, peak)
