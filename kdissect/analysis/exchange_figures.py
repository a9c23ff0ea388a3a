"""The report's figures that need an exchange joined with its partition, parameter and error rows
(latency by topic, Kafka-aware latency, errors, throttling, requests without an answer), as one
mergeable value fed by the run's pieces, so the report keeps no per-exchange rows.

The join: the table sink spills the tables of :data:`~kdissect.tables.sink.JOINED` together (a
piece of each holds the rows of the same exchanges, exchanges first), so the pieces that arrive
after an exchanges piece and before the next one hold all its exchanges' rows. An exchanges piece
is joined when the next one arrives, or when the figures are read (:meth:`ExchangeFigures.flush`).
Its rows are found by the exchange's identity in the tables, (connection id, correlation id).

What is kept does not grow with the exchanges: per key a count, a sum or a
:class:`~kdissect.analysis.distribution.Latencies`, at most :data:`~kdissect.analysis.bounded.KEY_LIMIT`
keys per table (:class:`~kdissect.analysis.bounded.Groups`), and listings of their first rows in
one order (:class:`~kdissect.analysis.listing.Listing`), so any split merges to the same figures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from kdissect.analysis.bounded import KEY_LIMIT, OTHER, Groups
from kdissect.analysis.distribution import Latencies
from kdissect.analysis.errors import ERROR_DIMENSIONS, NO_ANSWER
from kdissect.analysis.expected import OVERRUN_TOLERANCE_MS, is_expected
from kdissect.analysis.lag_figures import LagFigures
from kdissect.analysis.latency import DIMENSIONS, PERCENTILE_COLUMNS, of_latencies
from kdissect.analysis.listing import Listing, ordered, smallest
from kdissect.analysis.placed import renamed, topic_key
from kdissect.analysis.slot_state import SlotState
from kdissect.tables.columns import cells
from kdissect.tables.sink import JOINED, Columns

if TYPE_CHECKING:
    import pandas as pd

LISTED = 200  # rows kept of a listing (the report shows as many: report.document.LISTING_ROWS)
SLOWEST = 25  # the slowest requests listed
CLIENT_IDS_NAMED = 100  # client ids named per group of requests without an answer (the smallest)
WAITED_FULL = 0.9  # a Fetch held this share of its max wait waited the whole of it

_EXCHANGE = ("connection_id", "correlation_id", "api_name", "api_version", "client_id", "client_ip", "broker_ip",
             "broker_port", "request_ts", "response_ts", "latency_ms", "error_name", "status", "throttle_time_ms",
             "warnings")  # fmt: skip
_PARAMS = ("max_wait_ms", "acks", "session_timeout_ms", "rebalance_timeout_ms")
_PARTITION = ("topic", "partition", "api_name", "response_records_bytes", "request_ts", "fetch_offset",
              "high_watermark", "committed_offset", "request_records_bytes", "_topic_id")
_ERROR = ("response_ts", "connection_id", "correlation_id", "api_key", "path", "error_code", "api_name",
          "error_name", "retriable", "topic", "partition", "group", "error_message", "_topic_id")  # fmt: skip
_BROKER = "broker"  # the dimension named from a broker address (ip, port) after the run


def _number(value: object) -> float | None:
    return value if isinstance(value, int | float) and value == value else None  # NaN: null


class FetchWaits(SlotState):
    """Fetches of one client to one broker: how many, returned data, waited their max wait, overran it."""

    __slots__ = ("count", "latencies", "max_wait", "overran", "returned", "waited_full")

    def __init__(self) -> None:
        self.count = self.returned = self.waited_full = self.overran = 0
        self.max_wait: int | None = None
        self.latencies = Latencies()

    def add(self, latency: float, returned: bool, max_wait: int | None, ratio: float | None, overran: bool) -> None:
        self.count += 1
        self.latencies.add(latency)
        self.returned += returned
        self.waited_full += ratio is not None and ratio >= WAITED_FULL
        self.overran += overran
        self._wait(max_wait)

    def _wait(self, max_wait: int | None) -> None:
        if max_wait is not None:
            self.max_wait = max_wait if self.max_wait is None else max(self.max_wait, max_wait)

    def merge(self, other: FetchWaits) -> None:
        self.count += other.count
        self.latencies.merge(other.latencies)
        self.returned += other.returned
        self.waited_full += other.waited_full
        self.overran += other.overran
        self._wait(other.max_wait)



class Tally(SlotState):
    """A count, a sum and a max of some values, the first of some rows and the first non-null note
    among them (firsts by an order key, so they do not depend on arrival order), and whether every
    row was flagged."""

    __slots__ = ("count", "first", "flagged", "largest", "note", "total")

    def __init__(self) -> None:
        self.count, self.total, self.largest = 0, 0, None
        self.flagged = True
        self.first: tuple | None = None  # (order key,) of the first row
        self.note: tuple | None = None  # (order key, note) of the first row with a note

    def add(self, order: tuple, value: int = 0, note: object = None, flagged: bool = True) -> None:
        self.count += 1
        self.total += value
        self.largest = value if self.largest is None else max(self.largest, value)
        self.flagged = self.flagged and flagged
        self.first = (order,) if self.first is None else min(self.first, (order,))
        if note is not None and (self.note is None or order < self.note[0]):
            self.note = (order, note)

    def merge(self, other: Tally) -> None:
        self.count += other.count
        self.total += other.total
        if other.largest is not None:
            self.largest = other.largest if self.largest is None else max(self.largest, other.largest)
        self.flagged = self.flagged and other.flagged
        for name in ("first", "note"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if theirs is not None and (mine is None or theirs[0] < mine[0]):
                setattr(self, name, theirs)


class Lost(Tally):
    """Requests without a usable answer of one API and status, with the client ids that sent them
    (the :data:`CLIENT_IDS_NAMED` smallest)."""

    __slots__ = ("clients",)

    def __init__(self) -> None:
        super().__init__()
        self.clients: set[str] = set()

    def name(self, clients: Iterable[str]) -> None:
        self.clients.update(clients)
        self.clients = smallest(self.clients, CLIENT_IDS_NAMED)

    def merge(self, other: Tally) -> None:
        super().merge(other)
        if isinstance(other, Lost):
            self.name(other.clients)


class ExchangeFigures:
    """The figures of exchanges joined with their partition, parameter and error rows."""

    def __init__(self, limit: int = KEY_LIMIT) -> None:
        self._pending: dict[str, list[Columns]] = {}
        self.topic = Groups(Latencies, limit)
        self.partition = Groups(Latencies, limit)
        self.fetch = Groups(FetchWaits, limit)  # by (client id, broker ip, broker port)
        self.acks = Groups(Latencies, limit)
        self.throttled = Groups(Tally, limit)  # by (client id, API)
        self.lost = Groups(Lost, limit)  # by (API, status)
        self.errors = {dimension: Groups(Tally, limit) for dimension in ERROR_DIMENSIONS}
        self.joins = Listing(LISTED)
        self.slowest = Listing(SLOWEST)
        self._lag = LagFigures(limit)
        # Request times for the records kept (the transactions section's): those of the exchanges
        # with record bytes whose records may still come, and those found for the records' keys.
        self._recent: dict[tuple, int | None] = {}
        self._waiting: set[tuple] = set()
        self.record_times: dict[tuple, int | None] = {}
        # A Spark task's connection ids are its own: their places in capture order (see number_connections).
        self.places: list[tuple[int, int]] | None = None
        self._error_codes = [0, 0]  # error codes in responses: (not normal steps, normal steps)

    def add(self, name: str, columns: Columns) -> None:
        if name not in JOINED:
            return
        if name == "exchanges":
            self.flush()
        self._pending.setdefault(name, []).append(columns)

    def flush(self) -> None:
        """Join the exchanges piece waiting with the rows that came after it."""
        pending, self._pending = self._pending, {}
        params = {key: row for key, row in _keyed(pending.get("request_params", []), _PARAMS)}
        parts: dict[tuple, list[tuple]] = {}
        carrying: set[tuple] = set()  # exchanges with record bytes: the records table may have their rows
        for key, (topic, *row, produced, topic_id) in _keyed(pending.get("partitions", []), _PARTITION):
            parts.setdefault(key, []).append((topic_key(topic, topic_id), *row))
            if produced or row[2]:
                carrying.add(key)
        context: dict[tuple, tuple] = {}
        for piece in pending.get("exchanges", []):
            for row in _rows(piece, _EXCHANGE):
                context.setdefault((row[0], row[1]), (row[4], row[5], row[6], row[7]))
                if (row[0], row[1]) in carrying:
                    self._recall((row[0], row[1]), row[8])
                self._add_exchange(row, params.get((row[0], row[1])), parts.get((row[0], row[1]), ()))
        for piece in pending.get("errors", []):
            for *row, topic_id in _rows(piece, _ERROR):
                row[9] = topic_key(row[9], topic_id)
                self._add_error(tuple(row), context.get((row[1], row[2]), (None, None, None, None)))

    def _recall(self, key: tuple, request_ts: int | None) -> None:
        self._recent.setdefault(key, request_ts)
        if key in self._waiting:
            self._waiting.discard(key)
            self.record_times[self._placed(key)] = self._recent[key]

    @property
    def record_times_held(self) -> int:
        """Records' exchanges whose request times are held or awaited."""
        return len(self.record_times) + len(self._waiting)

    def keep_record_times(self, kept: set[tuple]) -> None:
        """Forget the request times of records no longer kept (a bounded journal dropped them):
        ``kept``, the (connection's place in a Spark task, else id; correlation id) of those kept."""
        self.record_times = {key: ts for key, ts in self.record_times.items() if key in kept}
        self._waiting = {key for key in self._waiting if self._placed(key) in kept}

    def records_seen(self, kept: Iterable[tuple], last: tuple | None) -> None:
        """The keys of records kept (their request times are found now or when their exchange
        comes), and the last record's key of the piece: records come in exchange order, so the
        exchanges before it will have no more records."""
        for key in kept:
            if self._placed(key) not in self.record_times:
                if key in self._recent:
                    self.record_times[self._placed(key)] = self._recent[key]
                else:
                    self._waiting.add(key)
        if last is None:
            return
        if last not in self._recent:
            self._recent.clear()  # its exchange is not joined yet: every one joined came before it
            return
        for key in list(self._recent):
            if key == last:
                break
            del self._recent[key]

    def _placed(self, key: tuple) -> tuple:
        """A (connection id, correlation id) with the connection's place in capture order."""
        conn, corr = key
        return (conn, corr) if self.places is None or conn is None else (self.places[conn], corr)

    def _add_exchange(self, row: tuple, params: tuple | None, parts: Iterable[tuple]) -> None:
        (conn, corr, api, version, client, client_ip, broker_ip, broker_port, request_ts, response_ts, latency,
         error, status, throttle, warnings) = row  # fmt: skip
        conn, _ = self._placed((conn, corr))
        latency = _number(latency)
        order = ordered(request_ts, response_ts, conn, corr)
        topics = {(t, p) for t, p, *_ in parts if t is not None}
        if latency is not None:
            for topic in {t for t, _ in topics}:
                self.topic.get((topic,)).add(latency)
            for topic_partition in topics:
                self.partition.get(topic_partition).add(latency)
        max_wait, acks, session, rebalance = params if params is not None else (None,) * 4
        bound = max_wait if api == "Fetch" else (rebalance if rebalance is not None else session) \
            if api == "JoinGroup" else None  # JoinGroup v0 has no rebalance timeout: the session's bounded it
        expected = latency is not None and bound is not None and latency <= bound + OVERRUN_TOLERANCE_MS
        if api == "Fetch" and latency is not None:
            fetched = [b for _, _, a, b, *_ in parts if a == "Fetch" and b is not None]
            ratio = latency / bound if bound is not None and bound > 0 else None
            self.fetch.get((client, broker_ip, broker_port)).add(
                latency, sum(fetched) > 0, max_wait, ratio, not expected and bound is not None)
        elif api == "Produce" and latency is not None:
            self.acks.get((acks,)).add(latency)
        elif api == "JoinGroup":
            self.joins.add(order, (request_ts, client, latency, rebalance, error, expected))
        if latency is not None and not expected:
            named = tuple(sorted({t for t, _ in topics}, key=str))
            self.slowest.add((-latency, order), (request_ts, api, version, client, client_ip, (broker_ip, broker_port),
                                                 named, latency, bound, error, status, conn, corr))  # fmt: skip
        for topic, partition, part_api, _, ts, fetch_offset, watermark, committed in parts:
            self._add_lag(order, (conn, corr, client, response_ts), part_api, topic, partition,
                          ts if ts is not None else response_ts, fetch_offset, watermark, committed)
        if throttle is not None and throttle > 0 and client is not None and api is not None:
            self.throttled.get((client, api)).add(order, throttle)
        if status in NO_ANSWER:
            lost = self.lost.get((api, status))
            lost.add(order, note=warnings)
            lost.name([str(client)] if client is not None else [])

    def _add_lag(self, order: tuple, exchange: tuple, api: object, topic: object, partition: object,
                 ts: int | None, fetch_offset: int | None, watermark: int | None, committed: int | None) -> None:
        """A partition row's lag figures, placed at its request's time (its answer's, where the request
        was not captured)."""
        conn, corr, client, _ = exchange
        if api == "Fetch" and fetch_offset is not None and watermark is not None:
            self._lag.add_fetch(ordered(ts, conn, corr), ts, client, topic, partition, fetch_offset, watermark)
        if ts is None or topic is None or partition is None:
            return
        if watermark is not None:
            self._lag.add_watermark(ts, topic, partition, watermark)
        if api == "OffsetCommit" and committed is not None:
            self._lag.add_commit(ordered(ts, conn, corr, str(topic), partition),
                                (ts, conn, corr, topic, partition, committed))

    def _add_error(self, row: tuple, context: tuple) -> None:
        ts, conn, corr, api_key, path, code, api, name, retriable, topic, partition, group, message = row
        conn, _ = self._placed((conn, corr))
        client, client_ip, broker_ip, broker_port = context
        order = ordered(ts, conn, corr, api_key, path, code)
        values = {"api_name": api, "error_code": code, "error_name": name, "retriable": retriable, "path": path,
                  "client_id": client, "client_ip": client_ip, _BROKER: (broker_ip, broker_port), "topic": topic,
                  "partition": partition, "group": group}  # fmt: skip
        expected = is_expected(api, name)
        self._error_codes[expected] += 1
        for dimension, by in ERROR_DIMENSIONS.items():
            if dimension in ("topic", "group") and values[by[0]] is None:
                continue
            self.errors[dimension].get(tuple(values[c] for c in by)).add(order, note=message, flagged=expected)

    def merge(self, other: ExchangeFigures) -> None:
        self.flush()
        other.flush()
        for name in ("topic", "partition", "fetch", "acks", "throttled", "lost", "joins", "slowest", "_lag"):
            getattr(self, name).merge(getattr(other, name))
        self._error_codes = [a + b for a, b in zip(self._error_codes, other._error_codes, strict=True)]
        for key, ts in other.record_times.items():
            self.record_times.setdefault(key, ts)
        for dimension, groups in other.errors.items():
            self.errors[dimension].merge(groups)

    def _state(self) -> tuple:
        self.flush()
        return (self.topic, self.partition, self.fetch, self.acks, self.throttled, self.lost, self.errors,
                self.joins, self.slowest, self._lag, self._error_codes, self.record_times)  # fmt: skip

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExchangeFigures) and self._state() == other._state()

    def __getstate__(self) -> dict:
        self.flush()
        return {**self.__dict__, "places": None}  # (the task's own list, not its figures)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def settle(self, connection: Callable[[tuple[int, int]], int], topic: Callable[[object], object]) -> None:
        """A Spark driver's figures (merged from tasks) with final connection ids and named topics."""
        self.flush()
        self.topic = renamed(self.topic, lambda key: _named(topic, key, 0, drop=True))
        self.partition = renamed(self.partition, lambda key: _named(topic, key, 0, drop=True))
        self.errors["topic"] = renamed(self.errors["topic"], lambda key: _named(topic, key, 0, drop=True))
        def named(topics: tuple) -> tuple:
            return tuple(sorted({n for n in map(topic, topics) if n is not None}, key=str))

        self.slowest.map_rows(lambda row: (*row[:6], named(row[6]), *row[7:11], connection(row[11]), row[12]))
        self.record_times = {(connection(conn), corr): ts for (conn, corr), ts in self.record_times.items()}
        self._lag.settle(connection, topic)

    @property
    def error_codes(self) -> tuple[int, int]:
        """Error codes in responses: (not normal protocol steps, normal steps)."""
        self.flush()
        return self._error_codes[0], self._error_codes[1]

    @property
    def lag(self) -> LagFigures:
        self.flush()
        return self._lag

    # -- the report's tables ----------------------------------------------------------------
    def topic_latency(self, dimension: str) -> pd.DataFrame:
        """:func:`kdissect.analysis.latency.latency_by` of ``topic`` or ``partition``."""
        self.flush()
        groups = self.topic if dimension == "topic" else self.partition
        return percentile_frame(DIMENSIONS[dimension], groups.groups.items(), groups.other)

    def produce_by_acks(self) -> pd.DataFrame:
        """:func:`kdissect.analysis.kafka_latency.produce_by_acks`."""
        self.flush()
        table = percentile_frame(["acks"], self.acks.groups.items(), self.acks.other)
        return table.astype({"acks": "Int16"}) if len(table) and OTHER not in set(table["acks"]) else table

    def fetch_waits(self, label: Callable[[object, object], str | None]) -> pd.DataFrame:
        """:func:`kdissect.analysis.kafka_latency.fetch_waits`, brokers named by ``label``."""
        import pandas as pd

        self.flush()
        merged: dict[tuple, FetchWaits] = {}
        for (client, ip, port), waits in self.fetch.groups.items():
            merged.setdefault((client, label(ip, port)), FetchWaits()).merge(waits)
        columns = ["client_id", "broker", "fetches", "returned_data", "max_wait_ms", "p50", "p99", "waited_full",
                   "overran"]  # fmt: skip
        items = sorted(merged.items(), key=lambda item: _text_order(item[0]))
        if self.fetch.other.count:
            items.append(((OTHER, None), self.fetch.other))
        rows = []
        for (client, broker), w in items:
            p = of_latencies(w.latencies)
            rows.append((client, broker, w.count, w.returned, w.max_wait, p.p50, p.p99, w.waited_full, w.overran))
        table = pd.DataFrame(rows, columns=columns)
        return table.astype({"max_wait_ms": "Int64", "p50": "float64", "p99": "float64"}) if rows else table

    def join_waits(self) -> tuple[pd.DataFrame, int]:
        """:func:`kdissect.analysis.kafka_latency.join_waits`' first :data:`LISTED` rows, and how many there are."""
        import pandas as pd

        self.flush()
        columns = ["request_ts", "client_id", "latency_ms", "rebalance_timeout_ms", "error_name", "expected_wait"]
        return _timed(pd.DataFrame(self.joins.rows(), columns=columns)), self.joins.total

    def slowest_requests(self, label: Callable[[object, object], str | None]) -> pd.DataFrame:
        """:func:`kdissect.analysis.kafka_latency.slowest` (:data:`SLOWEST` rows), brokers named by ``label``."""
        import pandas as pd

        self.flush()
        columns = ["request_ts", "api_name", "api_version", "client_id", "client_ip", "broker", "topics",
                   "latency_ms", "bound_ms", "error_name", "status", "connection_id", "correlation_id"]  # fmt: skip
        rows = [(*row[:5], label(*row[5]), ", ".join(map(str, row[6])) or None, *row[7:])
                for row in self.slowest.rows()]  # fmt: skip
        return _timed(pd.DataFrame(rows, columns=columns)).astype({"bound_ms": "Float64"})

    def throttling(self) -> pd.DataFrame:
        """:func:`kdissect.analysis.errors.throttling`."""
        import pandas as pd

        self.flush()
        rows = [(*key, t.count, t.total, t.largest) for key, t in self._sorted(self.throttled)]
        table = pd.DataFrame(rows, columns=["client_id", "api_name", "responses", "total_ms", "max_ms"])
        return table.sort_values("total_ms", ascending=False, kind="stable", ignore_index=True)

    def without_answer(self) -> pd.DataFrame:
        """:func:`kdissect.analysis.errors.without_answer`."""
        import pandas as pd

        self.flush()
        rows = [(*key, t.count, ", ".join(sorted(t.clients)), t.note[1] if t.note else None)
                for key, t in self._sorted(self.lost)]  # fmt: skip
        table = pd.DataFrame(rows, columns=["api_name", "status", "count", "client_ids", "first_warning"])
        return table.sort_values("count", ascending=False, kind="stable", ignore_index=True)

    def errors_by(self, dimension: str, label: Callable[[object, object], str | None]) -> pd.DataFrame:
        """:func:`kdissect.analysis.errors.errors_by`, brokers named by ``label``."""
        import pandas as pd

        self.flush()
        by = ERROR_DIMENSIONS[dimension]
        merged: dict[tuple, Tally] = {}
        for key, tally in self.errors[dimension].groups.items():
            named = tuple(label(*v) if c == _BROKER else v for c, v in zip(by, key, strict=True))
            merged.setdefault(named, Tally()).merge(tally)
        items = sorted(merged.items(), key=lambda item: item[1].first)  # type: ignore[arg-type,return-value]
        other = self.errors[dimension].other
        if other.count:
            items.append(((OTHER, *[None] * (len(by) - 1)), other))
        rows = [(*key, t.count, t.flagged, t.note[1] if t.note else None) for key, t in items]
        table = pd.DataFrame(rows, columns=[*by, "count", "expected", "first_message"])
        return table.sort_values(["expected", "count"], ascending=[True, False], kind="stable", ignore_index=True)

    def _sorted(self, groups: Groups) -> Iterator[tuple[tuple, Any]]:
        yield from sorted(groups.groups.items(), key=lambda item: _text_order(item[0]))
        if groups.other.count:
            yield (OTHER, None), groups.other


def _named(topic: Callable[[object], object], key: tuple, at: int, drop: bool = False) -> tuple | None:
    """``key`` with its topic (at ``at``) named; None when it has no name and ``drop``."""
    name = topic(key[at])
    return None if name is None and drop else (*key[:at], name, *key[at + 1:])


def _text_order(key: tuple) -> tuple:
    return tuple(x for v in key for x in ((True, "") if v is None else (False, str(v))))


def _timed(frame: pd.DataFrame) -> pd.DataFrame:
    import pandas as pd

    return frame.assign(request_ts=pd.to_datetime(frame["request_ts"], unit="ns", utc=True))


def _rows(columns: Columns, names: tuple[str, ...]) -> Iterator[tuple]:
    n = len(cells(next(iter(columns.values())))) if columns else 0
    return zip(*(cells(columns[c]) if c in columns else [None] * n for c in names), strict=True)


def _keyed(pieces: list[Columns], names: tuple[str, ...]) -> Iterator[tuple[tuple, tuple]]:
    """((connection id, correlation id), the ``names`` values) of each row of ``pieces``."""
    for piece in pieces:
        for conn, corr, *rest in _rows(piece, ("connection_id", "correlation_id", *names)):
            yield (conn, corr), tuple(rest)


def percentile_frame(by: list[str], groups: Iterable[tuple[tuple, Latencies]], other: Latencies) -> pd.DataFrame:
    """One row per group (plus :data:`OTHER` for the keys not kept) with its percentiles, slowest
    first (by p99, by max where too few for a p99), ties in key order."""
    import pandas as pd

    rows = [(*key, *_figures(latencies)) for key, latencies in groups]
    table = pd.DataFrame(rows, columns=[*by, *PERCENTILE_COLUMNS])
    table[PERCENTILE_COLUMNS[1:]] = table[PERCENTILE_COLUMNS[1:]].astype("float64")  # None: NaN, as pandas
    table = table.sort_values([*by], key=lambda c: c.astype(str), kind="stable", ignore_index=True)
    tail = table["p99"].fillna(table["max"])
    order = table.assign(_tail=tail).sort_values(["_tail", "count"], ascending=False, na_position="last",
                                                 kind="stable").index  # fmt: skip
    table = table.loc[order].reset_index(drop=True)
    if other.count:
        table.loc[len(table)] = [OTHER, *[None] * (len(by) - 1), *_figures(other)]
    return table


def _figures(latencies: Latencies) -> list[float | int | None]:
    p = of_latencies(latencies)
    return [p.count, p.p50, p.p90, p.p99, p.p999, p.max]
