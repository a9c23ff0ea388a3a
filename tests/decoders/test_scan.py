"""Hunting's scan for size fields: the C loop and the Python fallback find the same positions."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.decoders import program, scan
from tests.conftest import PURE_PYTHON_FORCED

# Bytes rich in small size fields: zeros, small numbers, and a few heads that recur.
_WORDS = st.sampled_from([b"\x00", b"\x01", b"\x00\x00\x00\x10", b"\x00\x03\x00\x0c", b"\xff", b"\x7f"])


def _expected(b: bytes, start: int, stop: int, least: int, most: int, heads: frozenset[int] | None) -> list[int]:
    found = []
    for i in range(max(start, 0), min(stop, len(b) - 7)):
        size, head = struct.unpack_from(">iI", b, i)  # a size field is signed
        if least <= size <= most and (heads is None or head in heads):
            found.append(i)
    return found


@settings(max_examples=300, deadline=None)
@given(
    data=st.lists(st.one_of(_WORDS, st.binary(max_size=6)), max_size=40).map(b"".join),
    start=st.integers(-2, 60),
    stop=st.integers(0, 200),
    least=st.integers(0, 20),
    most=st.one_of(st.integers(-1, 300), st.integers(0, 2**32)),
    with_heads=st.booleans(),
)
def test_both_scans_find_exactly_the_size_fields_asked_for(
    data: bytes, start: int, stop: int, least: int, most: int, with_heads: bool
) -> None:
    heads = frozenset(struct.unpack_from(">I", data, i)[0] for i in range(0, len(data) - 3, 5)) if with_heads else None
    expected = _expected(data, start, stop, least, most, heads)
    assert scan.python_size_fields(data, start, stop, least, most, heads) == expected
    assert scan.size_fields(bytearray(data), start, stop, least, most, heads) == expected


@pytest.mark.skipif(PURE_PYTHON_FORCED, reason="KDISSECT_PURE_PYTHON: no native scan")
def test_the_native_scan_is_used_and_checks_its_arguments() -> None:
    native = program.native_module()
    assert native is not None and scan.size_fields is native.size_fields
    with pytest.raises(TypeError):
        native.size_fields(b"", 0, 0, 0, 0, [1])
    with pytest.raises(TypeError):
        native.size_fields("text", 0, 0, 0, 0, None)


@pytest.mark.parametrize("fields", [scan.python_size_fields, scan.size_fields])
def test_both_bounds_are_included(fields) -> None:
    sizes = [4, 255, 256, 0xFFFF, 0x10000, 0x00FFFFFF, 0x01000000, 0x0123ABCD, 0x7FFFFFFF]
    data = b"".join(struct.pack(">II", size, 7) for size in sizes)
    for i, size in enumerate(sizes):
        assert 8 * i in fields(data, 0, len(data), size, size, None)
        assert 8 * i not in fields(data, 0, len(data), size + 1, 2**32, None)
        assert 8 * i not in fields(data, 0, len(data), 0, size - 1, frozenset({7}))
