"""A category column's codes in C (``tables/_codes.c``) against arrow.py's Python loop."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kdissect.tables import arrow

pytestmark = pytest.mark.skipif(arrow._native_tables is None, reason="the tables extension is not built")

NAN = float("nan")  # (one object met again: found by identity; a new NaN each time: a new value each time)
# Runs of the very same object (the lanes' rows share their text objects: _codes.c takes a run's code once)
values = st.lists(st.one_of(st.none(), st.sampled_from(["produce", "fetch", "", "é"]), st.text(max_size=3),
                            st.integers(-2, 2), st.booleans(), st.just(1.0), st.just(NAN),
                            st.builds(float, st.just("nan"))), max_size=40)


def _python(column: list[Any], monkeypatch: pytest.MonkeyPatch) -> tuple:
    with monkeypatch.context() as m:
        m.setattr(arrow, "_native_tables", None)
        return arrow._codes(column)


@given(column=values)
def test_the_codes_in_c_are_the_python_loops(column: list[Any]) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        codes, nulls, distinct = _python(column, monkeypatch)
    c_codes, c_nulls, c_distinct = arrow._codes(column)
    assert c_distinct == distinct and [type(v) for v in c_distinct] == [type(v) for v in distinct]
    assert np.array_equal(c_codes, codes) and c_codes.dtype == np.int32
    assert (c_nulls is None) == (nulls is None or not nulls.any())
    if c_nulls is not None:
        assert np.array_equal(c_nulls, nulls)


def test_a_column_of_nulls_has_no_distinct_values() -> None:
    codes, nulls, distinct = arrow._codes([None, None])
    assert distinct == [] and nulls is not None and nulls.all() and not codes.any()
