"""Hypothesis strategies that build random values for any resolved schema message.

Driven by the same schema table as the decoders, so every message version gets random
round-trip coverage without per-API code.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from kdissect.decoders.schema import Field, Message

_INTS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "varint": (-(2**31), 2**31 - 1),
    "varlong": (-(2**63), 2**63 - 1),
    "uvarint": (0, 2**31 - 1),
}


def _element(f: Field, depth: int) -> st.SearchStrategy:
    if f.elem in _INTS:
        lo, hi = _INTS[f.elem]
        return st.integers(lo, hi)
    if f.elem == "bool":
        return st.booleans()
    if f.elem == "float64":
        return st.floats(allow_nan=False)
    if f.elem == "uuid":
        return st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
    if f.elem == "string":
        return st.text(max_size=12)
    if f.elem in ("bytes", "records"):
        return st.binary(max_size=24)
    assert f.elem == "struct"
    return struct_values(f, depth + 1)


def _value(f: Field, depth: int) -> st.SearchStrategy:
    item = _element(f.element() if f.is_array else f, depth)
    s = st.lists(item, max_size=3 if depth < 3 else 1) if f.is_array else item
    return st.one_of(st.none(), s) if f.nullable else s


def struct_values(f: Field, depth: int = 0) -> st.SearchStrategy[dict]:
    """Random dicts for a struct field: every regular field, a random subset of tagged ones."""
    regular = {m.key: _value(m, depth) for m in f.regular}
    optional = {m.key: _value(m, depth) for m in f.tagged}
    return st.fixed_dictionaries(regular, optional=optional)


def message_values(msg: Message) -> st.SearchStrategy[dict]:
    return struct_values(msg.root)


TOPIC_IDS = (uuid.UUID(int=0), uuid.UUID(int=7), uuid.UUID(int=8))


def narrowed(f: Field, value: Any, data: st.DataObject, other: Callable[[Field, Any], st.SearchStrategy | None]) -> Any:
    """``value`` (of struct field ``f``) with its topic names and topic ids drawn from a few, so
    contexts repeat, and any other member ``other`` gives a strategy for drawn from that."""
    if not isinstance(value, dict):
        return value
    out = {}
    for m in f.fields:
        if m.key not in value:
            continue
        v = value[m.key]
        if m.elem == "struct" and v is not None:
            v = [narrowed(m, item, data, other) for item in v] if m.is_array else narrowed(m, v, data, other)
        elif m.entity == "topicName" and isinstance(v, str):
            v = data.draw(st.sampled_from(("orders", "orders", "payments", "")))
        elif m.key == "topic_id" and isinstance(v, uuid.UUID):
            v = data.draw(st.sampled_from(TOPIC_IDS))
        elif (drawn := other(m, v)) is not None:
            v = data.draw(drawn)
        out[m.key] = v
    return out
