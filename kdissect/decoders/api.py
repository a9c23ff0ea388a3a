"""Decode whole Kafka frames: header version from api key + version, then the body.

Everything here is bytes in, plain Python data out: ``{"header": {...}, "body": {...}}``
with snake_case keys. Bytes left after a complete body are kept (``trailing_bytes``) and
reported in ``warnings``; they never make the message undecodable because real clients send
them (some librdkafka versions pad ApiVersions v0 requests).
"""

from __future__ import annotations

import struct
from typing import Any, NoReturn

from . import apis, compiler, schema
from .errors import DecodeError
from .wire import Malformed

_CATCH = (struct.error, IndexError, Malformed, ValueError, OverflowError)
_I16I16 = struct.Struct(">hh")
_I32 = struct.Struct(">i")


def _run(msg: schema.Message, b: bytes, p: int, *, api_key: int | None, api_version: int | None) -> tuple[dict, int]:
    """Decode one message body at ``p``; on failure, locate the bad field with the traced build."""
    try:
        return compiler.fast_decoder(msg)(b, p, len(b))
    except _CATCH:
        _fail(msg, b, p, api_key, api_version)


def _frame(header_msg: schema.Message, msg: schema.Message, b: bytes, api_key: int, api_version: int) -> dict[str, Any]:
    """A whole frame in Python: the header, then the body where the header ends, then any bytes
    left kept as a warning."""
    header, p = _run(header_msg, b, 0, api_key=api_key, api_version=api_version)
    body, end = _run(msg, b, p, api_key=api_key, api_version=api_version)
    result: dict[str, Any] = {"header": header, "body": body}
    if end < len(b):
        _warn_trailing(result, b, end)
    return result


def _fail(msg: schema.Message, b: bytes, p: int, api_key: int | None, api_version: int | None) -> NoReturn:
    """Raise the DecodeError for a failed decode at ``p``: the traced build finds the field and offset."""
    path, offset, exc = compiler.traced_decode(msg, b, p, len(b))
    reason = _reason(exc, len(b) - offset)
    raise DecodeError(
        f"{msg.name} v{msg.version}: {reason}", api_key=api_key, api_version=api_version, offset=offset, path=path
    ) from None


def _reason(exc: Exception | None, remaining: int) -> str:
    if isinstance(exc, Malformed):
        return str(exc)
    if isinstance(exc, struct.error | IndexError):
        return f"truncated: the field needs more than the {remaining} bytes left"
    return f"{type(exc).__name__}: {exc}" if exc else "inconsistent decode"


TRAILING_SHOWN = 16  # bytes after a body shown (in hex) in its warning
# A request proven while hunting may end with this many bytes after its body, all zero, when its
# version is not flexible: what librdkafka's padded ApiVersions v0 requests carry (4 zero bytes).
# Zero padding, and only a little: a size field landing a few random bytes past a body must not
# pass for a frame (bench/bench_false_frames.py).
MAX_PADDING = 8


def _warn_trailing(result: dict[str, Any], b: bytes, end: int) -> None:
    """Keep bytes after the body (callers test ``end < len(b)`` first: the usual case costs no call),
    with a warning naming them: how many, and the first ``TRAILING_SHOWN`` in hex."""
    if end < len(b):
        result["trailing_bytes"] = b[end:]
        shown = b[end : end + TRAILING_SHOWN].hex(" ")
        more = " ..." if len(b) - end > TRAILING_SHOWN else ""
        result.setdefault("warnings", []).append(
            {"code": "trailing_bytes", "message": f"{len(b) - end} bytes after the end of the body: {shown}{more}",
             "offset": end}
        )


def padded(b: bytes | bytearray, api_key: int, api_version: int, kind: str, stop: int, end: int) -> bool:
    """Whether a frame whose body ends at ``stop`` before its end ``end`` is a request padded the way
    clients are seen to pad (see ``MAX_PADDING``): the one case a proof accepts bytes left over."""
    if kind != "request" or not 0 < end - stop <= MAX_PADDING or b.count(0, stop, end) != end - stop:
        return False
    try:
        return not _api_messages(api_key, api_version, kind)[0].flexible
    except DecodeError:
        return False


def strip_size_prefix(frame: bytes) -> tuple[bytes, bool]:
    """Drop a 4-byte size prefix when it matches the frame length (the CLI and API accept both)."""
    if len(frame) >= 4 and _I32.unpack_from(frame, 0)[0] == len(frame) - 4:
        return frame[4:], True
    return frame, False


_MESSAGES: dict[tuple[int, int, str], tuple[schema.Message, schema.Message]] = {}


def _api_messages(api_key: int, api_version: int, kind: str) -> tuple[schema.Message, schema.Message]:
    """(body, header) schemas of an API message, memoised: small frames spent a third of their
    decode time finding them through the schema lookups."""
    found = _MESSAGES.get((api_key, api_version, kind))
    if found is None:
        msg = _api_message(api_key, api_version, kind)
        header = "RequestHeader" if kind == "request" else "ResponseHeader"
        header_msg = schema.message(header, apis.header_version(api_key, api_version, kind))
        found = _MESSAGES[(api_key, api_version, kind)] = (msg, header_msg)
        compiler.register_frame(kind, api_key, api_version, found[1], msg)
    return found


def _api_message(api_key: int, api_version: int, kind: str) -> schema.Message:
    try:
        return schema.api_message(api_key, api_version, kind)
    except schema.UnknownMessage:
        rng = apis.version_range(api_key, kind)
        what = (
            f"unknown api key {api_key}"
            if rng is None
            else (f"unsupported {apis.name_of(api_key)} {kind} version {api_version} (known {rng[0]}-{rng[1]})")
        )
        raise DecodeError(what, api_key=api_key, api_version=api_version, offset=0) from None


def _request_messages(b: bytes) -> tuple[int, int, schema.Message, schema.Message]:
    """A request's api key and version (its first 4 bytes), body schema and header schema."""
    if len(b) < 4:
        raise DecodeError(f"request of {len(b)} bytes is shorter than a header", offset=0)
    api_key, api_version = _I16I16.unpack_from(b, 0)
    return api_key, api_version, *_api_messages(api_key, api_version, "request")


def decode_request_head(b: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """A request the capture holds only the start of: its header, and the body's leading
    fields (those before its first array or struct) as far as ``b`` holds them whole.

    Raises :class:`DecodeError` when the header itself is cut."""
    api_key, api_version, msg, header_msg = _request_messages(b)
    header, p = _run(header_msg, b, 0, api_key=api_key, api_version=api_version)
    body: dict[str, Any] = {}
    for field_msg in schema.leading_fields(msg):
        try:
            value, p = compiler.fast_decoder(field_msg)(b, p, len(b))
        except _CATCH:
            break
        body.update(value)
    return header, body


_FRAMES = compiler.FRAME_PROGRAMS
_REQUESTS = _FRAMES["request"]
_RESPONSES = _FRAMES["response"]


def decode_request_frame(b: bytes) -> dict[str, Any]:
    """Decode a request (no size prefix): header first, its version chosen by api key + version.

    The C frame path decodes well-formed frames of versions already met in one call; whatever
    it leaves (None) is decoded in Python, which also reports errors and trailing bytes.
    """
    found = compiler.frame_decoder(b, _REQUESTS, None, None, False)
    return found if found is not None else _python_request(b)


def _python_request(b: bytes) -> dict[str, Any]:
    api_key, api_version, msg, header_msg = _request_messages(b)
    return _frame(header_msg, msg, b, api_key, api_version)


def decode_response_frame(b: bytes, api_key: int, api_version: int) -> dict[str, Any]:
    """Decode a response (no size prefix) to a request of the given api key and version."""
    found = compiler.frame_decoder(b, _RESPONSES, api_key, api_version, False)
    return found if found is not None else _python_response(b, api_key, api_version)


def _python_response(b: bytes, api_key: int, api_version: int) -> dict[str, Any]:
    msg, header_msg = _api_messages(api_key, api_version, "response")
    return _frame(header_msg, msg, b, api_key, api_version)


def _fits(msg: schema.Message, b: bytes | bytearray, p: int, end: int) -> int | None:
    try:
        return compiler.fast_decoder(msg)(b, p, end)[1]
    except _CATCH:
        return None


# Steps a native walk is granted per byte of the frame: a field or an array element reads at least a byte, but for
# empty structs; a walk that runs out is decided by the Python decode instead.
_FIT_STEPS = 4


def frame_fits(
    b: bytes | bytearray, api_key: int, api_version: int, kind: str, start: int = 0, end: int | None = None
) -> bool:
    """Whether ``b[start:end]`` (no size prefix) decodes exactly, header and body, as that message.

    For proving frame boundaries while hunting: no result is built beyond the decode itself,
    a failure costs no error location, and a candidate is read where it lies in the hunting
    buffer (no copy of the megabytes it may claim), so trying many candidates stays cheap.
    """
    end = len(b) if end is None else end
    if kind == "response":  # walked natively where it can be (no padding rule applies to an answer)
        fits, _ = frame_proof(b, api_key, api_version, kind, start, end, _FIT_STEPS * (end - start + 1))
        if fits is not None:
            return fits
    return _body_end(b, api_key, api_version, kind, start, end) == end


def _body_end(b: bytes | bytearray, api_key: int, api_version: int, kind: str, start: int, end: int) -> int | None:
    """Where the body of the message at ``b[start:end]`` ends (None: it does not decode)."""
    try:
        msg, header_msg = _api_messages(api_key, api_version, kind)
    except DecodeError:
        return None
    p = _fits(header_msg, b, start, end)
    return None if p is None else _fits(msg, b, p, end)


def frame_proof(
    b: bytes | bytearray, api_key: int, api_version: int, kind: str, start: int, end: int, budget: int
) -> tuple[bool | None, int]:
    """:func:`frame_fits` for hunting, within a ``budget`` of decoding steps: (whether it fits, or
    None when the budget ran out first; the budget left). A request may also end in padding
    (:func:`padded`): the rule is applied here, to the native walk and the Python decode alike.

    Natively nothing is built and each field and array element costs a step, so what any number
    of candidates can make their proofs cost is what the caller grants. The Python decoders
    cannot count: a frame they decide costs a step per byte it claims."""
    stop, left = compiler.frame_walker(b, _FRAMES[kind], api_key, api_version, start, end, budget)
    if stop == compiler.WALK_UNDECIDED and (api_key, api_version, kind) not in _MESSAGES:
        try:  # a version not met yet: meeting it registers its native programs
            _api_messages(api_key, api_version, kind)
        except DecodeError:
            return False, budget
        stop, left = compiler.frame_walker(b, _FRAMES[kind], api_key, api_version, start, end, budget)
    if stop == compiler.WALK_SPENT:
        return None, 0
    if stop == compiler.WALK_UNDECIDED:
        if end - start > budget:
            return None, 0
        stop, left = _body_end(b, api_key, api_version, kind, start, end), budget - (end - start)
    if stop is None or stop < 0:
        return False, left
    return stop == end or padded(b, api_key, api_version, kind, stop, end), left


def _with_or_without_prefix(frame: bytes | bytearray | memoryview, decode, can_start, *args: int) -> dict[str, Any]:
    """Decode with the size prefix stripped when it matches the length; decode the whole bytes
    instead only when the rest cannot start a message (then those 4 bytes only looked like a size)."""
    b = bytes(frame)
    stripped, had_prefix = strip_size_prefix(b)
    if not had_prefix:
        return decode(b, *args)
    try:
        return decode(stripped, *args)
    except DecodeError:
        if can_start(stripped):
            raise  # a real size prefix: the fault is in the frame, and the error says where
        try:
            return decode(b, *args)
        except DecodeError:
            pass
        raise


def _can_start_request(b: bytes) -> bool:
    try:
        _request_messages(b)
    except DecodeError:
        return False
    return True


def _can_start_response(b: bytes) -> bool:
    return len(b) >= 4  # any 4 bytes are a correlation id: a matching size prefix is taken as one


def decode_request(frame: bytes | bytearray | memoryview) -> dict[str, Any]:
    """Decode one request frame, with or without its 4-byte size prefix.

    Returns ``{"header": {...}, "body": {...}}`` (plus ``warnings`` and ``trailing_bytes`` when
    bytes follow the body). Raises :class:`DecodeError` with the field path on bad input.
    """
    found = compiler.frame_decoder(frame, _REQUESTS, None, None, True)  # (it strips a size prefix itself)
    return found if found is not None else _with_or_without_prefix(frame, _python_request, _can_start_request)


def decode_response(frame: bytes | bytearray | memoryview, api_key: int, api_version: int) -> dict[str, Any]:
    """Decode one response frame (with or without size prefix) to a request of ``api_key`` v``api_version``."""
    found = compiler.frame_decoder(frame, _RESPONSES, api_key, api_version, True)
    return (
        found
        if found is not None
        else _with_or_without_prefix(frame, _python_response, _can_start_response, api_key, api_version)
    )


def decode_data(name: str, data: bytes, version: int | None = None) -> dict[str, Any]:
    """Decode an embedded data schema (e.g. ``ConsumerProtocolSubscription`` inside JoinGroup metadata).

    Without ``version``, the data starts with its int16 version, as Kafka writes these blobs.
    Returns ``{"version": v, "data": {...}}``.
    """
    b = bytes(data)
    p = 0
    if version is None:
        if len(b) < 2:
            raise DecodeError(f"{name}: {len(b)} bytes cannot hold a version", offset=0)
        version = struct.unpack_from(">h", b, 0)[0]
        p = 2
    try:
        msg = schema.message(name, version)
    except schema.UnknownMessage as exc:
        raise DecodeError(str(exc), offset=0) from None
    value, end = _run(msg, b, p, api_key=None, api_version=version)
    result: dict[str, Any] = {"version": version, "data": value}
    _warn_trailing(result, b, end)
    return result


def decode_body(api_key: int, api_version: int, kind: str, data: bytes, offset: int = 0) -> tuple[dict, int]:
    """Decode just a message body (no header) starting at ``offset``: (body, end offset).

    For callers that already split the header off, and for differential tests against
    other implementations that serialise bodies only.
    """
    msg = _api_message(api_key, api_version, kind)
    return _run(msg, bytes(data), offset, api_key=api_key, api_version=api_version)
