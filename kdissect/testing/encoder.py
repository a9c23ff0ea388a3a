"""Schema-driven encoder: the inverse of the compiled decoders.

Used by the tests (round trips, byte-exact examples) and by the synthetic-capture builders.
It walks the same resolved schema as the decoders, so the two can't drift apart. Values left
out of a dict are written as the field's default (Kafka's default, else zero/empty), so a
test only spells out what matters; tagged fields are written only when present.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from kdissect.decoders import schema
from kdissect.decoders.schema import FIXED_FORMATS, Field
from kdissect.decoders.wire import write_uvarint, write_varint

_STRUCTS = {t: struct.Struct(">" + f) for t, f in FIXED_FORMATS.items()}
_ZERO_UUID = uuid.UUID(int=0)


class EncodeError(ValueError):
    """A value that does not fit the schema field it is meant for."""


def default_value(f: Field) -> Any:
    """What Kafka's generated code would put in a field nobody set."""
    if f.default is not None:
        if f.elem == "uuid" and not f.is_array:
            return _ZERO_UUID
        return f.default
    if f.nullable:
        return None
    if f.is_array:
        return []
    if f.elem == "struct":
        return {}
    if f.elem == "string":
        return ""
    if f.elem in ("bytes", "records"):
        return b""
    if f.elem == "uuid":
        return _ZERO_UUID
    if f.elem == "bool":
        return False
    if f.elem == "float64":
        return 0.0
    return 0


def _length(out: bytearray, n: int, compact: bool, legacy: str) -> None:
    if compact:
        out += write_uvarint(n + 1)
    else:
        out += struct.pack(">" + legacy, n)


def _element(out: bytearray, f: Field, value: Any, path: str) -> None:
    elem = f.elem
    try:
        if elem in _STRUCTS:
            if elem == "uuid":
                value = (value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))).bytes
            out += _STRUCTS[elem].pack(value)
        elif elem in ("varint", "varlong"):
            out += write_varint(value)
        elif elem == "uvarint":
            out += write_uvarint(value)
        elif elem in ("string", "bytes", "records"):
            if value is None:
                if not f.nullable:
                    raise EncodeError(f"{path}: null in a non-nullable {elem}")
                _length(out, -1, f.compact, "h" if elem == "string" else "i")
                return
            raw = value.encode("utf-8") if elem == "string" else bytes(value)
            _length(out, len(raw), f.compact, "h" if elem == "string" else "i")
            out += raw
        elif elem == "struct":
            if f.nullable:
                if value is None:
                    out += b"\xff"
                    return
                out += b"\x01"
            _struct(out, f, value, path)
        else:  # pragma: no cover - schema only yields the types above
            raise EncodeError(f"{path}: unsupported type {elem}")
    except (struct.error, TypeError, AttributeError, ValueError) as exc:
        raise EncodeError(f"{path}: {value!r} does not fit {elem}: {exc}") from None


def _value(out: bytearray, f: Field, value: Any, path: str) -> None:
    if not f.is_array:
        _element(out, f, value, path)
        return
    if value is None:
        if not f.nullable:
            raise EncodeError(f"{path}: null in a non-nullable array")
        _length(out, -1, f.compact, "i")
        return
    _length(out, len(value), f.compact, "i")
    item = f.element()
    for i, v in enumerate(value):
        _element(out, item, v, f"{path}[{i}]")


def _struct(out: bytearray, f: Field, value: dict, path: str) -> None:
    if not isinstance(value, dict):
        raise EncodeError(f"{path or f.name}: expected a dict, got {type(value).__name__}")
    prefix = f"{path}." if path else ""
    for m in f.regular:
        v = value[m.key] if m.key in value else default_value(m)
        _value(out, m, v, prefix + m.key)
    if not f.flexible:
        return
    tagged: list[tuple[int, bytes]] = []
    for m in f.tagged:
        if m.key in value:
            buf = bytearray()
            _value(buf, m, value[m.key], prefix + m.key)
            tagged.append((m.tag, bytes(buf)))  # type: ignore[arg-type]
    tagged.extend((int(t), bytes(raw)) for t, raw in value.get("unknown_tagged_fields", ()))
    tagged.sort(key=lambda t: t[0])
    out += write_uvarint(len(tagged))
    for tag, raw in tagged:
        out += write_uvarint(tag) + write_uvarint(len(raw)) + raw


def encode_message(msg: schema.Message, value: dict) -> bytes:
    """Encode a resolved message (body, header or data schema) from a dict."""
    out = bytearray()
    _struct(out, msg.root, value, "")
    return bytes(out)


def _frame(parts: list[bytes], size_prefix: bool) -> bytes:
    payload = b"".join(parts)
    return struct.pack(">i", len(payload)) + payload if size_prefix else payload


def encode_request(
    api_key: int,
    api_version: int,
    body: dict,
    *,
    correlation_id: int = 0,
    client_id: str | None = "kdissect",
    header_extra: dict | None = None,
    size_prefix: bool = True,
) -> bytes:
    """Encode a full request frame (size prefix, header chosen like Kafka does, body)."""
    msg = schema.api_message(api_key, api_version, "request")
    header = {
        "request_api_key": api_key,
        "request_api_version": api_version,
        "correlation_id": correlation_id,
        "client_id": client_id,
        **(header_extra or {}),
    }
    header_msg = schema.message("RequestHeader", msg.header_version or 0)
    return _frame([encode_message(header_msg, header), encode_message(msg, body)], size_prefix)


def encode_response(
    api_key: int,
    api_version: int,
    body: dict,
    *,
    correlation_id: int = 0,
    header_extra: dict | None = None,
    size_prefix: bool = True,
) -> bytes:
    """Encode a full response frame for a request of ``api_key`` v``api_version``."""
    msg = schema.api_message(api_key, api_version, "response")
    header_msg = schema.message("ResponseHeader", msg.header_version or 0)
    header = {"correlation_id": correlation_id, **(header_extra or {})}
    return _frame([encode_message(header_msg, header), encode_message(msg, body)], size_prefix)


def encode_data(name: str, version: int, value: dict, *, with_version: bool = True) -> bytes:
    """Encode an embedded data schema, prefixed by its int16 version as Kafka writes them."""
    raw = encode_message(schema.message(name, version), value)
    return (struct.pack(">h", version) + raw) if with_version else raw
