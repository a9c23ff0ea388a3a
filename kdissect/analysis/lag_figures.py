"""Consumer lag (:mod:`kdissect.analysis.lag`) as mergeable figures: per (client id, topic,
partition) the fetches seen, the largest and the last lag, and a few points over time for the plot;
the first committed offsets with the log end seen by then. Fed one Fetch or OffsetCommit partition
row at a time by :class:`~kdissect.analysis.exchange_figures.ExchangeFigures`.

Bounds: at most :data:`~kdissect.analysis.bounded.KEY_LIMIT` (client, topic, partition) keys; per
key at most :data:`POINTS` points for the plot, the last of each time step (the step doubles, as
traffic over time's does, so any split gives the same points); the first :data:`LISTED` commits.
A commit's log end is the largest high watermark seen for its partition at or before it (a log end
only grows), from the high watermarks seen up to the :data:`LISTED`-th commit's time.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import TYPE_CHECKING

from kdissect.analysis.bounded import KEY_LIMIT, Groups
from kdissect.analysis.listing import Listing
from kdissect.analysis.placed import renamed
from kdissect.analysis.slot_state import SlotState

if TYPE_CHECKING:
    import pandas as pd

POINTS = 64  # plot points kept per (client, topic, partition)
LISTED = 200  # commits listed
_FIRST_STEP_NS = 1 << 20  # about a millisecond


class PartitionLag(SlotState):
    """The lag of one client on one partition."""

    __slots__ = ("fetches", "largest", "last", "points", "step")

    def __init__(self) -> None:
        self.fetches, self.largest = 0, 0
        self.last: tuple | None = None  # (order, lag, time)
        self.step = _FIRST_STEP_NS
        self.points: dict[int, tuple] = {}  # time step -> (order, time, lag) of its last fetch

    def add(self, order: tuple, ts: int | None, lag: int) -> None:
        self.fetches += 1
        self.largest = max(self.largest, lag)
        if self.last is None or order > self.last[0]:
            self.last = (order, lag, ts)
        if ts is not None:
            self._point(ts // self.step, (order, ts, lag))

    def _point(self, step: int, point: tuple) -> None:
        if step not in self.points or point > self.points[step]:
            self.points[step] = point
        while len(self.points) > POINTS:
            self._widen()

    def _widen(self, step: int | None = None) -> None:
        old, self.points = self.points, {}
        self.step = step if step is not None else self.step * 2
        for point in old.values():
            self._point(point[1] // self.step, point)

    def merge(self, other: PartitionLag) -> None:
        self.fetches += other.fetches
        self.largest = max(self.largest, other.largest)
        if other.last is not None and (self.last is None or other.last[0] > self.last[0]):
            self.last = other.last
        if other.step > self.step:
            self._widen(other.step)
        for point in other.points.values():
            self._point(point[1] // self.step, point)


class LogEnds:
    """Per (topic, partition) the high watermarks seen (time, watermark), only those that raised it."""

    def __init__(self) -> None:
        self.seen: dict[tuple, list[tuple[int, int]]] = {}

    def add(self, key: tuple, ts: int, watermark: int) -> None:
        steps = self.seen.setdefault(key, [])
        at = bisect.bisect_right(steps, (ts, watermark))
        if at and steps[at - 1][1] >= watermark:
            return  # an earlier one was as high
        steps.insert(at, (ts, watermark))
        while at + 1 < len(steps) and steps[at + 1][1] <= watermark:
            del steps[at + 1]  # later ones no higher

    def before(self, key: tuple, ts: int) -> int | None:
        steps = self.seen.get(key, [])
        at = bisect.bisect_right(steps, (ts, float("inf")))
        return steps[at - 1][1] if at else None

    def prune(self, until: int) -> None:
        """Forget what was seen after ``until`` but the first after it (no commit listed comes later)."""
        for steps in self.seen.values():
            at = bisect.bisect_right(steps, (until, float("inf")))
            del steps[at:]

    def merge(self, other: LogEnds) -> None:
        for key, steps in other.seen.items():
            for ts, watermark in steps:
                self.add(key, ts, watermark)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LogEnds) and self.seen == other.seen


class LagFigures:
    """Fetch lag per (client id, topic, partition) and the first commits with their log end."""

    def __init__(self, limit: int = KEY_LIMIT) -> None:
        self.lag = Groups(PartitionLag, limit)
        self.commits = Listing(LISTED)  # (order, (ts, conn, corr, topic, partition, offset))
        self.ends = LogEnds()
        self._until: int | None = None  # the last listed commit's time, once the listing is full

    def add_fetch(self, order: tuple, ts: int | None, client: object, topic: object, partition: object,
                  fetch_offset: int, watermark: int) -> None:
        self.lag.get((client, topic, partition)).add(order, ts, max(watermark - fetch_offset, 0))

    def add_watermark(self, ts: int | None, topic: object, partition: object, watermark: int) -> None:
        if ts is None or topic is None or partition is None:
            return
        if self._until is None or ts <= self._until:  # no commit listed is later
            self.ends.add((topic, partition), ts, watermark)

    def add_commit(self, order: tuple, row: tuple) -> None:
        self.commits.add(order, row)
        self._prune()

    def _prune(self) -> None:
        rows = self.commits.rows()
        if len(rows) == LISTED and rows[-1][0] != self._until:
            self._until = rows[-1][0]
            self.ends.prune(self._until)

    def settle(self, connection: Callable[[tuple[int, int]], int], topic: Callable[[object], object]) -> None:
        """A Spark driver's figures (merged from tasks) with final connection ids and named topics."""
        self.lag = renamed(self.lag, lambda key: (key[0], topic(key[1]), key[2]))
        self.commits.map_rows(lambda row: (row[0], connection(row[1]), row[2], topic(row[3]), *row[4:]))
        seen, self.ends.seen = self.ends.seen, {}
        for (name, partition), steps in seen.items():
            for ts, watermark in steps:
                self.ends.add((topic(name), partition), ts, watermark)

    def merge(self, other: LagFigures) -> None:
        self.lag.merge(other.lag)
        self.commits.merge(other.commits)
        self.ends.merge(other.ends)
        self._prune()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LagFigures) and (self.lag, self.commits, self.ends) == (
            other.lag, other.commits, other.ends)

    def fetch_lag(self, groups: dict[str, str]) -> pd.DataFrame:
        """The plot's points: :func:`kdissect.analysis.lag.fetch_lag`'s rows, the last of each step."""
        import pandas as pd

        rows = [(ts, groups.get(str(client)), client, topic, partition, lag)
                for (client, topic, partition), p in self.lag.groups.items()
                for _, ts, lag in sorted(p.points.values())]  # fmt: skip
        frame = pd.DataFrame(rows, columns=["request_ts", "group_id", "client_id", "topic", "partition", "lag"])
        frame["request_ts"] = pd.to_datetime(frame["request_ts"], unit="ns", utc=True)
        return frame.sort_values("request_ts", kind="stable", ignore_index=True)

    def lag_summary(self, groups: dict[str, str]) -> pd.DataFrame:
        """:func:`kdissect.analysis.lag.lag_summary`."""
        import pandas as pd

        rows = []
        for (client, topic, partition), p in sorted(self.lag.groups.items(), key=lambda item: tuple(map(str, item[0]))):
            _, last, seen = p.last  # type: ignore[misc]
            rows.append((groups.get(str(client)), client, topic, partition, p.fetches, last, p.largest, seen))
        columns = ["group_id", "client_id", "topic", "partition", "fetches", "last_lag", "max_lag", "last_seen"]
        frame = pd.DataFrame(rows, columns=columns)
        frame["last_seen"] = pd.to_datetime(frame["last_seen"], unit="ns", utc=True)
        return frame.sort_values(["max_lag", "last_lag"], ascending=False, kind="stable", ignore_index=True)

    def commit_lag(self, groups: dict[tuple, str]) -> tuple[pd.DataFrame, int]:
        """:func:`kdissect.analysis.lag.commit_lag`'s first rows, and how many there are."""
        import pandas as pd

        rows = []
        for ts, conn, corr, topic, partition, offset in self.commits.rows():
            end = self.ends.before((topic, partition), ts)
            rows.append((ts, groups.get((conn, corr)), topic, partition, offset, end,
                         None if end is None else max(end - offset, 0)))
        columns = ["request_ts", "group_id", "topic", "partition", "committed_offset", "log_end", "lag"]
        frame = pd.DataFrame(rows, columns=columns)
        frame["request_ts"] = pd.to_datetime(frame["request_ts"], unit="ns", utc=True)
        return frame, self.commits.total
