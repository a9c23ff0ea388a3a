"""A native piece's lists kept as parts of their columns (``columns.Parts``), converted for Arrow in one
pass over the parts (``tables/_codes.c``, ``tables/_spans.c``), not extended into one list per column."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.tables import arrow
from kdissect.tables.columns import Parts, cells, end_to_end
from kdissect.tables.rows import JOINED_BELOW, TableRows

native = pytest.mark.skipif(arrow._native_tables is None, reason="the tables extension is not built")
texts = st.lists(st.one_of(st.none(), st.sampled_from(["produce", "", "é", "\ud800x"]), st.text(max_size=3)),
                 max_size=12)
parts_of = st.lists(texts, max_size=5)


def _piece(n: int, first: int) -> dict[str, list[Any]]:
    return {"api_name": ["Produce" if i % 3 else "Fetch" for i in range(first, first + n)],
            "client_id": [f"c{i % 5}" for i in range(first, first + n)],
            "warnings": [None if i % 4 else f"w{i}" for i in range(first, first + n)]}


def test_a_piece_list_is_a_part_of_its_column_and_never_changed() -> None:
    rows, n = TableRows("exchanges"), JOINED_BELOW
    first, second = _piece(n, 0), _piece(n, n)
    kept = {name: list(values) for name, values in first.items()}
    rows.add_columns(first, n)
    rows.append({"api_name": "Metadata", "client_id": "x"})  # a row of the Python pairing between pieces
    rows.add_columns(second, n)
    rows.add_columns(_piece(3, 2 * n), 3)  # (a small piece: joined to a list of the column's own)
    column = rows.columns["api_name"]
    assert isinstance(column, Parts) and column.parts[0] is first["api_name"] and column.parts[2] is second["api_name"]
    assert first == kept  # the rows after it went to lists of the column's own
    want = {name: [*first[name], {"api_name": "Metadata", "client_id": "x"}.get(name), *second[name],
                   *_piece(3, 2 * n)[name]] for name in first}  # fmt: skip
    assert {name: cells(rows.columns[name]) for name in first} == want
    assert cells(rows.columns["source_file"]) == [None] * (2 * n + 4)
    table = arrow.to_arrow("exchanges", rows.columns)
    plain = arrow.to_arrow("exchanges", {name: cells(c) for name, c in rows.columns.items()})
    assert table.equals(plain, check_metadata=True)


@given(parts_of)
def test_parts_end_to_end_are_their_cells(parts: list[list[Any]]) -> None:
    assert end_to_end(parts) == [v for part in parts for v in part]
    assert Parts([list(p) for p in parts]).expand() == [v for part in parts for v in part]


@native
@settings(deadline=None)
@given(parts_of)
def test_the_codes_of_parts_in_c_are_those_of_their_cells(parts: list[list[Any]]) -> None:
    joined = [v for part in parts for v in part]
    codes, nulls, distinct = arrow._codes(tuple(parts))
    want_codes, want_nulls, want_distinct = arrow._codes(joined)
    assert distinct == want_distinct and np.array_equal(codes, want_codes)
    assert (nulls is None) == (want_nulls is None) and (nulls is None or np.array_equal(nulls, want_nulls))
    with pytest.MonkeyPatch.context() as m:  # the Python reference, given the parts
        m.setattr(arrow, "_native_tables", None)
        python = arrow._codes(tuple(parts))
    assert python[2] == distinct and np.array_equal(python[0], codes)


@native
@settings(deadline=None)
@given(parts_of)
def test_the_spans_of_parts_in_c_are_those_of_their_cells(parts: list[list[Any]]) -> None:
    joined = [v for part in parts for v in part]
    assert arrow._native_tables.spans(tuple(parts), True) == arrow._native_tables.spans(joined, True)
    got = arrow._binary(pa.string(), tuple(parts))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(arrow, "_native_tables", None)
        python = arrow._binary(pa.string(), tuple(parts))
    assert got.equals(python) and got.equals(arrow._binary(pa.string(), joined))


@native
def test_parts_that_are_not_lists_are_left_to_python() -> None:
    tables = arrow._native_tables
    assert tables.spans((["a"], ("b",)), True) is None
    with pytest.raises(TypeError):
        tables.codes((["a"], ("b",)))
