"""Where size fields start: the scan a framer hunting for a frame boundary runs over every byte.

Natively one pass in C (``_native.size_fields``); without the extension a regular expression
finds the size fields about small enough followed by one of the heads, and Python checks the
size. Either way no Python code runs for most positions that cannot start a candidate: hunting
through megabytes of zeros, or of crafted heads claiming more than is buffered, costs no call per byte.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Set
from functools import lru_cache

from . import program

_native = program.native_module()
_I = struct.Struct(">i")


def python_size_fields(
    b: bytes | bytearray, start: int, stop: int, least: int, most: int, heads: Set[int] | None
) -> list[int]:
    """The positions ``i`` in ``[start, stop)``, with 8 bytes of ``b`` from ``i``, where a big-endian
    size field (signed: never below 0) between ``least`` and ``most`` starts and the next 4 bytes,
    as a big-endian number, are in ``heads`` (None: any)."""
    stop, least, most = min(stop, len(b) - 7), max(least, 0), min(most, 0x7FFFFFFF)
    found: list[int] = []
    if most < least:
        return found
    shift = max(most.bit_length() - 3, 0)
    rounded = ((most >> shift) + 1 << shift) - 1  # a few dozen patterns in all
    pattern = _pattern(rounded, heads if heads is None else frozenset(heads))
    for match in pattern.finditer(b, max(start, 0), max(stop, 0) + 7):
        i = match.start()
        if i >= stop:
            break
        if least <= _I.unpack_from(b, i)[0] <= most:
            found.append(i)
    return found


size_fields = _native.size_fields if _native is not None else python_size_fields


@lru_cache(maxsize=64)
def _pattern(most: int, heads: frozenset[int] | None) -> re.Pattern[bytes]:
    """Where a size no larger than ``most`` starts, followed by one of ``heads`` (or any 4 bytes)."""
    return re.compile(rb"(?=" + _at_most(most.to_bytes(4, "big")) + _one_of(heads) + rb")", re.DOTALL)


def _one_of(heads: frozenset[int] | None) -> bytes:
    """A regular expression for the 4-byte big-endian numbers in ``heads`` (None: any)."""
    if heads is None:
        return rb".{4}"
    last_bytes: dict[bytes, list[int]] = {}
    for head in sorted(heads):
        last_bytes.setdefault(head.to_bytes(4, "big")[:3], []).append(head & 0xFF)
    branches = [_literal(first) + b"[" + _literal(bytes(last)) + b"]" for first, last in last_bytes.items()]
    return b"(?:" + b"|".join(branches) + b")" if branches else rb"(?!)"


def _literal(raw: bytes) -> bytes:
    return b"".join(rb"\x%02x" % c for c in raw)


def _at_most(limit: bytes) -> bytes:
    """A regular expression for the big-endian numbers of ``len(limit)`` bytes up to ``limit``."""
    if not limit:
        return b""
    first, rest = limit[0], limit[1:]
    if rest.count(0xFF) == len(rest):
        return rb"[\x00-\x%02x]" % first + rb"." * len(rest)
    equal = _literal(limit[:1]) + _at_most(rest)
    return equal if not first else rb"(?:[\x00-\x%02x]" % (first - 1) + rb"." * len(rest) + b"|" + equal + b")"
