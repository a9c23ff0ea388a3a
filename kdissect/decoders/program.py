"""Compile a resolved message into the program the C interpreter (``_native.c``) runs.

The program is a tree of plain tuples, one per field, built from the same resolved schema
the Python code generator reads: ``(kind, key, flags, min_elem, tag, regular, tagged)``. Besides
how to decode it, ``flags`` says what the exchange scan (``scan_frame`` in ``_native.c``, for the
native pairing) reads of a field: an error code (``is_error_field``), a topic name or id (``TOPIC``,
``TOPIC_ID``: the contexts ``named_topics`` lists), or one of ``SCANNED`` (its slot number, from
``SLOT_SHIFT`` on).
The C side turns it into its own node structs once; nothing in C is specific to an API.
When the extension is not built (no compiler at install time), or ``KDISSECT_PURE_PYTHON=1``
is set, :func:`native_module` returns None and the generated Python decoders are used.
"""

from __future__ import annotations

from types import ModuleType

from .. import native
from .entities import is_error_field
from .named_topics import is_topic_id, is_topic_name
from .schema import FIXED_FORMATS, VARINT_TYPES, Field, Message, min_size

# Element kinds, in the order of the C enum.
KINDS = {
    name: i
    for i, name in enumerate((*FIXED_FORMATS, "varint", "varlong", "uvarint", "string", "bytes", "records", "struct"))
}
ARRAY, NULLABLE, COMPACT, FLEXIBLE, ERROR, TOPIC, TOPIC_ID = 1, 2, 4, 8, 16, 32, 64
# The top-level fields the exchanges row reads (header client_id, Produce's acks, throttle_time_ms): slot i + 1.
SCANNED = ("client_id", "acks", "throttle_time_ms")
SLOT_SHIFT = 8
assert set(KINDS) == set(FIXED_FORMATS) | VARINT_TYPES | {"string", "bytes", "records", "struct"}


def native_module() -> ModuleType | None:
    """The C extension, or None when it is not built or pure Python is forced."""
    return native.native_module("decoders._native")


def require_native(enabled: bool) -> bool:
    """``enabled``, once checked that the extension is there when asked for (for the switches
    tests and benchmarks use to compare the native and Python paths)."""
    if enabled and native_module() is None:
        raise RuntimeError("the native decoder extension is not available")
    return enabled


def node(f: Field) -> tuple:
    """One field as a program node (members recursively, tagged members apart)."""
    flags = (
        (ARRAY if f.is_array else 0)
        | (NULLABLE if f.nullable else 0)
        | (COMPACT if f.compact else 0)
        | (FLEXIBLE if f.flexible else 0)
        | (ERROR if is_error_field(f.key) else 0)
        | (TOPIC if is_topic_name(f) else 0)
        | (TOPIC_ID if is_topic_id(f) else 0)
        | ((SCANNED.index(f.key) + 1) << SLOT_SHIFT if f.key in SCANNED else 0)
    )
    min_elem = min_size(f.element()) if f.is_array else 0
    tag = -1 if f.tag is None else f.tag
    return (
        KINDS[f.elem],
        f.key,
        flags,
        min_elem,
        tag,
        tuple(node(m) for m in f.regular),
        tuple(node(m) for m in f.tagged),
    )


def program(msg: Message) -> tuple:
    """The whole message version as one program (its root struct)."""
    return node(msg.root)
