"""Turn kio entities into the plain values kdissect decodes, field by field, for differential tests.

kio (an independent implementation generated from the same Kafka definitions) names some
fields differently (``timeout_ms`` is ``timeout``) and wraps values in richer types
(timedelta, datetime, ErrorCode). Fields are matched by position against kdissect's resolved
schema at the same version, so a field kio and kdissect place differently shows up as a
mismatch instead of being silently paired by name.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import types
import typing
import uuid
from typing import Any

from hypothesis import strategies as st
from kio.index import load_entity_schema, load_request_schema, load_response_schema
from kio.schema.index import api_key_map, schema_name_map
from kio.serial._implicit_defaults import get_tagged_field_default
from kio.static.constants import EntityType
from kio.static.primitive import Records

from kdissect.decoders.schema import Field, Message

_MS = datetime.timedelta(milliseconds=1)
_ZERO_UUID = uuid.UUID(int=0)


def kio_entities(cls: type) -> st.SearchStrategy:
    """Random kio entities of ``cls`` (kio registers strategies for all its types except Records)."""
    st.register_type_strategy(Records, st.binary(max_size=64).map(Records))
    return st.from_type(cls)


def kio_api_versions() -> list[tuple[int, int, str]]:
    """Every (api key, version, kind) kio has an entity class for."""
    out = []
    for key, name in sorted(api_key_map.items()):
        for version, kinds in sorted(schema_name_map[name].items()):
            for kind, etype in (("request", EntityType.request), ("response", EntityType.response)):
                if etype in kinds:
                    out.append((key, version, kind))
    return out


def kio_non_api_entities() -> list[tuple[str, int, type]]:
    """Headers and embedded data schemas kio defines: (kdissect message name, version, kio class).

    Both name them as Kafka's definition files do (``ControlRecordTypeSchema`` included).
    """
    out = []
    for name, versions in sorted(schema_name_map.items()):
        for version, kinds in sorted(versions.items()):
            for etype in (EntityType.header, EntityType.data):
                if etype in kinds:
                    cls = load_entity_schema(name, version, etype)
                    out.append((cls.__name__, version, cls))
    return out


def kio_class(key: int, version: int, kind: str) -> type:
    return load_request_schema(key, version) if kind == "request" else load_response_schema(key, version)


def _kafka_type(fd: dataclasses.Field) -> str | None:
    return fd.metadata.get("kafka_type")


def _primitive(value: Any, kafka_type: str | None) -> Any:
    if value is None:
        if kafka_type == "uuid":
            return _ZERO_UUID  # kio writes a null uuid as all zeroes
        if kafka_type == "datetime_i64":
            return -1  # kio writes a null timestamp as -1
        return None
    if isinstance(value, datetime.timedelta):
        return round(value / _MS)
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1000)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes):
        return bytes(value)
    if isinstance(value, uuid.UUID):
        return value
    raise TypeError(f"unexpected kio value {value!r}")


def _value(value: Any, f: Field, fd: dataclasses.Field) -> Any:
    if f.is_array:
        if value is None:
            return None
        return [_element(v, f.element(), fd) for v in value]
    return _element(value, f, fd)


def _element(value: Any, f: Field, fd: dataclasses.Field) -> Any:
    if f.elem == "struct":
        return None if value is None else convert(value, f)
    return _primitive(value, _kafka_type(fd))


def _kio_skips_tag(fd: dataclasses.Field, value: Any) -> bool:
    """kio leaves a tagged field off the wire when it holds its default (the same rule as its writer)."""
    if fd.default is not dataclasses.MISSING:
        return value == fd.default
    return value == get_tagged_field_default(fd)


def convert(entity: Any, struct: Field) -> dict[str, Any]:
    """kio entity -> kdissect dict for ``struct``; tagged fields only when kio writes them."""
    kio_fields = dataclasses.fields(entity)
    ours = struct.fields
    if len(kio_fields) != len(ours):
        raise AssertionError(
            f"{struct.name}: kio has fields {[f.name for f in kio_fields]}, kdissect {[f.key for f in ours]}"
        )
    out: dict[str, Any] = {}
    for fd, f in zip(kio_fields, ours, strict=True):
        value = getattr(entity, fd.name)
        if f.tag is not None and _kio_skips_tag(fd, value):
            continue
        out[f.key] = _value(value, f, fd)
    return out


def convert_message(entity: Any, msg: Message) -> dict[str, Any]:
    return convert(entity, msg.root)


def _entity_type(hint: Any) -> Any:
    """The element type behind ``tuple[X, ...]`` and ``X | None``."""
    origin = typing.get_origin(hint)
    if origin is tuple:
        return _entity_type(typing.get_args(hint)[0])
    if origin in (types.UnionType, typing.Union):
        return _entity_type(next(a for a in typing.get_args(hint) if a is not type(None)))
    return hint


def layout_differences(cls: type, struct: Field, path: str = "") -> list[str]:
    """Where kio's class and kdissect's resolved struct disagree on fields, nesting or tags."""
    kio_fields = dataclasses.fields(cls)
    if len(kio_fields) != len(struct.fields):
        return [f"{path or '.'}: kio {[f.name for f in kio_fields]}, kdissect {[f.key for f in struct.fields]}"]
    hints = typing.get_type_hints(cls)
    out = []
    for fd, f in zip(kio_fields, struct.fields, strict=True):
        sub = _entity_type(hints[fd.name])
        if dataclasses.is_dataclass(sub) != (f.elem == "struct"):
            out.append(f"{path}.{f.key}: struct in only one of them")
        elif dataclasses.is_dataclass(sub):
            out += layout_differences(sub, f, f"{path}.{f.key}")
        elif fd.metadata.get("tag") != f.tag:
            out.append(f"{path}.{f.key}: tag {fd.metadata.get('tag')} in kio, {f.tag} in kdissect")
    return out
