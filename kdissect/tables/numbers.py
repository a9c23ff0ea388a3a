"""Number columns as numpy arrays: the step the pandas and the Arrow conversions share."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from operator import itemgetter
from typing import Any

from kdissect.lazy import lazy_module
from kdissect.native import native_module

from .columns import Typed, end_to_end

np = lazy_module("numpy")
_native_tables = native_module("tables._native")

# abstract type -> numpy type name, for the kinds converted through numpy (names: importing this loads no numpy)
NUMPY_TYPES = {"int64": "int64", "int32": "int32", "int16": "int16", "int8": "int8", "float64": "float64",
               "bool": "bool", "timestamp": "int64"}  # fmt: skip
PYTHON_ROWS = 50_000  # up to this many cells a pass in Python costs less than loading numpy (~0.08 CPU s)


def through_numpy(cells: int, few: int = 0) -> bool:
    """Whether a column of ``cells`` goes through numpy: past PYTHON_ROWS, or when numpy is loaded
    already and there are at least ``few``. A process that loaded nothing needing numpy (an exchanges
    run: pyarrow loaded without it, see tables/arrow.py) keeps its small columns in Python."""
    return cells > PYTHON_ROWS or ("numpy" in sys.modules and cells >= few)


def number_arrays(kind: str, values: list[Any]) -> tuple[np.ndarray, np.ndarray | None]:
    """Values (None: null) as an array of the kind's numpy type and their nulls (None: none).

    Integers go through int64 and are compared after narrowing, so a value the column cannot
    hold is never wrapped: it is null (see ``null_out_of_range``). Raises TypeError or
    ValueError when a value is not a number at all."""
    dtype = NUMPY_TYPES[kind]
    wide_type = dtype if dtype in ("bool", "float64") else "int64"
    try:
        wide = _without_nulls(wide_type, values)
        if wide is not None:
            nulls = None
        elif None in values:
            objects = np.fromiter(values, dtype=object, count=len(values))
            nulls = np.equal(objects, None)
            if nulls.all():  # (a column no row of the piece fills)
                return np.zeros(len(values), dtype=dtype), nulls
            objects[nulls] = 0
            wide = objects.astype(wide_type)
        else:
            nulls = None
            wide = np.array(values, dtype=wide_type)
    except OverflowError:
        return number_arrays(kind, null_out_of_range(kind, values))
    if wide_type == dtype:
        return wide, nulls
    data = wide.astype(dtype)
    if not np.array_equal(data, wide):
        return number_arrays(kind, null_out_of_range(kind, values))
    return data, nulls


def _without_nulls(wide_type: str, values: list[Any]) -> np.ndarray | None:
    """The values as an array of ``wide_type`` when a conversion that refuses None takes them all (the
    common case, found without a pass asking each value whether it is None); None otherwise. Booleans go
    through ``bytes`` (a byte per value, 0 or 1 for a bool), integers through ``numpy.fromiter``, which
    refuses None at the first (``numpy.array`` reads every value first)."""
    try:
        if wide_type == "bool" and type(values) is list:  # (bytes() of a buffer would copy its bytes)
            found = None if _native_tables is None else _native_tables.bools(values)  # (tables/_typed.c: True
            return np.frombuffer(bytes(values) if found is None else found, dtype=np.uint8) != 0  # and False)
        if wide_type == "int64":
            return np.fromiter(values, dtype=np.int64, count=len(values))  # (stops at a None: np.array does not)
    except (TypeError, ValueError):  # (None among them; or a bool column's value bytes cannot hold)
        return None
    return None


def narrowed(kind: str, typed: Typed) -> tuple[np.ndarray, np.ndarray | None]:
    """A typed part (int64, float64 or bool, and its nulls) as :func:`number_arrays` gives a list of the
    same cells: in the kind's numpy type, a value the column cannot hold null."""
    dtype, (values, nulls) = NUMPY_TYPES[kind], typed.arrays()
    if values.dtype == dtype:
        return values, nulls
    data = values.astype(dtype)
    if values.dtype.kind == data.dtype.kind == "i" and not np.array_equal(data, values):
        return number_arrays(kind, typed.tolist())
    return data, nulls


def joined_numbers(kind: str, parts: list[list[Any] | Typed]) -> tuple[np.ndarray, np.ndarray | None]:
    """Parts of a number column (lists and :class:`Typed` parts, in any order) as one array and its nulls:
    the typed parts' buffers joined and narrowed at once, the lists' values converted at once, then
    placed (rows of the Python pairing may split a column into thousands of parts)."""
    typed = [p for p in parts if type(p) is Typed]  # (empty parts join and place nothing)
    listed = end_to_end([p for p in parts if type(p) is not Typed])
    if not typed:
        return number_arrays(kind, listed)
    joined = narrowed(kind, Typed(bytearray().join(p.buffer for p in typed), typed[0].code))
    if not listed:
        return joined
    rest = number_arrays(kind, listed)
    where = np.repeat(np.array([type(p) is Typed for p in parts]), [len(p) for p in parts])
    data = np.empty(len(where), dtype=joined[0].dtype)
    data[where], data[~where] = joined[0], rest[0]
    if joined[1] is None and rest[1] is None:
        return data, None
    nulls = np.zeros(len(where), dtype=np.bool_)
    for taken, (_, found) in ((where, joined), (~where, rest)):
        if found is not None:
            nulls[taken] = found
    return data, nulls


# bits of magnitude each integer kind holds (timestamps are int64 nanoseconds)
_INT_BITS = {"int64": 63, "int32": 31, "int16": 15, "int8": 7, "timestamp": 63}


def null_out_of_range(kind: str, values: list[Any]) -> list[Any]:
    """The values with those a column of integer ``kind`` cannot hold replaced by None. Only
    hostile input makes such values (a base offset near 2**63 plus a record's index)."""
    bits = _INT_BITS[kind]
    low, high = -(2**bits), 2**bits - 1
    return [v if v is None or low <= v <= high else None for v in values]


def spreading(counts: np.ndarray) -> Callable[[np.ndarray], np.ndarray] | slice | None:
    """How the runs' values (runs of ``counts`` rows each) become the rows' values, found once for the
    columns sharing the counts: repeated by ``numpy.repeat`` (runs of many rows: record-heavy traffic);
    else, a run per row (a batch per record: chatty traffic), the values themselves (None), or those of
    the runs with a row (a slice of them, or a function taking them), without ``numpy.repeat``'s step
    per run (an item at a time, several times the conversion's cost there)."""
    if counts.max(initial=0) > 1:
        return partial(np.repeat, repeats=counts)
    rows = np.flatnonzero(counts)  # (runs of no row: a records table made steady before its first batch)
    if len(rows) == len(counts):
        return None
    if len(rows) and rows[-1] - rows[0] + 1 == len(rows):  # (a range of runs: a view of them, no copy)
        return slice(int(rows[0]), int(rows[-1]) + 1)
    return itemgetter(rows)


def spread_rows(how: Callable[[np.ndarray], np.ndarray] | slice | None, values: np.ndarray) -> np.ndarray:
    """The runs' ``values`` spread to their rows as :func:`spreading` found it (``how``)."""
    return values if how is None else values[how] if type(how) is slice else how(values)
