"""The C interpreter (``_native.c``) against the generated Python decoders, byte for byte.

Both read the same resolved schema; these tests check they build identical values (types and
key order included) on valid frames, that the interpreter never accepts what Python rejects,
and that through the public API both paths give identical results or identical DecodeErrors
on random, mutated and truncated frames. Plus: every primitive kind on a synthetic schema,
the pure-Python switch, bounded nesting, and no leaks over many decodes.
"""

from __future__ import annotations

import contextlib
import gc
import struct
import sys
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kdissect
from kdissect.decoders import api, compiler, program, schema
from kdissect.decoders.errors import DecodeError
from kdissect.decoders.schema import Field, Message
from kdissect.testing import encoder
from tests.conftest import PURE_PYTHON_FORCED, assert_no_leaks, require_tool
from tests.strategies import message_values, struct_values

ALL = schema.all_api_versions()
BENCH = str(Path(__file__).resolve().parents[2] / "bench")
pytestmark = pytest.mark.skipif(
    PURE_PYTHON_FORCED, reason="KDISSECT_PURE_PYTHON forces the Python decoders: nothing native to compare"
)


def same(a: Any, b: Any) -> bool:
    """Equal values of identical types, dict keys in the same order (``True == 1`` is not enough)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and a != a:
        return b != b
    return a == b


def outcome(fn: Any, *args: Any) -> tuple:
    """("ok", value) or ("error", exception) for one decode call."""
    try:
        return "ok", fn(*args)
    except Exception as exc:
        return "error", exc


def api_outcome(native: bool, key: int, version: int, kind: str, raw: bytes) -> tuple:
    compiler.use_native(native)
    try:
        return "ok", api.decode_body(key, version, kind, raw)
    except DecodeError as e:
        return "error", (str(e), e.offset, e.path, e.api_key, e.api_version)
    finally:
        compiler.use_native(True)


def check_agreement(msg: Message, raw: bytes, key: int | None = None, kind: str | None = None) -> None:
    """The interpreter alone never disagrees with Python; through the API both paths are identical."""
    python = outcome(compiler.python_decoder(msg), raw, 0, len(raw))
    strict = outcome(compiler.native_decoder(msg).strict, raw, 0, len(raw))
    if strict[0] == "ok":
        assert python[0] == "ok", f"native accepted what Python rejects: {python[1]!r}"
        assert same(strict[1], python[1])
    else:
        assert type(strict[1]).__name__ == "Error"
    check_walk(msg, raw, strict, python)
    full = outcome(compiler.native_decoder(msg), raw, 0, len(raw))  # with the Python fallback
    assert full[0] == python[0]
    if full[0] == "ok":
        assert same(full[1], python[1])
    else:
        assert type(full[1]) is type(python[1]) and str(full[1]) == str(python[1])
    if key is not None and kind is not None:
        native_api, python_api = (api_outcome(n, key, msg.version, kind, raw) for n in (True, False))
        assert native_api[0] == python_api[0]
        assert same(native_api[1], python_api[1]) if native_api[0] == "ok" else native_api[1] == python_api[1]


_NO_HEADER = (program.KINDS["struct"], "header", 0, 0, -1, (), ())  # a header of no fields


def check_walk(msg: Message, raw: bytes, strict: tuple, python: tuple) -> None:
    """A walk (hunting's proof: nothing built) ends where the interpreter does, says no only where
    Python says no too, and stops when its budget of steps runs out."""
    native = program.native_module()
    assert native is not None
    programs = {7: (native.Program(_NO_HEADER, lambda *a: None), compiler.native_decoder(msg))}
    for buf in (raw, bytearray(raw)):
        end, left = native.walk_frame(buf, programs, 0, 7, 0, len(buf), 1 << 40)
        if strict[0] == "ok":
            assert end == strict[1][1]
        else:
            assert end in (compiler.WALK_BAD, compiler.WALK_UNDECIDED)
            assert end == compiler.WALK_UNDECIDED or python[0] == "error"
        spent = (1 << 40) - left
        if end >= 0:
            assert native.walk_frame(buf, programs, 0, 7, 0, len(buf), spent - 1) == (compiler.WALK_SPENT, 0)
            assert native.walk_frame(buf, programs, 0, 7, 0, len(buf), spent) == (end, 0)


def frame_outcome(native: bool, key: int, version: int, kind: str, frame: bytes) -> tuple:
    """A whole frame through the public API (size prefix or not) and the pipeline's entry point."""
    compiler.use_native(native)
    try:
        if kind == "request":
            outcomes = [outcome(kdissect.decode_request, frame), outcome(api.decode_request_frame, frame)]
        else:
            outcomes = [outcome(kdissect.decode_response, frame, key, version),
                        outcome(api.decode_response_frame, frame, key, version)]  # fmt: skip
    finally:
        compiler.use_native(True)
    return tuple(
        (status, (str(v), v.offset, v.path, v.api_key, v.api_version) if isinstance(v, DecodeError) else v)
        for status, v in outcomes
    )


def check_frame_agreement(key: int, version: int, kind: str, frame: bytes) -> None:
    """The C frame path (``_native.decode_frame``) and the Python path give identical results or errors."""
    native, python = frame_outcome(True, key, version, kind, frame), frame_outcome(False, key, version, kind, frame)
    for (n_status, n_value), (p_status, p_value) in zip(native, python, strict=True):
        assert n_status == p_status, (n_value, p_value)
        assert same(n_value, p_value) if n_status == "ok" else n_value == p_value


def encode_frame(key: int, version: int, kind: str, body: dict, size_prefix: bool) -> bytes:
    if kind == "request":
        return encoder.encode_request(key, version, body, correlation_id=9, size_prefix=size_prefix)
    return encoder.encode_response(key, version, body, correlation_id=9, size_prefix=size_prefix)


MUTATIONS = ("none", "flip", "truncate", "insert", "set_ff", "append")


def mutate(data: st.DataObject, raw: bytes) -> bytes:
    """A valid frame, or one with a flipped / 0xff'd / inserted byte, cut short, or with bytes after it."""
    b = bytearray(raw)
    how = data.draw(st.sampled_from(MUTATIONS))
    if how == "append":
        b += data.draw(st.binary(min_size=1, max_size=8))
    elif b and how != "none":
        i = data.draw(st.integers(0, len(b) - 1))
        if how == "flip":
            b[i] ^= data.draw(st.integers(1, 255))
        elif how == "set_ff":
            b[i] = 0xFF
        elif how == "insert":
            b.insert(i, data.draw(st.integers(0, 255)))
        else:
            del b[i:]
    return bytes(b)


def test_the_extension_is_built_and_selected() -> None:
    require_tool("cc")
    require_tool("Python.h")
    assert compiler.native_loaded(), "kdissect/decoders/_native.c was not built (pip install -e . builds it)"
    assert compiler.native_enabled()
    assert type(compiler.fast_decoder(schema.api_message(3, 12, "response"))).__name__ == "Program"


def test_pure_python_can_be_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KDISSECT_PURE_PYTHON", "1")
    assert program.native_module() is None
    monkeypatch.setenv("KDISSECT_PURE_PYTHON", "0")
    assert program.native_module() is not None
    compiler.use_native(False)
    try:
        assert compiler.fast_decoder(schema.api_message(3, 12, "response")).__name__ == "decode"
    finally:
        compiler.use_native(True)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_native_and_python_agree_on_random_mutated_and_truncated_frames(data: st.DataObject) -> None:
    key, version, kind = data.draw(st.sampled_from(ALL))
    msg = schema.api_message(key, version, kind)
    raw = encoder.encode_message(msg, data.draw(message_values(msg)))
    check_agreement(msg, mutate(data, raw), key, kind)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), size_prefix=st.booleans())
def test_whole_frames_agree_on_random_mutated_and_truncated_frames(data: st.DataObject, size_prefix: bool) -> None:
    key, version, kind = data.draw(st.sampled_from(ALL))
    msg = schema.api_message(key, version, kind)
    frame = encode_frame(key, version, kind, data.draw(message_values(msg)), size_prefix)
    check_frame_agreement(key, version, kind, mutate(data, frame))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(key_version_kind=st.sampled_from(ALL), raw=st.binary(max_size=64))
def test_whole_frames_agree_on_arbitrary_bytes(key_version_kind: tuple[int, int, str], raw: bytes) -> None:
    key, version, kind = key_version_kind
    head = struct.pack(">hh", key, version) if kind == "request" else b""
    check_frame_agreement(key, version, kind, head + raw)


def test_valid_frames_are_decoded_by_the_frame_path_alone() -> None:
    """Met once, a message version's well-formed frames take the one C call; what it leaves returns None."""
    programs = compiler.FRAME_PROGRAMS
    for _, frame, key, version, kind in _bench_mix():
        args = (None, None) if kind == "request" else (key, version)
        expected = kdissect.decode_request(frame) if kind == "request" else kdissect.decode_response(frame, *args)
        for raw, sized in ((frame, False), (struct.pack(">i", len(frame)) + frame, True)):
            found = compiler.frame_decoder(raw, programs[kind], *args, sized)
            assert found is not None and same(found, expected)
        assert compiler.frame_decoder(frame + b"\0", programs[kind], *args, False) is None  # trailing: Python warns
        assert compiler.frame_decoder(frame[:-1], programs[kind], *args, False) is None
        assert compiler.frame_decoder(bytearray(frame), programs[kind], *args, False) is None
    assert compiler.frame_decoder(b"\x00\x03\x7f\x00" + bytes(20), programs["request"], None, None, False) is None
    assert compiler.frame_decoder(b"", programs["response"], 3, 2**70, True) is None
    assert compiler.frame_decoder(b"", programs["response"], "3", 12, True) is None  # Python reports it
    with pytest.raises(TypeError):
        compiler.frame_decoder(b"", {0: (1, 2)}, 0, 0, False)


def test_frame_proofs_agree_natively_and_in_python_and_keep_to_their_budget() -> None:
    """Hunting's proof of a frame read in place: the native walk and the Python decoders agree; the
    walk spends a step per field and element (None when the budget is short), Python a step per byte."""
    budget = 10**6
    for _, frame, key, version, kind in _bench_mix():
        buf, start, end = bytearray(b"xx" + frame + b"yy"), 2, 2 + len(frame)
        verdict, left = api.frame_proof(buf, key, version, kind, start, end, budget)
        assert verdict is True and 0 < budget - left < len(frame)
        assert api.frame_proof(buf, key, version, kind, start, end, budget - left - 1) == (None, 0)
        assert api.frame_proof(buf, key, version, kind, start, end - 1, budget)[0] is False
        compiler.use_native(False)
        try:
            assert api.frame_proof(buf, key, version, kind, start, end, budget) == (True, budget - len(frame))
            assert api.frame_proof(buf, key, version, kind, start, end, len(frame) - 1) == (None, 0)
            assert api.frame_proof(buf, key, version, kind, start, end - 1, budget)[0] is False
        finally:
            compiler.use_native(True)
    assert api.frame_proof(bytes(20), 999, 0, "request", 0, 20, budget) == (False, budget)  # no such api


RESPONSES = [(key, version) for key, version, kind in ALL if kind == "response"]


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_response_fits_natively_as_it_fits_in_python(data: st.DataObject) -> None:
    """``frame_fits`` (the orphan inference's first test, a native walk) answers as the Python decode does, on
    answers of each api mutated and cut, tried as the answer to their own and to another (key, version)."""
    key, version = data.draw(st.sampled_from(RESPONSES))
    msg = schema.api_message(key, version, "response")
    frame = mutate(data, encode_frame(key, version, "response", data.draw(message_values(msg)), False))
    for tried in (key, version), data.draw(st.sampled_from(RESPONSES)):
        native = api.frame_fits(frame, *tried, "response")
        assert native == (api._body_end(frame, *tried, "response", 0, len(frame)) == len(frame))
        compiler.use_native(False)
        try:
            assert api.frame_fits(frame, *tried, "response") == native
        finally:
            compiler.use_native(True)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(key_version_kind=st.sampled_from(ALL), raw=st.binary(max_size=64))
def test_native_and_python_agree_on_arbitrary_bytes(key_version_kind: tuple[int, int, str], raw: bytes) -> None:
    key, version, kind = key_version_kind
    check_agreement(schema.api_message(key, version, kind), raw, key, kind)


# A synthetic message with every element kind the interpreter knows, in legacy and compact forms,
# including kinds today's Kafka messages do not use (varints, float64, arrays of uuids).
def _field(name: str, elem: str, **kw: Any) -> Field:
    base = Field(
        name=name, key=schema.snake_case(name), elem=elem, struct_name=None, is_array=False, nullable=False,
        compact=False, tag=None, default=None, entity=None, fields=(), flexible=False,
    )  # fmt: skip
    return replace(base, **kw)


def _members(compact: bool) -> tuple[Field, ...]:
    kinds = [*schema.FIXED_FORMATS, "varint", "varlong", "uvarint", "string", "bytes", "records"]
    plain = [_field(f"Plain{k.title()}", k, compact=compact) for k in kinds]
    arrays = [_field(f"List{k.title()}", k, is_array=True, compact=compact) for k in kinds]
    nullables = [_field(f"Maybe{k.title()}", k, nullable=True, compact=compact) for k in ("string", "bytes")]
    inner = _field("Inner", "struct", struct_name="Inner", compact=compact, flexible=compact,
                   fields=(_field("A", "int32"), _field("B", "string", compact=compact)))  # fmt: skip
    structs = [
        inner,
        replace(inner, name="MaybeInner", key="maybe_inner", nullable=True),
        replace(inner, name="Inners", key="inners", is_array=True),
        replace(inner, name="MaybeInners", key="maybe_inners", is_array=True, nullable=True),
        _field("NullList", "int32", is_array=True, nullable=True, compact=compact),
    ]
    tagged = []
    if compact:
        tagged = [
            _field("TagInt", "int64", compact=True, tag=0),
            _field("TagString", "string", compact=True, nullable=True, tag=1),
            replace(inner, name="TagInner", key="tag_inner", tag=5),
            _field("TagList", "uuid", is_array=True, compact=True, tag=9),
        ]
    return (*plain, *arrays, *nullables, *structs, *tagged)


SYNTHETIC = [
    Message(f"Synthetic{'Compact' if c else 'Legacy'}", "data", None, 0, c, None,
            _field("Root", "struct", struct_name="Root", compact=c, flexible=c, fields=_members(c)))
    for c in (False, True)
]  # fmt: skip


@pytest.mark.parametrize("msg", SYNTHETIC, ids=lambda m: m.name)
def test_every_element_kind_decodes_identically(msg: Message) -> None:
    @settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        value = data.draw(struct_values(msg.root))
        raw = encoder.encode_message(msg, value)
        check_agreement(msg, raw)
        decoded, end = compiler.native_decoder(msg).strict(raw, 0, len(raw))
        assert end == len(raw) and encoder.encode_message(msg, decoded) == raw
        check_agreement(msg, mutate(data, raw))

    check()


def test_unknown_and_known_tags_keep_python_order_and_form() -> None:
    msg = SYNTHETIC[1]
    base = encoder.encode_message(msg, {})
    # Replace the root's empty tag section (its last byte) by: unknown tag 7, known tag 0, unknown 7 again.
    tags = b"\x03" + b"\x07\x02hi" + b"\x00\x08" + struct.pack(">q", -5) + b"\x07\x00"
    raw = base[:-1] + tags
    value, end = compiler.native_decoder(msg).strict(raw, 0, len(raw))
    assert end == len(raw)
    assert list(value)[-2:] == ["unknown_tagged_fields", "tag_int"]
    assert value["unknown_tagged_fields"] == [(7, b"hi"), (7, b"")]
    assert value["tag_int"] == -5
    check_agreement(msg, raw)


def test_varlong_wider_than_64_bits_falls_back_to_python() -> None:
    msg = SYNTHETIC[0]
    head = encoder.encode_message(msg, {})
    offset = len(encoder.encode_message(replace(msg, root=replace(msg.root, fields=msg.root.fields[:10])), {}))
    assert msg.root.fields[10].elem == "varlong" and head[offset] == 0
    raw = head[:offset] + b"\xff" * 9 + b"\x7f" + head[offset + 1 :]  # 70 bits: Python's ints hold it
    with pytest.raises(Exception, match="wider than 64 bits"):
        compiler.native_decoder(msg).strict(raw, 0, len(raw))
    check_walk(msg, raw, ("error", None), ("ok", None))  # undecided: Python decides
    value, end = compiler.native_decoder(msg)(raw, 0, len(raw))
    assert end == len(raw)
    assert value["plain_varlong"] == compiler.python_decoder(msg)(raw, 0, len(raw))[0]["plain_varlong"]
    assert abs(value["plain_varlong"]) > 2**64


def test_nesting_is_bounded_when_programs_are_built() -> None:
    spec: tuple = (program.KINDS["int32"], "x", 0, 0, -1, (), ())
    for _ in range(100):
        spec = (program.KINDS["struct"], "s", 0, 0, -1, (spec,), ())
    native = program.native_module()
    assert native is not None
    with pytest.raises(ValueError, match="nested too deeply"):
        native.Program(spec, lambda b, p, limit: None)


def test_lengths_are_checked_before_allocating() -> None:
    msg = schema.api_message(3, 12, "response")
    raw = b"\x00\x00\x00\x00" + b"\xff\xff\xff\xff\x0f"  # throttle time, then 2**32 - 2 brokers
    with pytest.raises(Exception, match="cannot fit"):
        compiler.native_decoder(msg).strict(raw, 0, len(raw))
    with pytest.raises(DecodeError) as err:
        api.decode_body(3, 12, "response", raw)
    assert err.value.path == "brokers" and err.value.offset == 4


def _bench_mix() -> list[tuple[str, bytes, int, int, str]]:
    sys.path.insert(0, BENCH)
    try:
        import bench_decode
    finally:
        sys.path.remove(BENCH)
    return bench_decode.build_mix()


def _leak_workload() -> list[tuple[Message, bytes]]:
    """A large response, a frame with unknown tags, and a malformed frame (fallback and error paths)."""
    frames = []
    for _, raw, key, version, kind in _bench_mix():
        msg = schema.api_message(key, version, kind)
        header = schema.message("RequestHeader" if kind == "request" else "ResponseHeader", msg.header_version or 0)
        _, p = compiler.python_decoder(header)(raw, 0, len(raw))
        frames.append((msg, raw[p:]))
    commit, body = frames[3]
    frames.append((commit, body[: len(body) // 2]))  # truncated: native fails, Python raises
    frames.append((SYNTHETIC[1], encoder.encode_message(SYNTHETIC[1], {})[:-1] + b"\x01\x07\x01x"))
    return frames


def test_no_memory_or_reference_leaks_over_many_decodes() -> None:
    frames = _leak_workload()
    decoders = [(compiler.native_decoder(m), raw) for m, raw in frames]

    def run(times: int) -> None:
        for _ in range(times):
            for decode, raw in decoders:
                with contextlib.suppress(api._CATCH):  # the truncated frame fails in both decoders
                    decode(raw, 0, len(raw))

    assert_no_leaks(run, [raw for _, raw in decoders] + [sys.intern("partition_index")])


def test_no_leaks_through_the_frame_path() -> None:
    """Whole frames, sized or not, valid, truncated (left to Python) and with trailing bytes."""
    frames = []
    for _, raw, key, version, kind in _bench_mix():
        args = (None, None) if kind == "request" else (key, version)
        sized = struct.pack(">i", len(raw)) + raw
        frames += [(raw, args, False), (sized, args, True), (raw[:-3], args, False), (raw + b"\0", args, True)]

    def run(times: int) -> None:
        for _ in range(times):
            for raw, args, sized in frames:
                kind = "request" if args[0] is None else "response"
                compiler.frame_decoder(raw, compiler.FRAME_PROGRAMS[kind], *args, sized)

    assert_no_leaks(run, [raw for raw, _, _ in frames] + [sys.intern("header"), sys.intern("body")])


def test_frames_of_plain_values_are_left_untracked() -> None:
    """As CPython leaves a dict of plain values: the frame's result dict too, unless it holds containers."""
    frame = encoder.encode_request(18, 3, {"client_software_name": "k", "client_software_version": "1"})
    kdissect.decode_request(frame)
    result = compiler.frame_decoder(frame, compiler.FRAME_PROGRAMS["request"], None, None, True)
    assert result is not None and result["body"]["client_software_name"] == "k"
    assert not gc.is_tracked(result) and not gc.is_tracked(result["body"])


def test_decoded_values_are_plain_python_objects() -> None:
    msg = schema.api_message(3, 12, "response")
    value = {"topics": [{"name": "t", "topic_id": uuid.UUID(int=5), "partitions": [{"replica_nodes": [1, 2]}]}]}
    raw = encoder.encode_message(msg, value)
    decoded, _ = compiler.native_decoder(msg).strict(raw, 0, len(raw))
    topic = decoded["topics"][0]
    assert type(topic["topic_id"]) is uuid.UUID and topic["topic_id"] == uuid.UUID(int=5)
    assert topic["topic_id"].is_safe is uuid.SafeUUID.unknown and hash(topic["topic_id"]) == hash(uuid.UUID(int=5))
    replicas = topic["partitions"][0]["replica_nodes"]
    replicas.append(3)  # results are ordinary mutable lists
    assert replicas == [1, 2, 3] and type(replicas) is list



@pytest.mark.parametrize("path", ["program", "frame"])
def test_decoded_containers_stay_visible_to_the_cycle_collector(path: str) -> None:
    """Results may be mutated: a cycle built through any decoded list or struct must be collectable."""
    import weakref

    if path == "program":
        msg, raw = _leak_workload()[0]  # the Metadata response
        body, _ = compiler.native_decoder(msg)(raw, 0, len(raw))
    else:
        _, frame, key, version, _ = _bench_mix()[0]
        kdissect.decode_response(frame, key, version)  # registers the programs
        result = compiler.frame_decoder(frame, compiler.FRAME_PROGRAMS["response"], key, version, False)
        assert gc.is_tracked(result) and not gc.is_tracked(result["header"])
        body = result.pop("body")
    topic = body["topics"][0]
    partition = topic["partitions"][0]
    replicas = partition["replica_nodes"]
    assert gc.is_tracked(replicas) and gc.is_tracked(partition) and gc.is_tracked(topic)

    class Holder:
        pass

    holder = Holder()
    replicas.append(holder)
    holder.back = body  # a cycle through a decoded list of primitives and every struct above it
    ref = weakref.ref(holder)
    del body, topic, partition, replicas, holder
    gc.collect()
    assert ref() is None, "a cycle through decoded data leaked"
