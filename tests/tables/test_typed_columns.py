"""Typed column buffers (``tables/_typed.c``, read back by ``columns.Typed``) against the lists they replace.

The native pairing appends the integer cells of its partitions and request_params rows as machine
values; the exchanges rows' numeric cells likewise (``events.EXCHANGE_TYPED``). A table holding such
parts must give the same cells and the same Arrow arrays as one holding the values in lists."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.tables import arrow
from kdissect.tables.columns import INTEGER_KINDS, NULLABLE, TABLES, Parts, Runs, Typed, cells, typed_cell
from kdissect.tables.rows import TYPED_RUNS, TableRows, typed, typed_rows

native = arrow._native_tables
pytestmark = pytest.mark.skipif(native is None, reason="the tables extension is not built")

# ints of every width a column holds, the ends of int64 and beyond (null, as null_out_of_range makes them)
cell = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                 st.sampled_from([2**63 - 1, -(2**63), 2**63, 2**31, -(2**31) - 1, 2**15, 127, 128, 0]))  # fmt: skip
INTEGER_COLUMNS = [(table, name, kind) for table in ("partitions", "request_params")
                   for name, kind in TABLES[table] if kind in INTEGER_KINDS]  # fmt: skip


def _typed(values: list[Any]) -> Typed:
    buffer = bytearray()
    native.append_rows((buffer,), (), [(v,) for v in values])  # type: ignore[union-attr]
    return Typed(buffer, NULLABLE)


def _expected(values: list[Any]) -> list[Any]:
    return [None if v is None or not -(2**63) <= v < 2**63 else int(v) for v in values]


@settings(deadline=None)  # (no timing: sanitized builds on a loaded machine are slow)
@given(st.lists(cell, max_size=30))
def test_typed_cells_are_the_values_with_int64_overflow_null(values: list[Any]) -> None:
    column = _typed(values)
    assert len(column) == typed_rows(column.buffer) == len(values)
    assert column.tolist() == _expected(values)


@settings(deadline=None)
@given(st.binary(max_size=40), st.integers(0, 40), st.lists(cell, max_size=300))
def test_typed_cells_go_after_what_a_buffer_holds(head: bytes, cut: int, values: list[Any]) -> None:
    """Cells follow the bytes a buffer already holds, whatever room it has (``typed_put`` writes in place
    within it): one whose front was cut (its start moved inside its allocation), one grown across many
    reallocations."""
    buffer = bytearray(head)
    del buffer[:cut]
    kept = bytes(buffer)
    native.append_rows((buffer,), (), [(v,) for v in values])  # type: ignore[union-attr]
    assert bytes(buffer[: len(kept)]) == kept
    assert Typed(bytearray(buffer[len(kept):]), NULLABLE).tolist() == _expected(values)


def test_a_typed_cell_is_refused_while_the_buffer_is_exported() -> None:
    """A buffer a view holds is not resized, even with room for the cell (as PyByteArray_Resize refuses)."""
    buffer = bytearray(100)
    del buffer[90:]  # (the allocation stays: room for a cell in place)
    with memoryview(buffer), pytest.raises(BufferError):
        native.append_rows((buffer,), (), [(1,)])  # type: ignore[union-attr]
    assert buffer == bytearray(90)
    native.append_rows((buffer,), (), [(1,)])  # type: ignore[union-attr]
    assert Typed(bytearray(buffer[90:]), NULLABLE).tolist() == [1]


@settings(deadline=None)
@given(st.lists(cell, max_size=30))
def test_the_python_twin_of_a_typed_cell_writes_the_same_bytes(values: list[Any]) -> None:
    """typed_cell (the reference path's run values, ``KDISSECT_PURE_PYTHON=1``) and typed_append agree."""
    assert b"".join(map(typed_cell, values)) == _typed(values).buffer


@settings(deadline=None)
@given(st.lists(st.tuples(cell, st.integers(1, 4)), max_size=12),
       st.sampled_from([(name, kind) for name, kind in TABLES["records"] if name in TYPED_RUNS]))
def test_typed_runs_are_the_listed_runs(runs: list[tuple[Any, int]], column: tuple[str, str]) -> None:
    """A records run column held typed gives the cells and the Arrow array of the same runs as a list
    (a value int64 cannot hold: null, as the list's conversion makes it)."""
    _, kind = column
    counts = [n for _, n in runs]
    typed_runs, listed_runs = Runs(bytearray(), counts), Runs([], counts)
    for value, _ in runs:
        typed_runs.append(value)
        listed_runs.append(value)
    values = _expected([v for v, _ in runs])
    assert typed_runs.expand() == [v for v, n in zip(values, counts, strict=True) for _ in range(n)]
    got, want = arrow._repeated(kind, typed_runs, {}), arrow._repeated(kind, listed_runs, {})
    assert got.equals(want), (got, want)


@settings(deadline=None)
@given(st.lists(st.lists(cell, max_size=8), max_size=5), st.sampled_from(INTEGER_COLUMNS))
def test_a_column_of_typed_and_listed_parts_is_the_same_arrow_array(
    pieces: list[list[Any]], column: tuple[str, str, str]
) -> None:
    """Typed parts (joined, then narrowed to the column's kind: values it cannot hold null) between lists."""
    *_, kind = column
    parts: list[Any] = [_typed(p) if k % 2 else p for k, p in enumerate(pieces)]
    got, want = arrow._array(kind, Parts(parts)), arrow._array(kind, [v for p in pieces for v in p])
    assert got.equals(want), (got, want)
    assert cells(Parts(parts)) == [v for k, p in enumerate(pieces) for v in (_expected(p) if k % 2 else p)]


def test_a_piece_with_typed_buffers_joins_a_table_as_one_typed_part() -> None:
    rows = TableRows("request_params")
    for correlation_id in (1, 2):
        buffer = bytearray()
        native.append_rows((buffer, [None]), (), [(correlation_id, None)])  # type: ignore[union-attr]
        rows.add_columns(typed({"correlation_id": buffer, "transactional_id": ["t"]}), 1)
        rows.append({"correlation_id": 10 + correlation_id})  # a row of the Python pairing between pieces
    column = rows.columns["correlation_id"]
    assert isinstance(column, Parts) and [type(p) for p in column.parts] == [Typed, list, Typed, list]
    assert cells(column) == [1, 11, 2, 12]
    assert cells(rows.columns["transactional_id"]) == ["t", None, "t", None]
    table = arrow.to_arrow("request_params", rows.columns)
    assert table.column("correlation_id").to_pylist() == [1, 11, 2, 12]
    assert table.schema.field("correlation_id").type == pa.int32()


def test_a_value_that_is_not_an_integer_is_refused() -> None:
    with pytest.raises(TypeError, match="not an integer"):
        native.append_rows((bytearray(),), (), [("7",)])  # type: ignore[union-attr]


@settings(deadline=None)
@given(st.lists(st.one_of(st.booleans(), st.booleans(), st.none(), st.integers(0, 2)), max_size=40))
def test_a_bool_list_is_a_byte_per_value_as_bytes_makes_it(values: list[Any]) -> None:
    """``bools`` (numbers.py's step for a bool column's list) gives bytes(values) for True and False alone;
    None for any other value (an int, None), which the reference's own steps then take."""
    found = native.bools(values)  # type: ignore[union-attr]
    if all(type(v) is bool for v in values):
        assert found == bytes(values)
    else:
        assert found is None
    assert native.bools(tuple(values)) is None  # type: ignore[union-attr]
