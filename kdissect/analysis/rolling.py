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

from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import field
from itertools import chain

from kdissect.analysis.distribution import Latencies
from kdissect.analysis.expected import is_expected
from kdissect.analysis.latency import quantile
from kdissect.dataclass import dataclass

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


@dataclass(slots=True)
class Exchanged:
    """A piece of exchanges as the figures take them: a list per column, an item per exchange (the
    ``exchanges`` rows' values plus each one's error names and topics), so a piece is added in one
    pass, whichever way its exchanges were paired (the native lanes' column pieces or exchange objects)."""

    ts_ns: list[int] = field(default_factory=list)
    api: list[str] = field(default_factory=list)
    broker: list[str] = field(default_factory=list)
    client: list[str] = field(default_factory=list)  # "client id @ address": what the top-clients list counts
    client_id: list[str] = field(default_factory=list)
    latency_ms: list[float | None] = field(default_factory=list)
    status: list[str] = field(default_factory=list)
    request_bytes: list[int] = field(default_factory=list)
    response_bytes: list[int] = field(default_factory=list)
    error_names: list[tuple[str, ...]] = field(default_factory=list)  # every non-zero error code's name
    topics: list[tuple[str, ...]] = field(default_factory=list)  # the topics the request names
    # answered with an error that is not a normal protocol step (kdissect.analysis.expected)
    failed: list[bool] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ts_ns)


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
        """A piece of exchanges, in their order (a bucket opens as its second is first met); each API's
        latencies are added to its whole-run figures at once."""
        if not len(ex):
            return
        self.exchanges += len(ex)
        self._clock(min(ex.ts_ns))
        self._clock(max(ex.ts_ns))
        samples_max, bucket_of, apis = self.per_second_samples, self._bucket, self.apis
        second, bucket = None, None
        latencies: dict[str, list[float]] = {}
        rows = zip(ex.ts_ns, ex.api, ex.broker, ex.latency_ms, ex.failed, ex.status, ex.request_bytes,
                   ex.response_bytes, strict=True)  # fmt: skip
        for ts_ns, api, broker, latency_ms, failed, status, request_bytes, response_bytes in rows:
            if ts_ns // NS != second:  # (a bucket found stays the one of its second until another is met)
                second = ts_ns // NS
                bucket = bucket_of(ts_ns)
            totals = apis.get(api)
            if totals is None:
                totals = apis[api] = ApiTotals()
            totals.count += 1
            if failed or status == "unanswered":
                totals.errors += failed
                totals.unanswered += status == "unanswered"
            if bucket is not None:
                bucket.requests += 1
                bucket.errors += failed
                bucket.request_bytes += request_bytes
                bucket.response_bytes += response_bytes
            if latency_ms is not None:
                latencies.setdefault(api, []).append(latency_ms)
                if bucket is not None:
                    samples = bucket.latency.setdefault((api, broker), [])
                    if len(samples) < samples_max:
                        samples.append(latency_ms)
        for api, values in latencies.items():
            totals = apis[api]
            totals.latency.add_many(values)
            top = max(values)
            totals.max_ms = top if totals.max_ms is None else max(totals.max_ms, top)
        self.failed += sum(ex.failed)
        self.statuses.update(ex.status)
        if any(ex.error_names):
            for api, names in zip(ex.api, ex.error_names, strict=True):
                for name in names:
                    if not is_expected(api, name):
                        self.errors.add(name)
        for client, n in Counter(ex.client).items():  # (first met first: the cap admits the same keys)
            self.clients.add(client, n)
        for topic, n in Counter(chain.from_iterable(ex.topics)).items():
            self.topics.add(topic, n)

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

    def _bucket(self, ts_ns: int) -> Second | None:
        """The bucket of ``ts_ns``'s second, opening seconds up to it; None when already rolled off."""
        second = ts_ns // NS
        seconds = self.seconds
        if not seconds or second > seconds[-1].second:
            start = second if not seconds else max(seconds[-1].second + 1, second - self.window + 1)
            for s in range(start, second + 1):
                seconds.append(Second(s))
            return seconds[-1]
        offset = seconds[-1].second - second
        return seconds[-1 - offset] if offset < len(seconds) else None

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
