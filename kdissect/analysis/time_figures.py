"""Traffic over time (:func:`kdissect.analysis.timeseries.time_series`'s table) as a mergeable value
fed by the run's pieces of ``exchanges``, in bounded memory whatever the capture's span.

Bins are ``2**k`` seconds wide and aligned on multiples of their width since the epoch, so bins
of two pieces always nest: a piece with narrower bins is folded into the wider ones by integer
division. ``k`` is the smallest that keeps the span within :data:`BIN_LIMIT` bins; it only grows
(when a piece widens the span) and comes out the same however the run was split, since each
piece's ``k`` is the smallest for a part of the whole. Per bin: requests, bytes each way, the
latencies (:class:`~kdissect.analysis.distribution.Latencies`) and the exchanges that failed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kdissect.analysis.distribution import Latencies
from kdissect.analysis.expected import is_expected
from kdissect.analysis.latency import of_latencies
from kdissect.analysis.slot_state import SlotState
from kdissect.analysis.timeseries import TIMESERIES_COLUMNS
from kdissect.tables.columns import cells
from kdissect.tables.sink import Columns

if TYPE_CHECKING:
    import pandas as pd

BIN_LIMIT = 600  # bins at most: the step widens (doubling) past that
NS = 1_000_000_000


class Bin(SlotState):
    __slots__ = ("failed", "latencies", "request_bytes", "requests", "response_bytes")

    def __init__(self) -> None:
        self.requests = self.request_bytes = self.response_bytes = self.failed = 0
        self.latencies = Latencies()

    def merge(self, other: Bin) -> None:
        self.requests += other.requests
        self.request_bytes += other.request_bytes
        self.response_bytes += other.response_bytes
        self.failed += other.failed
        self.latencies.merge(other.latencies)


class TimeFigures:
    """Exchanges per time bin of ``2**width`` seconds (see the module's doc)."""

    def __init__(self) -> None:
        self.width = 0  # log2 of the bin width in seconds
        self.bins: dict[int, Bin] = {}  # bin number (start // width) -> its figures

    @property
    def step_s(self) -> int:
        return 1 << self.width

    def add_exchanges(self, ex: Columns) -> None:
        """A piece's exchanges, binned at the present width, then merged in (widening if its span asks)."""
        names = ("request_ts", "response_ts", "request_bytes", "response_bytes", "latency_ms", "status", "api_name",
                 "error_name")  # fmt: skip
        piece = TimeFigures()
        piece.width = self.width
        latencies: dict[int, list[float]] = {}
        for request_ts, response_ts, request_bytes, response_bytes, latency, status, api, error in zip(
                *(cells(ex[c]) for c in names), strict=True):  # fmt: skip
            when = request_ts if request_ts is not None else response_ts
            if when is None:
                continue
            number = (when // NS) >> self.width
            got = piece.bins.get(number)
            if got is None:
                got = piece.bins[number] = Bin()
                latencies[number] = []
            got.requests += 1
            got.request_bytes += request_bytes or 0
            got.response_bytes += response_bytes or 0
            if isinstance(latency, int | float) and latency == latency:
                latencies[number].append(latency)
            if status == "error" and not is_expected(api, error):
                got.failed += 1
        for number, values in latencies.items():
            piece.bins[number].latencies.add_many(values)
        piece._bound()
        self.merge(piece)

    def _bound(self) -> None:
        """Widen the bins until the span fits in :data:`BIN_LIMIT` of them."""
        while self.bins and max(self.bins) - min(self.bins) + 1 > BIN_LIMIT:
            self._widen(self.width + 1)

    def _widen(self, width: int) -> None:
        shift, self.width = width - self.width, width
        bins, self.bins = self.bins, {}
        for number, figures in sorted(bins.items()):
            wider = self.bins.get(number >> shift)
            if wider is None:
                self.bins[number >> shift] = figures
            else:
                wider.merge(figures)

    def merge(self, other: TimeFigures) -> None:
        theirs = other.bins
        if other.width < self.width:
            copy = TimeFigures()
            copy.width, copy.bins = other.width, {n: _copy(b) for n, b in other.bins.items()}
            copy._widen(self.width)
            theirs = copy.bins
        elif other.width > self.width:
            self._widen(other.width)
        for number, figures in theirs.items():
            mine = self.bins.get(number)
            if mine is None:
                self.bins[number] = figures if theirs is not other.bins else _copy(figures)
            else:
                mine.merge(figures)
        self._bound()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TimeFigures) and (self.width, self.bins) == (other.width, other.bins)

    def table(self) -> pd.DataFrame:
        """Per bin with exchanges, oldest first, in :data:`~kdissect.analysis.timeseries.TIMESERIES_COLUMNS`."""
        import pandas as pd

        step = self.step_s
        rows = []
        for number, b in sorted(self.bins.items()):
            p = of_latencies(b.latencies)
            rows.append((number * step * NS, b.requests, b.requests / step, b.request_bytes, b.response_bytes,
                         p.p50, p.p99, b.failed, b.failed / b.requests))  # fmt: skip
        table = pd.DataFrame(rows, columns=TIMESERIES_COLUMNS)
        table["time"] = pd.to_datetime(table["time"].astype("int64"), unit="ns", utc=True)
        return table


def _copy(b: Bin) -> Bin:
    out = Bin()
    out.merge(b)
    return out
