"""The one percentile definition: the same numbers as pandas' (linear interpolation), nulls ignored."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kdissect.analysis.latency import MIN_SAMPLES, percentile_table, percentiles
from kdissect.decoders.apis import removed_version


@given(st.lists(st.floats(min_value=0, max_value=1e7, allow_nan=False), min_size=1, max_size=1200))
def test_percentiles_equal_pandas_quantiles_where_the_sample_supports_them(values: list[float]) -> None:
    p = percentiles(values)
    s = pd.Series(values)
    assert p.count == len(values) and p.max == max(values)
    for got, q in ((p.p50, 0.5), (p.p90, 0.9), (p.p99, 0.99), (p.p999, 0.999)):
        if len(values) < MIN_SAMPLES[q]:
            assert got is None  # a p99 of a handful of requests is not shown
        else:
            assert got == pytest.approx(s.quantile(q), rel=1e-12, abs=1e-9)


def test_nulls_are_not_latencies() -> None:
    assert percentiles([None, math.nan, pd.NA, 3.0, 1.0]) == percentiles([1.0, 3.0])
    empty = percentiles([None])
    assert empty.count == 0 and empty.p99 is None


def test_percentile_table_groups_and_orders_slowest_first() -> None:
    frame = pd.DataFrame({"api": ["a", "a", "b", "b", "b"], "latency_ms": [1.0, 2.0, 10.0, 20.0, 30.0]})
    table = percentile_table(frame, ["api"])
    assert list(table["api"]) == ["b", "a"] and list(table["count"]) == [3, 2]
    assert table.iloc[1]["p50"] == pytest.approx(1.5)


def test_removed_versions_come_from_the_schema_table() -> None:
    assert removed_version(0, 2) and not removed_version(0, 3)  # Produce: 4.0 kept v3+
    assert removed_version(1, 3) and not removed_version(1, 4)  # Fetch: 4.0 kept v4+
    assert not removed_version(3, 0)  # Metadata v0 is still accepted
    assert removed_version(4, 0)  # LeaderAndIsr: the whole API is gone
    assert not removed_version(0, 99) and not removed_version(9999, 0)  # unknown: not claimed removed
