"""Walk a decoded message alongside its schema and say what each struct instance is about.

Kafka's schemas tag fields with an ``entityType`` (topicName, groupId, brokerId, ...). Using
those tags, instead of per-API code, every API — including ones added after this was
written — yields its topic/partition entries, its errors and the brokers it names.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import field
from typing import Any

from kdissect.dataclass import dataclass
from kdissect.decoders import schema
from kdissect.decoders.schema import Field

PARTITION_KEYS = ("partition_index", "partition", "partition_id", "index")


@dataclass(slots=True)
class Context:
    """What the enclosing structs said: inherited by nested ones."""

    topic: str | None = None
    topic_id: uuid.UUID | None = None
    partition: int | None = None
    group: str | None = None


@dataclass(slots=True)
class Entry:
    """One struct instance: its path, its inherited context and its scalar fields."""

    path: str
    context: Context
    value: dict[str, Any]  # the struct as decoded (arrays included)
    scalars: dict[str, Any] = field(default_factory=dict)
    fields: dict[str, Field] = field(default_factory=dict)
    has_partition: bool = False


def walk(msg: schema.Message, body: dict[str, Any], *, errors_only: bool = False) -> Iterator[Entry]:
    """Every struct instance of a decoded message, outermost first.

    ``errors_only`` skips subtrees that hold no error code (what the exchanges table needs);
    the context of the structs it does visit is still complete.
    """
    yield from _walk(msg.root, body, "", Context(), errors_only)


_ERROR_MEMBERS: dict[int, tuple[Field, ...]] = {}


def _error_members(f: Field) -> tuple[Field, ...]:
    """The members of ``f`` that are error codes or hold one further down (memoised per field)."""
    members = _ERROR_MEMBERS.get(id(f))
    if members is None:
        members = _ERROR_MEMBERS[id(f)] = tuple(
            m for m in f.fields if is_error_field(m.key) or (m.elem == "struct" and _error_members(m))
        )
    return members


def _has_errors(f: Field) -> bool:
    """Whether any struct under ``f`` has an error-code field."""
    return bool(_error_members(f))


_RECORDS: dict[int, bool] = {}


def carries_records(msg: schema.Message) -> bool:
    """Whether the message has a ``records`` field anywhere (a Produce request, a Fetch response),
    memoised per message version: a run that keeps no records still decodes these for anomalies."""
    found = _RECORDS.get(id(msg.root))
    if found is None:
        found = _RECORDS[id(msg.root)] = _has_records(msg.root)
    return found


def _has_records(f: Field) -> bool:
    return any(m.elem == "records" or (m.elem == "struct" and _has_records(m)) for m in f.fields)


def has_error(msg: schema.Message, body: dict[str, Any]) -> bool:
    """Whether any error code in a decoded message is non-zero. Most responses have none, and
    this answers without building the entries a walk would (what the exchanges table needs)."""
    return _nonzero_error(msg.root, body)


def _nonzero_error(f: Field, value: dict[str, Any]) -> bool:
    for m in _error_members(f):
        v = value.get(m.key)
        if not v:
            continue
        if m.elem != "struct":
            if not m.is_array:
                return True
        elif m.is_array:
            if any(_nonzero_error(m, item) for item in v):
                return True
        elif _nonzero_error(m, v):
            return True
    return False


def _walk(f: Field, value: dict[str, Any], path: str, parent: Context, errors_only: bool) -> Iterator[Entry]:
    ctx = Context(parent.topic, parent.topic_id, None, parent.group)
    entry = Entry(path, ctx, value)
    children: list[tuple[Field, Any]] = []
    for m in f.fields:
        if m.key not in value:
            continue
        v = value[m.key]
        if m.elem == "struct":
            if not errors_only or _has_errors(m):
                children.append((m, v))
            continue
        if m.is_array:
            continue
        entry.scalars[m.key] = v
        entry.fields[m.key] = m
        if m.entity == "topicName" and isinstance(v, str):
            ctx.topic = v
        elif m.entity == "groupId" and isinstance(v, str):
            ctx.group = v
        elif m.key == "topic_id" and isinstance(v, uuid.UUID):
            ctx.topic_id = v
        elif m.key in PARTITION_KEYS and isinstance(v, int) and m.elem == "int32" and ctx.partition is None:
            ctx.partition = v
            entry.has_partition = True
    yield entry
    prefix = f"{path}." if path else ""
    for m, v in children:
        if v is None:
            continue
        if m.is_array:
            for i, item in enumerate(v):
                yield from _walk(m, item, f"{prefix}{m.key}[{i}]", ctx, errors_only)
        else:
            yield from _walk(m, v, f"{prefix}{m.key}", ctx, errors_only)


def is_error_field(key: str) -> bool:
    return key == "error_code" or key.endswith("_error_code")
