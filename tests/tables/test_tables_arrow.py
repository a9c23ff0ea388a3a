"""Arrow tables built from buffers (kdissect.tables.arrow) equal what pyarrow makes of the pandas tables.

The CLI writes Parquet from its own Arrow conversion so that it never loads pandas; the reference
here is pyarrow's own conversion of the library's DataFrames, for every column type, nulls,
non-ASCII text, run-length columns and values outside a column's range.
"""

from __future__ import annotations

from itertools import pairwise

import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.tables.arrow import arrow_schema, to_arrow
from kdissect.tables.columns import TABLES, Runs
from kdissect.tables.frames import from_arrow, to_dataframe

_TEXT = st.one_of(st.none(), st.text(max_size=6), st.sampled_from(["Produce", "Fetch", "é", ""]))
_BYTES = st.one_of(st.none(), st.binary(max_size=8))
_HEADERS = st.one_of(st.none(), st.lists(st.tuples(st.text(max_size=4), _BYTES), max_size=3))
_BOUNDS = {"int64": 63, "int32": 31, "int16": 15, "int8": 7}


def _cells(kind: str) -> st.SearchStrategy:
    if kind in _BOUNDS or kind == "timestamp":
        bits = _BOUNDS.get(kind, 62)
        return st.one_of(st.none(), st.integers(-(2**bits), 2**bits - 1))
    return {"float64": st.one_of(st.none(), st.floats(allow_nan=False)), "bool": st.one_of(st.none(), st.booleans()),
            "string": _TEXT, "category": _TEXT, "bytes": _BYTES, "headers": _HEADERS}[kind]  # fmt: skip


@st.composite
def _columns(draw: st.DrawFn, table: str) -> dict:
    n = draw(st.integers(0, 12))
    columns: dict = {}
    shared: list[int] | None = None  # the counts list runs columns share, as a table's runs do
    for name, kind in TABLES[table]:
        if n and draw(st.booleans()):  # a column given as runs, as the records table keeps batch values
            counts = shared if shared is not None and draw(st.booleans()) else None
            if counts is None:
                cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=3))) if n > 1 else []
                bounds = [0, *cuts, n]
                counts = [end - start for start, end in pairwise(bounds)]
                shared = shared or counts
            columns[name] = Runs([draw(_cells(kind)) for _ in counts], counts)
        else:
            columns[name] = [draw(_cells(kind)) for _ in range(n)]
    return columns


def _reference(table: str, columns: dict) -> pa.Table:
    return pa.Table.from_pandas(to_dataframe(table, columns), schema=arrow_schema(table), preserve_index=False)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(TABLES)).flatmap(lambda t: st.tuples(st.just(t), _columns(t))))
def test_buffers_build_the_same_table_as_pyarrow_from_pandas(case: tuple[str, dict]) -> None:
    table, columns = case
    ours = to_arrow(table, columns)
    expected = _reference(table, columns)
    assert ours.schema.equals(expected.schema, check_metadata=False)
    for name in ours.column_names:  # dictionaries may order their values differently: compare values
        assert ours[name].to_pylist() == expected[name].to_pylist(), name


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(TABLES)).flatmap(lambda t: st.tuples(st.just(t), _columns(t))))
def test_a_table_back_from_arrow_is_the_library_s_dataframe(case: tuple[str, dict]) -> None:
    """What the Spark engine hands the report (pieces joined as Arrow) is what the local engine does."""
    table, columns = case
    want = to_dataframe(table, columns)
    pd.testing.assert_frame_equal(from_arrow(table, to_arrow(table, columns)), want)


def test_text_that_is_not_ascii_and_long_binary_columns_survive() -> None:
    columns = {name: [None] * 3 for name, _ in TABLES["errors"]}
    columns["path"] = ["responses[0].error_code", "topics[1].名前", None]
    columns["topic"] = ["t", "t", "ü"]
    got = to_arrow("errors", columns)
    assert got["path"].to_pylist() == columns["path"]
    assert got["topic"].to_pylist() == ["t", "t", "ü"] and len(got["topic"].chunk(0).dictionary) == 2


def test_values_beyond_a_column_type_become_null_instead_of_failing() -> None:
    """Only hostile input makes them (a base offset near 2**63 plus a record index), and the run goes on."""
    columns = {name: [None, None] for name, _ in TABLES["records"]}
    columns["offset"] = [2**63, 5]
    columns["partition"] = [2**40, 1]
    got = to_arrow("records", columns)
    assert got["offset"].to_pylist() == [None, 5] and got["partition"].to_pylist() == [None, 1]


def test_binary_columns_past_two_gib_of_offsets_are_split_into_chunks(monkeypatch) -> None:
    from kdissect.tables import arrow

    monkeypatch.setattr(arrow, "_MAX_BINARY", 10)
    columns = {name: [None] * 4 for name, _ in TABLES["records"]}
    columns["value"] = [b"abcdef", None, b"ghijkl", b"mn"]
    got = to_arrow("records", columns)["value"]
    assert got.num_chunks >= 2 and got.to_pylist() == columns["value"]
