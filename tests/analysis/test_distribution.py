"""The one mergeable form of latencies: exact while a group has few distinct values, within the
stated relative error past that, the same after any split and merge, and the figure every face shows."""

from __future__ import annotations

import math
import pickle
import random

import numpy as np
import pandas as pd
import pytest

from kdissect.analysis.distribution import EXACT_VALUES, RELATIVE_ERROR, Latencies
from kdissect.analysis.latency import QUANTILES, of_latencies, percentile_table, quantile

QS = (0.0, 0.001, 0.25, *QUANTILES, 1.0)


def _exact(values: list[float]) -> list[float]:
    ordered = sorted(values)
    return [quantile(ordered, q) for q in QS]


@pytest.mark.parametrize("seed", range(5))
def test_few_distinct_values_give_exactly_the_sorted_list_figures(seed):
    rng = random.Random(seed)
    pool = [round(rng.lognormvariate(0, 2), 3) for _ in range(EXACT_VALUES)] + [0.0, -0.5]
    values = [rng.choice(pool) for _ in range(rng.randrange(1, 20_000))]
    form = Latencies.of(values)
    assert form.exact and form.count == len(values)
    assert form.quantiles(QS) == _exact(values)  # the same floats, not approximately


@pytest.mark.parametrize("seed", range(5))
def test_many_distinct_values_stay_within_the_stated_relative_error(seed):
    rng = np.random.default_rng(seed)
    values = np.concatenate([rng.lognormal(0, 3, 50_000), rng.uniform(0, 0.01, 1000), [0.0] * 10]).round(6)
    form = Latencies.of(values.tolist())
    assert not form.exact
    got, want = form.quantiles(QS), _exact(values.tolist())
    for g, w in zip(got, want, strict=True):
        assert abs(g - w) <= RELATIVE_ERROR * abs(w) + 1e-12, (g, w)
    assert got[-1] == values.max()  # max stays exact
    assert got == sorted(got)  # p50 <= p90 <= p99 <= p99.9 <= max


def test_negative_values_fold_on_their_own_side():
    values = [-float(i) for i in range(1, 3 * EXACT_VALUES)] + [float(i) for i in range(1, 3 * EXACT_VALUES)]
    got, want = Latencies.of(values).quantiles(QS), _exact(values)
    for g, w in zip(got, want, strict=True):
        assert abs(g - w) <= RELATIVE_ERROR * abs(w) + 1e-12, (g, w)


@pytest.mark.parametrize("seed", range(8))
def test_pieces_split_anywhere_merge_into_the_form_of_the_whole(seed):
    rng = random.Random(seed)
    distinct = rng.choice([10, EXACT_VALUES - 1, EXACT_VALUES + 1, 5000])
    values = [float(rng.randrange(distinct)) / 7 for _ in range(20_000)]
    cuts = sorted(rng.sample(range(1, len(values)), rng.randrange(1, 12)))
    pieces = [Latencies.of(values[a:b]) for a, b in zip([0, *cuts], [*cuts, len(values)], strict=True)]
    merged = Latencies()
    for piece in rng.sample(pieces, len(pieces)):  # in any order
        merged.merge(pickle.loads(pickle.dumps(piece)))  # as a Spark task's piece travels
    whole = Latencies.of(values)
    assert merged == whole and merged.quantiles(QS) == whole.quantiles(QS)


def test_the_folded_form_stays_bounded():
    form = Latencies.of(float(i) for i in range(1, 1_000_001))  # a million distinct latencies, 1 .. 1e6 ms
    buckets = form.__getstate__()[4]
    assert buckets is not None and len(buckets) < 1200 * 6  # ~1,150 buckets per decade


def test_the_report_tables_fold_a_wide_group_as_the_summary_does():
    rng = np.random.default_rng(3)
    wide = rng.lognormal(0, 2, 5000).round(4)
    narrow = np.arange(200, dtype="float64")
    frame = pd.DataFrame({"api_name": ["Fetch"] * len(wide) + ["Produce"] * len(narrow),
                          "latency_ms": np.concatenate([wide, narrow])})
    table = percentile_table(frame, ["api_name"]).set_index("api_name")
    for name, values in (("Fetch", wide), ("Produce", narrow)):
        p = of_latencies(Latencies.of(values.tolist()))
        row = table.loc[name]
        for column, figure in (("p50", p.p50), ("p90", p.p90), ("p99", p.p99), ("p999", p.p999), ("max", p.max)):
            assert (figure is None and math.isnan(row[column])) or row[column] == figure, (name, column)


@pytest.mark.parametrize("seed", range(3))
def test_a_piece_is_bucketed_as_its_values_one_by_one(seed):
    """``add_many`` finds a folded group's buckets with numpy's logarithm: the same buckets as
    ``math.log`` value by value, bucket edges, their neighbouring floats, zeros, negatives and extremes included."""
    rng = random.Random(seed)
    gamma = (1 + RELATIVE_ERROR) / (1 - RELATIVE_ERROR)
    edges = [gamma**k for k in range(-3000, 3000, 7)]
    values = ([rng.lognormvariate(0, 3) for _ in range(20_000)] + edges + [math.nextafter(e, 0) for e in edges]
              + [math.nextafter(e, math.inf) for e in edges] + [0.0, -0.0, -2.5, 5e-324, 1e308, -1e-300])
    rng.shuffle(values)
    one_by_one, at_once = Latencies(), Latencies()
    for value in values:
        one_by_one.add(value)
    at_once.add_many(values[: EXACT_VALUES + 1])  # (folds: past EXACT_VALUES distinct values)
    assert not at_once.exact
    for start in range(EXACT_VALUES + 1, len(values), 5_000):
        at_once.add_many(values[start : start + 5_000])
    assert list(at_once.runs()) == list(one_by_one.runs()) and at_once.count == one_by_one.count
