"""The one mergeable form of a group's latencies, so every face (terminal summary, report, live,
Prometheus, a Spark task's figures) computes the same percentile from the same capture in memory
that does not grow with the input.

A :class:`Latencies` holds exact counts of each distinct value while a group has at most
:data:`EXACT_VALUES` of them: its percentiles are then exactly :func:`kdissect.analysis.latency.percentiles`'
(same order statistics, same interpolation, same floats). Past that it folds the values into
logarithmic buckets of relative width :data:`RELATIVE_ERROR`: each order statistic is then
represented by its bucket's midpoint, within 0.1% of the true value, and so is every interpolated
percentile (a convex mix of two such order statistics). Count, min and max stay exact, and no
figure goes past max, so p50 ≤ p90 ≤ p99 ≤ p99.9 ≤ max always holds.

Size: at most :data:`EXACT_VALUES` entries, then one entry per occupied bucket (about 1,150 buckets
per decade of latency: a 1 µs .. 1,000 s spread is at most ~10,400). Merging is adding counts: the
same values in any pieces give the same form, in any order.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator

from kdissect.lazy import lazy_module

np = lazy_module("numpy")

EXACT_VALUES = 512  # distinct values kept exactly per group before it folds into buckets
RELATIVE_ERROR = 0.001  # a folded group's percentiles are within this fraction of the exact ones
_GAMMA = (1 + RELATIVE_ERROR) / (1 - RELATIVE_ERROR)
_LOG_GAMMA = math.log(_GAMMA)


def _bucket(value: float) -> int:
    """The bucket of a value: 0 for zero, else a signed index, ``sign * (ceil(log_gamma(|v|)) + OFFSET)``."""
    if not value:
        return 0
    index = math.ceil(math.log(abs(value)) / _LOG_GAMMA) + _OFFSET
    return index if value > 0 else -index


def _buckets_of(values: list[float] | np.ndarray) -> np.ndarray:
    """``_bucket`` of each value, at once (a piece brings thousands of distinct latencies). numpy's
    logarithm may differ from ``math.log`` in its last bit, so a value whose scaled logarithm lies
    within ``_EDGE`` of a whole number (where that bit could change the ceiling) takes ``_bucket`` itself."""
    array = np.asarray(values, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = np.log(np.abs(array)) / _LOG_GAMMA
        near = ~(np.abs(scaled - np.rint(scaled)) > _EDGE)  # (also every zero, infinity and NaN)
    keys = np.where(near, 0.0, np.ceil(scaled) + _OFFSET).astype(np.int64)
    keys[array < 0] *= -1
    for at in np.flatnonzero(near).tolist():
        keys[at] = _bucket(float(values[at]))
    return keys


def _midpoint(bucket: int) -> float:
    """The value a bucket stands for: within :data:`RELATIVE_ERROR` of every value in it."""
    if not bucket:
        return 0.0
    magnitude = 2 * _GAMMA ** (abs(bucket) - _OFFSET) / (_GAMMA + 1)
    return magnitude if bucket > 0 else -magnitude


def _bucketed(values: dict[float, int]) -> dict[int, int]:
    """Exact counts (value -> how many) folded into bucket counts."""
    buckets: dict[int, int] = {}
    for value, n in values.items():
        key = _bucket(value)
        buckets[key] = buckets.get(key, 0) + n
    return buckets


# Indexes are shifted so that no non-zero value gets bucket 0 (the smallest float's index is ~-372,000).
_OFFSET = 1 - math.floor(math.log(5e-324) / _LOG_GAMMA)
_EDGE = 1e-6  # far above the few ulps (~1e-12 at these magnitudes) two logarithm implementations differ by


class Latencies:
    """A multiset of latencies (ms), exact up to :data:`EXACT_VALUES` distinct values, then bucketed."""

    __slots__ = ("_buckets", "_values", "count", "high", "low")

    def __init__(self) -> None:
        self.count = 0
        self.low = math.inf  # exact min and max
        self.high = -math.inf
        self._values: dict[float, int] | None = {}  # value -> how many, while exact
        self._buckets: dict[int, int] | None = None  # bucket (0: zero) -> how many, once folded

    @classmethod
    def of(cls, values: Iterable[object]) -> Latencies:
        """The latencies among ``values`` that are numbers (None and NaN are not latencies)."""
        out = cls()
        for value in values:
            out.add(value)
        return out

    @property
    def exact(self) -> bool:
        return self._values is not None

    def add(self, value: object, n: int = 1) -> None:
        if not isinstance(value, int | float) or value != value:  # None, NaN, pandas' NA
            return
        value = float(value)
        self.count += n
        self.low = min(self.low, value)
        self.high = max(self.high, value)
        if self._values is not None:
            self._values[value] = self._values.get(value, 0) + n
            if len(self._values) > EXACT_VALUES:
                self._fold()
        else:
            key = _bucket(value)
            self._buckets[key] = self._buckets.get(key, 0) + n  # type: ignore[index]

    def add_many(self, values: list[float] | np.ndarray) -> None:
        """Add latencies that are all numbers (no None or NaN): what a piece of a table brings at once (a list,
        or a float64 array: read as it is once folded)."""
        if not len(values):
            return
        listed = values if type(values) is list else values.tolist()
        self.count += len(values)
        self.low = min(self.low, min(listed))
        self.high = max(self.high, max(listed))
        if self._values is not None:
            counts = self._values
            for value, n in Counter(listed).items():
                counts[value] = counts.get(value, 0) + n
            if len(counts) > EXACT_VALUES:
                self._fold()
            return
        buckets = self._buckets
        keys, counts = np.unique(_buckets_of(values), return_counts=True)
        for key, n in zip(keys.tolist(), counts.tolist(), strict=True):
            buckets[key] = buckets.get(key, 0) + n  # type: ignore[index]

    def _fold(self) -> None:
        self._buckets, self._values = _bucketed(self._values or {}), None

    def merge(self, other: Latencies) -> None:
        """Add another piece's latencies: the result is the form of all of them."""
        if not other.count:
            return
        self.low, self.high = min(self.low, other.low), max(self.high, other.high)
        self.count += other.count
        if self._values is not None and other._values is not None:
            for value, n in other._values.items():
                self._values[value] = self._values.get(value, 0) + n
            if len(self._values) > EXACT_VALUES:
                self._fold()
            return
        if self._values is not None:
            self._fold()
        theirs = other._buckets if other._buckets is not None else _bucketed(other._values or {})
        for key, n in theirs.items():
            self._buckets[key] = self._buckets.get(key, 0) + n  # type: ignore[index]

    def runs(self) -> Iterator[tuple[float, int]]:
        """(value, how many) in ascending order; a folded group's values are its buckets' midpoints,
        held within the exact min and max."""
        if self._values is not None:
            yield from sorted(self._values.items())
            return
        for key in sorted(self._buckets or {}):
            yield min(max(_midpoint(key), self.low), self.high), self._buckets[key]  # type: ignore[index]

    def quantiles(self, qs: Iterable[float]) -> list[float]:
        """Each ``q`` quantile, interpolated linearly between order statistics (as pandas and numpy do)."""
        qs = list(qs)
        if not self.count:
            return [math.nan for _ in qs]
        last = self.count - 1
        ranks: dict[int, float] = {}
        for q in qs:
            lo = int(last * q)
            ranks[lo] = ranks[min(lo + 1, last)] = math.nan
        wanted = sorted(ranks)
        seen, i = 0, 0
        for value, n in self.runs():
            seen += n
            while i < len(wanted) and wanted[i] < seen:
                ranks[wanted[i]] = value
                i += 1
        ranks[last] = self.high  # the largest order statistic is the exact max
        out = []
        for q in qs:
            h = last * q
            lo = int(h)
            low, high = ranks[lo], ranks[min(lo + 1, last)]
            out.append(low + (h - lo) * (high - low))
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Latencies) and self.__getstate__() == other.__getstate__()

    def __getstate__(self) -> tuple:
        return self.count, self.low, self.high, self._values, self._buckets

    def __setstate__(self, state: tuple) -> None:
        self.count, self.low, self.high, self._values, self._buckets = state
