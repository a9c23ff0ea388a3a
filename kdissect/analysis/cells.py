"""Reading single cells of the typed tables: nulls come as None, NaN, pandas' NA or NaT."""

from __future__ import annotations

import math


def given(value: object) -> bool:
    """Whether a cell holds a value (not None, NaN, NA or NaT)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    try:
        return not bool(value != value)
    except TypeError:  # pandas.NA: its comparisons are NA too
        return False


def flag(value: object) -> bool:
    """A nullable boolean cell as a plain bool (null is False)."""
    return given(value) and bool(value)
