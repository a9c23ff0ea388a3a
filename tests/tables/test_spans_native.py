"""A text or bytes column's buffers in C (``tables/_spans.c``) against arrow.py's Python passes."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kdissect.tables import arrow

pytestmark = pytest.mark.skipif(arrow._native_tables is None, reason="the tables extension is not built")

# Text as the lanes give it (ASCII, shared objects), not ASCII, lone surrogates (replaced), and objects
# the C pass leaves to Python (shown as str() shows them, or joined as bytes-like objects)
texts = st.lists(st.one_of(st.none(), st.sampled_from(["produce", "", "é", "\ud800x"]), st.text(max_size=4),
                           st.integers(-2, 2), st.binary(max_size=2)), max_size=30)
binaries = st.lists(st.one_of(st.none(), st.binary(max_size=5), st.builds(bytearray, st.binary(max_size=3))),
                    max_size=30)


def _both(arrow_type: pa.DataType, column: list[Any]) -> tuple[pa.Array, pa.Array]:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(arrow, "_native_tables", None)
        python = arrow._binary(arrow_type, column)
    return arrow._binary(arrow_type, column), python


@given(column=texts)
def test_a_text_column_in_c_is_the_python_passes(column: list[Any]) -> None:
    native, python = _both(pa.string(), column)
    assert native.equals(python) and native.null_count == python.null_count


@given(column=binaries)
def test_a_bytes_column_in_c_is_the_python_passes(column: list[Any]) -> None:
    native, python = _both(pa.binary(), column)
    assert native.equals(python) and native.null_count == python.null_count


def test_the_c_pass_takes_exact_text_and_leaves_the_rest() -> None:
    spans = arrow._native_tables.spans
    data, ends, nulls = spans(["ab", None, "é"], True)
    assert data == "abé".encode() and memoryview(ends).cast("q").tolist() == [0, 2, 2, 4] and nulls == b"\0\1\0"
    assert spans(["ab"], True)[2] is None
    assert spans(["ab", 1], True) is None and spans([b"a", bytearray(b"b")], False) is None
