"""Consumer groups (:mod:`.groups`) as mergeable figures, fed the ``group_events`` table piece by
piece, so the report keeps no group event rows (a consumer's heartbeats grow with the capture).

What is kept, each bounded and chosen whatever the order pieces come in:

- the first :data:`LISTED` events in time order, for the timeline listing (``total``: all events);
- the first :data:`MEMBERSHIP_LIMIT` JoinGroup, SyncGroup and ConsumerGroupHeartbeat events in time
  order: rebalances and member epochs are :mod:`.groups`' own functions over them, exact while a
  capture has no more;
- per (group, API, error) the answers with an error code (:class:`~.exchange_figures.Tally`);
- per client id the groups it joined or committed for (at most :data:`GROUPS_NAMED` each);
- the group of the first :data:`COMMITS_NAMED` OffsetCommit requests (the committed offsets listed
  name their group);
- per (group, API, outcome) the request times of the timeline plot, one per time step (the step
  doubles as often as it takes to keep at most :data:`TICKS`).

Keys chosen by clients (groups, client ids) are bounded by :class:`~.bounded.Groups`. Time order is
(request time, else answer time; request time; answer time; connection; correlation id), the order
:func:`.groups.timeline` gives the tables in capture order; a Spark task hands its rows over with
each connection's place in capture order (:mod:`.placed`), settled to connection ids on the driver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from kdissect.analysis import groups
from kdissect.analysis.bounded import KEY_LIMIT, OTHER, Groups
from kdissect.analysis.exchange_figures import LISTED, Tally, ordered
from kdissect.analysis.expected import is_expected
from kdissect.analysis.listing import Listing, smallest
from kdissect.analysis.slot_state import SlotState
from kdissect.tables.columns import TABLES, cells
from kdissect.tables.sink import Columns

if TYPE_CHECKING:
    import pandas as pd

MEMBERSHIP = ("JoinGroup", "SyncGroup", "ConsumerGroupHeartbeat")  # what rebalances and member epochs read
MEMBERSHIP_LIMIT = 10_000  # membership events kept (the first in time order)
JOINING = ("JoinGroup", "ConsumerGroupHeartbeat", "OffsetCommit")  # what names a client's groups
GROUPS_NAMED = 100  # groups named per client id (the smallest)
COMMITS_NAMED = 1_000  # OffsetCommit requests whose group is kept (the first in time order)
TICKS = 256  # plot points per (group, API, outcome)
OUTCOMES = ("ok", "error", "normal step")
_FIRST_STEP_NS = 1 << 20  # about a millisecond
NAMES = tuple(name for name, _ in TABLES["group_events"])
_AT = {name: at for at, name in enumerate(NAMES)}


class Named(SlotState):
    """The groups one client id joined: the :data:`GROUPS_NAMED` smallest."""

    __slots__ = ("names",)

    def __init__(self) -> None:
        self.names: set[str] = set()

    def add(self, names: Iterable[str]) -> None:
        self.names.update(names)
        self.names = smallest(self.names, GROUPS_NAMED)

    def merge(self, other: Named) -> None:
        self.add(other.names)


class Ticks(SlotState):
    """Request times, the first of each time step; the step doubles while there are more than
    :data:`TICKS` (so any split keeps the same times)."""

    __slots__ = ("step", "times")

    def __init__(self) -> None:
        self.step = _FIRST_STEP_NS
        self.times: dict[int, int] = {}  # step -> its first time

    def add(self, ts: int) -> None:
        at = ts // self.step
        if at not in self.times or ts < self.times[at]:
            self.times[at] = ts
        while len(self.times) > TICKS:
            self._widen(self.step * 2)

    def _widen(self, step: int) -> None:
        old, self.times, self.step = self.times, {}, step
        for ts in old.values():
            self.add(ts)

    def merge(self, other: Ticks) -> None:
        if other.step > self.step:
            self._widen(other.step)
        for ts in other.times.values():
            self.add(ts)


def _moment(row: tuple) -> int | None:
    request, response = row[_AT["request_ts"]], row[_AT["response_ts"]]
    return request if request is not None else response


def _order(row: tuple) -> tuple:
    return ordered(_moment(row), row[_AT["request_ts"]], row[_AT["response_ts"]], row[_AT["connection_id"]],
                   row[_AT["correlation_id"]])  # fmt: skip


class GroupFigures:
    """The report's consumer group figures (see the module's docstring)."""

    def __init__(self, limit: int = KEY_LIMIT) -> None:
        self.first = Listing(LISTED)
        self.membership = Listing(MEMBERSHIP_LIMIT)
        self.errors = Groups(Tally, limit)  # by (group, API, error name)
        self.joined = Groups(Named, limit)  # by (client id,)
        self.commits = Listing(COMMITS_NAMED)  # (connection, correlation id, group) of OffsetCommit requests
        self.ticks = Groups(Ticks, limit)  # by (group, API, outcome)

    def add(self, columns: Columns) -> None:
        """A piece of ``group_events`` (a Spark task's connections as their places)."""
        for row in zip(*(cells(columns[name]) for name in NAMES), strict=True):
            self._add(row)

    def _add(self, row: tuple) -> None:
        order = _order(row)
        api, group, error = row[_AT["api_name"]], row[_AT["group_id"]], row[_AT["error_name"]]
        self.first.add(order, row)
        if api in MEMBERSHIP:
            self.membership.add(order, row)
        failed = error is not None and error != "NONE"
        expected = failed and is_expected(api, error)
        if failed:
            self.errors.get((group, api, error)).add(order, flagged=expected)
        client = row[_AT["client_id"]]
        if api in JOINING and client is not None and group is not None:
            self.joined.get((str(client),)).add([str(group)])
        if api == "OffsetCommit":
            self.commits.add(order, (row[_AT["connection_id"]], row[_AT["correlation_id"]], group))
        ts = _moment(row)
        if ts is not None:
            self.ticks.get((group, api, OUTCOMES[failed + expected])).add(ts)

    def merge(self, other: GroupFigures) -> None:
        for name in ("first", "membership", "errors", "joined", "commits", "ticks"):
            getattr(self, name).merge(getattr(other, name))

    def __eq__(self, other: object) -> bool:
        names = ("first", "membership", "errors", "joined", "commits", "ticks")
        return isinstance(other, GroupFigures) and all(getattr(self, n) == getattr(other, n) for n in names)

    def settle(self, connection: Callable[[object], int]) -> None:
        """A Spark driver's figures, merged from tasks that named connections by place: their ids."""
        at = _AT["connection_id"]

        def row_of(row: tuple) -> tuple:
            return (*row[:at], None if row[at] is None else connection(row[at]), *row[at + 1:])

        self.first.map_rows(row_of)
        self.membership.map_rows(row_of)
        self.commits.map_rows(lambda row: (None if row[0] is None else connection(row[0]), *row[1:]))

    # -- the report's tables ----------------------------------------------------------------
    def timeline(self) -> pd.DataFrame:
        """:func:`.groups.timeline`'s first :data:`LISTED` rows (``first.total`` in all)."""
        return groups.timeline({"group_events": _frame(self.first.rows())})

    def rebalances(self) -> pd.DataFrame:
        """:func:`.groups.rebalances` of the membership events kept."""
        return groups.rebalances({"group_events": _frame(self.membership.rows())})

    def member_epochs(self) -> pd.DataFrame:
        """:func:`.groups.member_epochs` of the membership events kept."""
        return groups.member_epochs({"group_events": _frame(self.membership.rows())})

    def group_errors(self) -> pd.DataFrame:
        """:func:`.groups.group_errors`: per group, API and error, the answers and whether all were normal steps."""
        import pandas as pd

        columns = ["group_id", "api_name", "error_name", "count", "expected"]
        items = sorted(self.errors.groups.items(), key=lambda item: ordered(*(None if v is None else str(v)
                                                                             for v in item[0])))  # fmt: skip
        rows = [(*key, t.count, t.flagged) for key, t in items]
        if self.errors.other.count:
            rows.append((OTHER, None, None, self.errors.other.count, self.errors.other.flagged))
        table = pd.DataFrame(rows, columns=columns)
        return table.sort_values(["expected", "count"], ascending=[True, False], kind="stable", ignore_index=True)

    def members_by_client(self) -> dict[str, str]:
        """:func:`.groups.members_by_client`."""
        return {client: ",".join(sorted(named.names)) for (client,), named in self.joined.groups.items()}

    def commit_groups(self) -> dict[tuple, str]:
        """(connection id, correlation id) -> group of the first OffsetCommit requests."""
        return {(conn, corr): group for conn, corr, group in self.commits.rows()}

    def ticks_frame(self) -> pd.DataFrame:
        """The timeline plot's points: per group, API and outcome, the first request of each time step."""
        import pandas as pd

        rows = [(group, api, ts, outcome) for (group, api, outcome), ticks in self.ticks.groups.items()
                for ts in sorted(ticks.times.values())]  # fmt: skip
        frame = pd.DataFrame(rows, columns=["group_id", "api_name", "request_ts", "outcome"])
        frame["request_ts"] = pd.to_datetime(frame["request_ts"], unit="ns", utc=True)
        return frame.sort_values("request_ts", kind="stable", ignore_index=True)



def _frame(rows: list[tuple]) -> pd.DataFrame:
    from kdissect.tables.frames import taken_dataframe

    return taken_dataframe("group_events", {name: [row[at] for row in rows] for at, name in enumerate(NAMES)})
