"""The topics a decoded message names, as :func:`~kdissect.decoders.entities.walk`'s contexts give them,
without an ``Entry`` per struct: what the live figures count per request, and the topic ids a Metadata
answer names.

A plan compiled once per message version from the schema keeps only the members on the way to a topic
name (``entityType`` topicName) or a ``topic_id``: a struct with neither below it has its parent's
context, already listed. The exchange scan in C (``scan_frame`` in ``decoders/_native.c``, asked for
names) lists the same contexts for the native pairing; this is its reference.
"""

from __future__ import annotations

import uuid
from functools import cache
from typing import Any

from kdissect.dataclass import dataclass

from . import schema

Context = tuple[str | None, uuid.UUID | None]  # (topic, topic id) a struct inherits or sets


@dataclass(frozen=True, slots=True)
class Plan:
    """Where a struct's topic names and ids are, and which of its members lead to more."""

    names: tuple[str, ...]  # the struct's topic name members, in field order (the last one set wins)
    ids: tuple[str, ...]  # its topic id members
    children: tuple[tuple[str, bool, Plan], ...]  # (key, is an array, plan) of the structs leading to more


def is_topic_name(f: schema.Field) -> bool:
    return f.entity == "topicName" and f.elem == "string" and not f.is_array


def is_topic_id(f: schema.Field) -> bool:
    return f.key == "topic_id" and f.elem == "uuid" and not f.is_array


def _plan(f: schema.Field) -> Plan | None:
    names = tuple(m.key for m in f.fields if is_topic_name(m))
    ids = tuple(m.key for m in f.fields if is_topic_id(m))
    children = tuple((m.key, m.is_array, p) for m in f.fields if m.elem == "struct" and (p := _plan(m)) is not None)
    return Plan(names, ids, children) if names or ids or children else None


@cache
def message_plan(api_key: int, version: int, kind: str) -> Plan | None:
    """The plan of one message version (None: it names no topic)."""
    return _plan(schema.api_message(api_key, version, kind).root)


def contexts(api_key: int | None, version: int | None, kind: str, body: dict[str, Any] | None) -> list[Context]:
    """The distinct (topic, topic id) contexts of a decoded body's structs (none when it was not
    decoded), in walk order (a struct before its members), leaving out structs with neither."""
    found: dict[Context, None] = {}
    if body is not None and api_key is not None and version is not None:
        plan = message_plan(api_key, version, kind)
        if plan is not None:
            _walk(plan, body, None, None, found)
    return list(found)


def _walk(plan: Plan, value: dict[str, Any], topic: str | None, topic_id: uuid.UUID | None,
          found: dict[Context, None]) -> None:
    for key in plan.names:
        v = value.get(key)
        if isinstance(v, str):
            topic = v
    for key in plan.ids:
        v = value.get(key)
        if isinstance(v, uuid.UUID):
            topic_id = v
    if topic is not None or topic_id is not None:
        found[(topic, topic_id)] = None
    for key, is_array, child in plan.children:
        v = value.get(key)
        if v is None:
            continue
        for item in v if is_array else (v,):
            _walk(child, item, topic, topic_id, found)


def request_topics(found: list[Context]) -> list[str | uuid.UUID]:
    """What each context names, distinct: its topic, else its topic id (not the nil one)."""
    named: dict[str | uuid.UUID, None] = {}
    for topic, topic_id in found:
        if topic is not None:
            named[topic] = None
        elif topic_id is not None and topic_id.int:
            named[topic_id] = None
    return list(named)


def scanned_topics(found: list[Context]) -> tuple[str | bytes, ...]:
    """:func:`request_topics` as the exchange scan gives them (``ExchangeRows.topics``): an id as its bytes."""
    return tuple(t if isinstance(t, str) else t.bytes for t in request_topics(found))


def id_names(found: list[Context]) -> list[tuple[uuid.UUID, str]]:
    """The (topic id, topic) pairs the contexts name (not the nil id)."""
    return [(topic_id, topic) for topic, topic_id in found if topic is not None and topic_id is not None
            and topic_id.int]  # fmt: skip
