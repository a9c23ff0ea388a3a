"""Table columns as pandas DataFrames with the declared dtypes (the library's tables).

Only the library API and the text output formats load pandas; Parquet goes through
:mod:`kdissect.tables.arrow`.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from .columns import TABLES, Parts, Runs, cells
from .numbers import number_arrays

# abstract type -> pandas dtype
_PANDAS = {
    "int64": "Int64",
    "int32": "Int32",
    "int16": "Int16",
    "int8": "Int8",
    "float64": "Float64",
    "bool": "boolean",
    "string": "string",
    "category": "category",
    "timestamp": "datetime64[ns, UTC]",
    "bytes": "object",
    "headers": "object",
}


def to_dataframe(table: str, columns: Mapping[str, list[Any] | Runs | Parts]) -> pd.DataFrame:
    """Columns (values per column name, None for null) as a DataFrame with the table's declared dtypes.

    Timestamps are given as integer nanoseconds since the epoch (UTC).
    """
    return taken_dataframe(table, dict(columns))


def taken_dataframe(table: str, columns: MutableMapping[str, list[Any] | Runs | Parts]) -> pd.DataFrame:
    """:func:`to_dataframe`, taking each column out of ``columns`` as it goes: its values are freed
    once its array is made, so a fleet's big table is never held twice (the report's peak memory)."""
    data = {name: _column(kind, columns.pop(name)) for name, kind in TABLES[table]}
    return pd.DataFrame(data, columns=list(data), copy=False)


def from_arrow(table: str, data: pa.Table) -> pd.DataFrame:
    """A table as Arrow (:func:`kdissect.tables.arrow.to_arrow`'s schema, e.g. pieces decoded apart
    and joined) as the DataFrame :func:`to_dataframe` gives for the same rows: categories inferred
    from the values (sorted, as pandas does), not taken from the Arrow dictionaries, and headers as
    (key, value) pairs."""
    frame = data.to_pandas()
    for name, kind in TABLES[table]:
        if kind == "category":
            frame[name] = _array(kind, data[name].to_pylist())
        elif kind == "headers":  # Arrow's key/value structs back to (key, value) pairs
            frame[name] = _array(kind, [None if h is None else [(x["key"], x["value"]) for x in h]
                                        for h in data[name].to_pylist()])  # fmt: skip
    return frame


def _column(kind: str, column: list[Any] | Runs | Parts) -> Any:
    if isinstance(column, Runs):  # convert each run's value once, then repeat it
        values, counts = column.value_list(), column.counts
        if 0 in counts:  # (a run of no rows, as a steady records table starts with: its value is no category)
            values, counts = [v for v, n in zip(values, counts, strict=True) if n], [n for n in counts if n]
        return _array(kind, values).take(np.repeat(np.arange(len(values)), counts))
    return _array(kind, cells(column))


# kinds that become pandas masked arrays through numpy (floats go to pandas directly)
_MASKED = ("int64", "int32", "int16", "int8", "bool", "timestamp")


def _array(kind: str, values: list[Any]) -> Any:
    """One column as a pandas array. Numbers and objects go through numpy, many times faster than
    pandas' element-by-element inference; whatever numpy cannot take goes to pandas as before."""
    if kind in _MASKED:
        masked = _masked(kind, values)
        if kind == "timestamp":
            return pd.to_datetime(masked if masked is not None else pd.array(values, dtype="Int64"), unit="ns",
                                  utc=True)
        return masked if masked is not None else pd.array(values, dtype=_PANDAS[kind])
    if kind == "category":  # (all null: pandas infers float categories from a list, kept as they were)
        return pd.Categorical(_objects(values) if values.count(None) != len(values) else values)
    if kind in ("bytes", "headers"):
        return pd.array(_objects(values), dtype=object)
    return pd.array(values, dtype=_PANDAS[kind])


def _objects(values: list[Any]) -> np.ndarray:
    """A 1-d object array of the values as they are (lists stay cells, not a dimension)."""
    return np.fromiter(values, dtype=object, count=len(values))


def _masked(kind: str, values: list[Any]) -> Any:
    """The values (None: null) as a pandas masked array of the kind's type, or None when they are
    not all numbers (values out of the type's range are null: see ``number_arrays``)."""
    try:
        data, nulls = number_arrays(kind, values)
    except (TypeError, ValueError):
        return None
    mask = nulls if nulls is not None else np.zeros(len(data), dtype=np.bool_)
    return pd.arrays.BooleanArray(data, mask) if kind == "bool" else pd.arrays.IntegerArray(data, mask)
