"""Number columns as numpy arrays: the step the pandas and the Arrow conversions share."""

from __future__ import annotations

from typing import Any

import numpy as np

# abstract type -> numpy type, for the kinds converted through numpy
NUMPY_TYPES = {"int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8, "float64": np.float64,
               "bool": np.bool_, "timestamp": np.int64}  # fmt: skip


def number_arrays(kind: str, values: list[Any]) -> tuple[np.ndarray, np.ndarray | None]:
    """Values (None: null) as an array of the kind's numpy type and their nulls (None: none).

    Integers go through int64 and are compared after narrowing, so a value the column cannot
    hold is never wrapped: it is null (see ``null_out_of_range``). Raises TypeError or
    ValueError when a value is not a number at all."""
    dtype = NUMPY_TYPES[kind]
    wide_type = dtype if dtype in (np.bool_, np.float64) else np.int64
    try:
        if None in values:
            objects = np.fromiter(values, dtype=object, count=len(values))
            nulls = np.equal(objects, None)
            objects[nulls] = 0
            wide = objects.astype(wide_type)
        else:
            nulls = None
            wide = np.array(values, dtype=wide_type)
    except OverflowError:
        return number_arrays(kind, null_out_of_range(kind, values))
    if wide_type is dtype:
        return wide, nulls
    data = wide.astype(dtype)
    if not np.array_equal(data, wide):
        return number_arrays(kind, null_out_of_range(kind, values))
    return data, nulls


# bits of magnitude each integer kind holds (timestamps are int64 nanoseconds)
_INT_BITS = {"int64": 63, "int32": 31, "int16": 15, "int8": 7, "timestamp": 63}


def null_out_of_range(kind: str, values: list[Any]) -> list[Any]:
    """The values with those a column of integer ``kind`` cannot hold replaced by None. Only
    hostile input makes such values (a base offset near 2**63 plus a record's index)."""
    bits = _INT_BITS[kind]
    low, high = -(2**bits), 2**bits - 1
    return [v if v is None or low <= v <= high else None for v in values]
