"""Figures of a traffic stream that never ends: per-second buckets that roll over, bounded counters.

What ``kdissect live`` shows and sums up. Memory is fixed whatever the run's length: the last
``window`` seconds are kept as buckets (older ones fall off), latency percentiles come from
bounded samples per second and, for the whole run, the one mergeable form every face uses
(:class:`~kdissect.analysis.distribution.Latencies`, so the run's percentiles are the summary's),
and every counter keyed by a wire string keeps at most ``max_keys`` keys
(later newcomers are counted under ``OTHER``). Times are capture times, so a file replayed at any
speed gives the same figures as the traffic did.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import field
from itertools import chain, count, pairwise
from typing import Any, NamedTuple

from kdissect.analysis.distribution import Latencies
from kdissect.analysis.expected import is_expected
from kdissect.analysis.latency import quantile
from kdissect.dataclass import dataclass
from kdissect.lazy import lazy_module

np = lazy_module("numpy")

OTHER = "(other)"
NS = 1_000_000_000


class LabelCap:
    """Admits the first ``limit`` distinct values; any later one becomes ``OTHER``.

    Caps Prometheus label cardinality and the keys of every counter a client can grow."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._seen: set[str] = set()

    def __call__(self, value: str) -> str:
        if value in self._seen:
            return value
        if len(self._seen) >= self.limit:
            return OTHER
        self._seen.add(value)
        return value


class CappedCounter(Counter):
    """A ``Counter`` whose keys pass through a :class:`LabelCap`."""

    def __init__(self, max_keys: int) -> None:
        super().__init__()
        self._cap = LabelCap(max_keys)

    def add(self, key: str, n: int = 1) -> None:
        self[self._cap(key)] += n


def percentiles(values: Iterable[float], qs: tuple[float, ...] = (0.5, 0.99)) -> tuple[float, ...] | None:
    ordered = sorted(values)
    return tuple(quantile(ordered, q) for q in qs) if ordered else None


@dataclass(slots=True)
class Second:
    """One second of traffic."""

    second: int
    requests: int = 0
    errors: int = 0
    request_bytes: int = 0
    response_bytes: int = 0
    latency: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (api, broker) -> ms


@dataclass(slots=True)
class ApiTotals:
    """Whole-run figures of one API."""

    count: int = 0
    errors: int = 0
    unanswered: int = 0
    max_ms: float | None = None
    latency: Latencies = field(default_factory=Latencies)


class Labels(NamedTuple):
    """What a piece's exchanges are counted by, once per distinct combination (a label set)."""

    api: str
    broker: str  # "address:port"
    client: str  # "client id @ address": what the top-clients list counts
    client_id: str


class Exchanged:
    """A piece of exchanges as the figures and the Prometheus series take them, in their order: a numpy
    array per figure (an item per exchange), and the strings they are counted by once per label set
    (``labels``; ``label`` holds each exchange's index there, numbered as first met), so a piece is added
    a label set or a second at a time, whichever way its exchanges were paired. Counts the figures keep
    of the whole piece come counted: ``statuses`` and ``topics`` (the topics the requests name, each
    request naming one once), first met first; ``errors`` lists the exchanges with an error code."""

    __slots__ = ("errors", "failed", "label", "labels", "latency_ms", "request_bytes", "response_bytes",
                 "statuses", "topics", "ts_ns", "unanswered")  # fmt: skip

    def __init__(self, labels: list[Labels], label: np.ndarray, ts_ns: np.ndarray, latency_ms: np.ndarray,
                 request_bytes: np.ndarray, response_bytes: np.ndarray, failed: np.ndarray, unanswered: np.ndarray,
                 statuses: dict[str, int], errors: list[tuple[int, tuple[str, ...]]],
                 topics: dict[str, int]) -> None:  # fmt: skip
        self.labels, self.label = labels, label  # label: int64
        self.ts_ns = ts_ns  # int64: the response's capture time, else the request's
        self.latency_ms = latency_ms  # float64, NaN: no latency (unanswered)
        self.request_bytes, self.response_bytes = request_bytes, response_bytes  # int64, 0: none
        # answered with an error that is not a normal protocol step (kdissect.analysis.expected)
        self.failed = failed  # bool
        self.unanswered = unanswered  # bool
        self.statuses = statuses
        self.errors = errors  # (exchange, the names of every non-zero error code in its response)
        self.topics = topics

    @classmethod
    def of_rows(cls, ts_ns: list[int], labels: list[Labels], latency_ms: list[float | None], status: list[str],
                request_bytes: list[int], response_bytes: list[int], error_names: list[tuple[str, ...]],
                topics: list[tuple[str, ...]], failed: list[bool]) -> Exchanged:  # fmt: skip
        """A piece from a list per column (an item per exchange, each its label set): e.g. one exchange."""
        codes, distinct = numbered(labels)
        return cls(distinct, codes, np.array(ts_ns, dtype=np.int64),
                   np.array([math.nan if v is None else v for v in latency_ms], dtype=np.float64),
                   np.array(request_bytes, dtype=np.int64), np.array(response_bytes, dtype=np.int64),
                   np.array(failed, dtype=bool), np.array([s == "unanswered" for s in status], dtype=bool),
                   dict(Counter(status)), [(i, names) for i, names in enumerate(error_names) if names],
                   dict(Counter(chain.from_iterable(topics))))  # fmt: skip

    def __len__(self) -> int:
        return len(self.ts_ns)

    def __eq__(self, other: object) -> bool:
        if type(other) is not Exchanged:
            return NotImplemented
        arrays = ("label", "ts_ns", "request_bytes", "response_bytes", "failed", "unanswered")
        return (all(np.array_equal(getattr(self, name), getattr(other, name)) for name in arrays)
                and np.array_equal(self.latency_ms, other.latency_ms, equal_nan=True)
                and (self.labels, self.errors) == (other.labels, other.errors)
                and list(self.statuses.items()) == list(other.statuses.items())
                and list(self.topics.items()) == list(other.topics.items()))  # fmt: skip

    __hash__ = None  # type: ignore[assignment]

    def by(self, keys: list[Any]) -> tuple[np.ndarray, list[Any]]:
        """Each exchange's number under ``keys`` (a key per label set), numbered as first met, and the
        keys in that order: label sets come numbered as first met, so these are too."""
        numbers, distinct = numbered(keys)
        return numbers[self.label], distinct


def numbered(keys: Iterable[Any], n: int | None = None) -> tuple[np.ndarray, list[Any]]:
    """Each of the (``n``) ``keys`` as the number of its distinct key, numbered 0, 1, ... as first met, and
    the distinct keys in that order: no Python step per key."""
    first: dict[Any, int] = {}
    keys = keys if n is not None else list(keys)
    at = np.fromiter(map(first.setdefault, keys, count()), dtype=np.int64,
                     count=len(keys) if n is None else n)  # type: ignore[arg-type]  # (where each was first met)
    number = np.zeros(len(at), dtype=np.int64)
    number[list(first.values())] = np.arange(len(first))
    return number[at], list(first)


def in_order(numbers: np.ndarray, chosen: np.ndarray | None = None) -> list[tuple[int, np.ndarray]]:
    """(number, the indexes of its ``chosen`` items in order) per number, the numbers in the order their
    first chosen item comes: a stable sort of the items (a radix sort for numbers below 2**16), no Python
    step per item."""
    rows = np.arange(len(numbers)) if chosen is None else np.flatnonzero(chosen)
    if not len(rows):
        return []
    picked = numbers[rows]
    small = picked.max() < 1 << 16  # (numbers are never negative)
    rows = rows[(picked.astype(np.uint16) if small else picked).argsort(kind="stable")]
    ordered = numbers[rows]
    starts = [0, *(np.flatnonzero(ordered[1:] != ordered[:-1]) + 1).tolist(), len(rows)]
    groups = [(int(ordered[start]), rows[start:end]) for start, end in pairwise(starts)]
    return sorted(groups, key=lambda group: group[1][0]) if len(groups) > 1 else groups


class RollingFigures:
    """Running figures of a live run, updated per piece of exchanges and per anomaly.

    ``window`` seconds of buckets; ``per_second_samples`` latencies per (API, broker) per second;
    ``max_keys`` per counter. The whole-run latencies per API are bounded by their form.
    """

    def __init__(
        self,
        *,
        window: int = 60,
        per_second_samples: int = 256,
        max_keys: int = 1000,
    ) -> None:
        self.window = window
        self.per_second_samples = per_second_samples
        self.seconds: deque[Second] = deque(maxlen=window)
        self.apis: dict[str, ApiTotals] = {}
        self.statuses: Counter[str] = Counter()
        self.errors = CappedCounter(max_keys)  # error name -> occurrences (normal protocol steps left out)
        self.clients = CappedCounter(max_keys)  # "client id @ address" -> requests
        self.topics = CappedCounter(max_keys)  # topic -> exchanges naming it
        self.anomalies: Counter[str] = Counter()
        self.gaps = 0
        self.gap_bytes = 0
        self.exchanges = 0
        self.failed = 0  # exchanges answered with an error that is not a normal protocol step
        # What the engine counts: the view shows them beside the figures.
        self.packets = 0
        self.open_connections = 0
        self.kernel_drops = 0
        self.first_ns: int | None = None
        self.last_ns: int | None = None

    # -- input ----------------------------------------------------------------------------
    def add_exchanges(self, ex: Exchanged) -> None:
        """A piece of exchanges, in their order: as if added one by one (a bucket opens as its second is first
        met, an exchange whose second is past the window counts in no bucket, samples and keys are taken as
        first met), a label set or a second at a time."""
        n = len(ex)
        if not n:
            return
        self.exchanges += n
        ts = ex.ts_ns
        self._clock(int(ts.min()))
        self._clock(int(ts.max()))
        has_latency = ~np.isnan(ex.latency_ms)
        self._apis(ex, has_latency)
        self._seconds(ex, ts // NS, has_latency)
        self.failed += int(np.count_nonzero(ex.failed))
        self.statuses.update(ex.statuses)
        labels, label = ex.labels, ex.label
        for row, names in ex.errors:
            api = labels[label[row]].api
            for name in names:
                if not is_expected(api, name):
                    self.errors.add(name)
        clients = np.bincount(label, minlength=len(labels)).tolist()
        counted: dict[str, int] = {}
        for labelled, times in zip(labels, clients, strict=True):  # (first met first: the cap admits the same keys)
            counted[labelled.client] = counted.get(labelled.client, 0) + times
        for client, times in counted.items():
            self.clients.add(client, times)
        for topic, times in ex.topics.items():
            self.topics.add(topic, times)

    def _apis(self, ex: Exchanged, has_latency: np.ndarray) -> None:
        """Each API's whole-run figures: counts, and its latencies in their order."""
        numbers, names = ex.by([labelled.api for labelled in ex.labels])
        size = len(names)
        counts = np.bincount(numbers, minlength=size).tolist()
        failed = np.bincount(numbers, weights=ex.failed, minlength=size).tolist()
        unanswered = np.bincount(numbers, weights=ex.unanswered, minlength=size).tolist()
        apis = self.apis
        for api, count_, errors, missing in zip(names, counts, failed, unanswered, strict=True):
            totals = apis.get(api)
            if totals is None:
                totals = apis[api] = ApiTotals()
            totals.count += count_
            totals.errors += int(errors)
            totals.unanswered += int(missing)
        for number, rows in in_order(numbers, has_latency):
            totals = apis[names[number]]
            values = ex.latency_ms[rows]
            totals.latency.add_many(values)
            top = float(values.max())
            totals.max_ms = top if totals.max_ms is None else max(totals.max_ms, top)

    def _seconds(self, ex: Exchanged, seconds: np.ndarray, has_latency: np.ndarray) -> None:
        """The buckets: opened up to the piece's last second; each exchange counted in its second's bucket
        unless that second has rolled off (or comes before the first bucket of the run)."""
        buckets = self.seconds
        newest = int(seconds.max())
        if buckets:
            oldest = buckets[0].second
            newest = max(newest, buckets[-1].second)
            opened = buckets[-1].second + 1
        else:
            oldest = opened = int(seconds[0])  # (the first exchange's second opens the first bucket)
        oldest = max(oldest, newest - self.window + 1)
        for second in range(max(opened, oldest), newest + 1):
            buckets.append(Second(second))
        kept = seconds >= oldest
        if not kept.any():
            return
        span = newest - oldest + 1  # the buckets, oldest first (those rolled off or never opened: slot span)
        slots = np.where(kept, seconds - oldest, span)
        requests = np.bincount(slots, minlength=span + 1).tolist()
        errors = np.bincount(slots, weights=ex.failed, minlength=span + 1).tolist()
        sent = np.bincount(slots, weights=ex.request_bytes, minlength=span + 1).tolist()  # (exact below 2**53)
        received = np.bincount(slots, weights=ex.response_bytes, minlength=span + 1).tolist()
        for slot in np.flatnonzero(requests[:span]).tolist():
            bucket = buckets[slot]
            bucket.requests += requests[slot]
            bucket.errors += int(errors[slot])
            bucket.request_bytes += int(sent[slot])
            bucket.response_bytes += int(received[slot])
        pairs, keys = ex.by([(labelled.api, labelled.broker) for labelled in ex.labels])
        samples_max = self.per_second_samples
        for number, rows in in_order(slots * len(keys) + pairs, kept & has_latency):
            samples = buckets[number // len(keys)].latency.setdefault(keys[number % len(keys)], [])
            room = samples_max - len(samples)
            if room > 0:
                samples.extend(ex.latency_ms[rows[:room]].tolist())

    def anomaly(self, kind: str, length: int | None, ts_ns: int | None) -> None:
        self.anomalies[kind] += 1
        if kind == "gap":
            self.gaps += 1
            self.gap_bytes += length or 0
        if ts_ns is not None:
            self._clock(ts_ns)

    def _clock(self, ts_ns: int) -> None:
        if self.first_ns is None or ts_ns < self.first_ns:
            self.first_ns = ts_ns
        if self.last_ns is None or ts_ns > self.last_ns:
            self.last_ns = ts_ns

    # -- output ---------------------------------------------------------------------------
    def recent(self, span: int) -> list[Second]:
        """The last ``span`` seconds that have buckets (the newest may still be filling)."""
        return list(self.seconds)[-span:]

    def rates(self, span: int = 5) -> tuple[float, float]:
        """(requests per second, bytes per second) over the last ``span`` seconds."""
        recent = self.recent(span)
        if not recent:
            return 0.0, 0.0
        n = len(recent)
        return (sum(s.requests for s in recent) / n, sum(s.request_bytes + s.response_bytes for s in recent) / n)

    def latency_by(self, span: int = 10) -> dict[tuple[str, str], tuple[int, tuple[float, ...] | None]]:
        """(API, broker) -> (latencies seen, (p50, p99)) over the last ``span`` seconds."""
        merged: dict[tuple[str, str], list[float]] = {}
        for s in self.recent(span):
            for key, values in s.latency.items():
                merged.setdefault(key, []).extend(values)
        return {key: (len(values), percentiles(values)) for key, values in merged.items()}

    def bucket_count(self) -> int:
        """Values held in the buckets (what stays flat on a long run)."""
        return sum(len(v) for s in self.seconds for v in s.latency.values())
