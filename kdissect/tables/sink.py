"""Turn the Kafka layer's events into table rows, held column by column.

A sink: it consumes events in order and keeps only rows, never messages, so memory grows
with the output, not the capture. Its columns become pandas DataFrames (:mod:`kdissect.tables.frames`)
or Arrow tables for Parquet (:mod:`kdissect.tables.arrow`); pandas loads only for the former.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from itertools import compress
from typing import TYPE_CHECKING, Any

from ..decoders import apis, schema
from ..decoders.entities import Context, Entry, carries_records, has_error, is_error_field, walk
from ..decoders.error_codes import code_of, error_name, is_retriable
from ..decoders.errors import CAP
from ..decoders.records import LENGTHS_ONLY, ArenaColumns, Payloads, RecordArena, RunMeter
from ..events import (
    EXCHANGE_TYPED,
    Anomaly,
    ConnectionSummary,
    Exchange,
    ExchangeRows,
    KafkaEvent,
    KafkaMessage,
    SaslFacts,
)
from ..lazy import lazy_module
from ..options import Options
from . import detail_walk
from .columns import DETAIL_TABLES, TABLES, TCP_COUNTERS, Parts, Runs
from .details import PARAMS, DetailRows
from .numbers import joined_numbers, number_arrays, through_numpy
from .record_rows import (
    BATCH_NAMES,
    Located,
    add_records,
    batch_rows,
    lane_rows_in_c,
    located_records,
    null_payloads,
    produce_base_offsets,
    record_fields,
    rows_in_c,
    rows_made_in_c,
)
from .rows import TableRows, typed, typed_rows
from .transactions import TransactionMarks

if TYPE_CHECKING:
    from .repeats import Repeats

np = lazy_module("numpy")
_NOT_PARTITION_TRAFFIC = detail_walk.NOT_PARTITION_TRAFFIC
_END_TXN = apis.key_of("EndTxn")
_AUTH_FAILED = code_of("SASL_AUTHENTICATION_FAILED")
# Distinct brokers (node id, host, port, rack) the brokers table keeps, the first in capture order: as
# many as a table keyed by what clients choose keeps keys (analysis.bounded.KEY_LIMIT), since a
# hostile capture can announce any number. Each announcement of another is a BROKERS_NOT_KEPT anomaly.
BROKER_ROWS = 10_000
_NAMED_ONE_BY_ONE = 256  # rows (or runs) of a table named in a Python loop; more: through numpy
BROKERS_NOT_KEPT = "brokers_not_kept"
OPEN_TXN_HOLD = 4  # records are spilled at this many times spill_rows while a transaction is open (or by bytes)
_PARTITION_VALUES = ("fetch_offset", "committed_offset", "offset", "base_offset", "high_watermark",
                     "last_stable_offset", "log_start_offset", "timestamp", "leader_epoch")
# The tables a sink may build and still take exchanges as rows the native pairing made (ExchangeRows):
# none of them needs more of an exchange than its exchanges row.
ROW_TABLES = frozenset({"exchanges", "connections", "anomalies"})
# Tables whose rows grow with the traffic: handed over in pieces (to a writer, or to the summary's
# figures) as they grow; all but ``brokers`` (one row per broker, at most BROKER_ROWS). A counted ``anomalies`` row
# handed over keeps its count (``take``).
SPILLABLE = tuple(name for name in TABLES if name != "brokers")
# The tables of an exchange's own rows: spilled together (a piece of each holds the rows of the same
# exchanges, exchanges first), so a consumer can join them piece by piece (analysis.exchange_figures).
JOINED = ("exchanges", "partitions", "errors", "request_params")
Columns = Mapping[str, list[Any] | Runs | Parts]  # a table's values per column name
Spill = Callable[[str, Columns], None]


api_name = apis.name_of


def _message_schema(msg: KafkaMessage | None) -> schema.Message | None:
    """The schema a message was decoded with, or None when it was not decoded."""
    if msg is None or msg.body is None or msg.api_key is None or msg.api_version is None:
        return None
    return schema.api_message(msg.api_key, msg.api_version, "request" if msg.is_request else "response")


def _entries(msg: KafkaMessage | None, errors_only: bool = False) -> list[Entry]:
    found = _message_schema(msg)
    return [] if found is None else list(walk(found, msg.body, errors_only=errors_only))  # type: ignore[union-attr]


At = tuple[int, int] | None  # a message's stream offset and first capture time, or None without the message


def _at(msg: KafkaMessage | None) -> At:
    return (msg.offset, msg.ts_first) if msg is not None else None


def _ts(msg: KafkaMessage | None) -> int | None:
    return msg.ts_first if msg is not None else None


def _has_error(msg: KafkaMessage | None) -> bool:
    found = _message_schema(msg)
    return found is not None and has_error(found, msg.body)  # type: ignore[union-attr, arg-type]


def response_errors(entries: list[Entry]) -> list[tuple[Entry, str, int]]:
    """Every non-zero error code in a response, in wire order, with the struct it sits in."""
    return [(e, k, v) for e in entries for k, v in e.scalars.items() if is_error_field(k) and v]


def exchange_errors(ex: Exchange, entries: list[Entry]) -> list[tuple[Entry, str, int]]:
    """The errors of an exchange: its response's non-zero error codes (``entries``: the response's
    walk), else the authentication failure that only its SASL token reports, as Kafka's own code
    for it (SASL_AUTHENTICATION_FAILED) at the path ``auth_bytes.error``, so every breakdown counts it."""
    found = response_errors(entries)
    if found or ex.auth_error is None:
        return found
    return [(Entry("auth_bytes", Context(), {}, {"error_message": ex.auth_error}), "error", _AUTH_FAILED)]


def exchange_row(ex: Exchange, errors: list[tuple[Entry, str, int]] | None = None) -> dict[str, Any]:
    """The ``exchanges`` table row of one exchange (also what ``show --filter`` evaluates)."""
    req, resp = ex.request, ex.response
    first = req or resp
    assert first is not None
    if errors is None:
        errors = exchange_errors(ex, _entries(resp, errors_only=True))
    decoded = resp is not None and resp.body is not None
    first_error = errors[0][2] if errors else (0 if decoded else None)
    status = "error" if ex.status == "ok" and errors else ex.status
    client, broker = ex.client, ex.broker
    warnings = [w["message"] for m in (req, resp) if m is not None for w in m.warnings]
    return {
        "connection_id": ex.conn_id,
        "client_ip": client[0] if client else None,
        "client_port": client[1] if client else None,
        "broker_ip": broker[0] if broker else None,
        "broker_port": broker[1] if broker else None,
        "api_key": first.api_key,
        "api_name": api_name(first.api_key),
        "api_version": first.api_version,
        "correlation_id": first.correlation_id,
        "client_id": req.header.get("client_id") if req is not None and req.header else None,
        "request_ts": req.ts_first if req else None,
        "response_ts": resp.ts_first if resp else None,
        "latency_ms": (resp.ts_first - req.ts_last) / 1e6 if req and resp else None,
        "total_ms": (resp.ts_last - req.ts_first) / 1e6 if req and resp else None,
        "request_bytes": req.size + 4 if req else None,
        "response_bytes": resp.size + 4 if resp else None,
        "error_code": first_error,
        "error_name": error_name(first_error) if first_error is not None else None,
        "error_count": len(errors) if decoded else None,
        "throttle_time_ms": resp.body.get("throttle_time_ms") if decoded else None,
        "status": status,
        "out_of_order": ex.out_of_order,
        "inferred": ex.inferred,
        "warnings": "; ".join(warnings) if warnings else None,
    }


def exchange_topics(ex: Exchange) -> list[str]:
    """The topic names an exchange's request and response name, in order, each once (for filters)."""
    found = (e.context.topic for msg in (ex.request, ex.response) for e in _entries(msg))
    return list(dict.fromkeys(t for t in found if t is not None))


def _tcp_counters(c: ConnectionSummary) -> dict[str, int]:
    """The reassembler's counters of a connection, one column per counter and direction."""
    if c.tcp is None:
        return {}
    return {f"tcp_{name}_{side}": getattr(stats, name) for side, stats in zip(("to_broker", "to_client"), c.tcp,
                                                                               strict=True) for name in TCP_COUNTERS}


def _sasl_columns(s: SaslFacts) -> dict[str, Any]:
    return {"sasl": s.mechanism, "sasl_tokens": s.tokens, "sasl_user": s.user, "sasl_principal": s.principal,
            "sasl_result": s.result, "sasl_error": s.error, "sasl_reauths": s.reauths,
            "sasl_session_lifetime_ms": s.session_lifetime_ms}


class TableSink:
    """Accumulates rows for every table from a stream of :mod:`kdissect.events`.

    With ``spill``, each ``SPILLABLE`` table's (of ``spilled_tables``) columns are handed over every
    ``options.spill_rows`` rows and forgotten, so memory stays flat however many exchanges and records
    the capture holds (a topic id is named in spilled rows only if a Metadata response named it before
    they were spilled).

    ``anomalies`` among the tables (without ``records`` or ``batches``) still has record batches
    decoded, sizes only, for their anomalies (bad checksums, caps), unless ``record_anomalies`` is
    False: the terminal summary shows no record, so it does not pay for decoding them (on chatty
    traffic that was a third of its cost).

    ``connection_sources`` (connection id -> capture file, filled by the engine as connections
    open) names each row's ``source_file``. With ``resolve_topics=False`` topic ids are left in
    the hidden ``_topic_id`` column, for an engine that names them from several sinks' Metadata.

    The records table is kept steady (``TableRows.steady``), so that the rows of every plain message are
    made in C: those of a new table's first message (after each piece handed on) and those after a
    control batch's rows (which the reference adds as a plain block) too, which the reference made
    otherwise. The rows are the same either way.
    """

    def __init__(self, tables: Iterable[str] | None = None, options: Options | None = None,
                 spill: Spill | None = None, resolve_topics: bool = True, record_anomalies: bool = True,
                 spilled_tables: Iterable[str] = SPILLABLE) -> None:
        self.wanted = set(tables) if tables is not None else set(TABLES)
        self._lean = not self.wanted & {"partitions", "records", "batches", "brokers"}  # no table walks requests
        options = options or Options()
        if options.limits.run is None:  # one decompression budget for the whole run
            options = replace(options, limits=replace(options.limits, run=RunMeter(options.decompressed_run)))
        self._keeps_records = bool(self.wanted & {"records", "batches"})
        # the records table's columns, appended to as batches decode (new buffers when it is handed on)
        self._arena = RecordArena() if "records" in self.wanted else None
        # what the rows in C decode into: the records table's arena, or scratch for batches alone
        self._c_arena = self._arena or (RecordArena() if "batches" in self.wanted else None)
        self._decodes_records = self._keeps_records or (record_anomalies and "anomalies" in self.wanted)
        if not self._keeps_records:
            options = replace(options, payloads=LENGTHS_ONLY)  # batches decoded for their anomalies only
        self.options = options
        self.spill = spill
        self.spilled_tables = [name for name in SPILLABLE if name in set(spilled_tables)]
        self._joined = [name for name in JOINED if name in self.spilled_tables]
        self.rows: dict[str, TableRows] = {name: TableRows(name) for name in TABLES}
        self._steady_records()
        self.topic_names: dict[uuid.UUID, str] = {}
        self.unnamed_ids = False  # whether rows went out with a topic id Metadata had not named yet
        self.resolve_topics = resolve_topics
        self.connection_sources: dict[int, str | None] = {}
        self._brokers_seen: set[tuple] = set()
        self.transactions = TransactionMarks(self.topic_names)
        self.spilled: dict[str, int] = dict.fromkeys(TABLES, 0)  # rows already handed to ``spill``
        self.details = DetailRows(self.wanted & set(DETAIL_TABLES))
        # Per connection (None: the capture itself), per (kind, direction): [rows so far, index of the counted row].
        self._anomaly_runs: dict[int | None, dict[tuple[str, str | None], list[int]]] = {}
        self._payload_held = 0  # decompressed batch bytes behind the records rows not yet written out
        # Whether exchanges may come as ExchangeRows (the engine sets Options.exchange_rows from this).
        self.takes_rows = self.wanted <= ROW_TABLES and not self._decodes_records
        # Called with k after the rows of a lane piece's ``left[k]`` are made in Python (the only rows of
        # a piece that add brokers rows or transaction calls): for an engine that places those in capture
        # order (the Spark tasks, by the piece's ``left_at``).
        self.left_made: Callable[[int], None] | None = None
        # Set by an engine that stages the records table where a reference to earlier rows can be read back
        # (the Spark tasks' files on local disk): payloads met again are decoded cut and staged as one.
        self.repeats: Repeats | None = None

    def lane_details(self) -> tuple | None:
        """The spec that has the native pairing make the detail rows of the exchanges it pairs too
        (``Options.exchange_details``, read by ``kafka/_details.c``), for a sink that writes more than
        :attr:`takes_rows` allows; None when it takes rows alone, or the native walk is not built."""
        if self.takes_rows or detail_walk.native is None:
            return None
        return detail_walk.lane_spec("errors" in self.wanted, "brokers" in self.wanted, self._decodes_records)

    def consume(self, event: KafkaEvent) -> None:
        if isinstance(event, Exchange):
            self._exchange(event)
        elif isinstance(event, ExchangeRows):
            self.rows["exchanges"].add_columns(typed(event.columns(), EXCHANGE_TYPED), len(event))
            if event.details is not None:
                self._lane_parts(event.details)
        elif isinstance(event, Anomaly):
            self._anomaly(event.kind, event.conn_id, event.direction, event.offset, event.length, event.ts_ns,
                          event.detail, event.source)
        elif isinstance(event, ConnectionSummary):
            self._connection(event)
            self._anomaly_runs.pop(event.conn_id, None)  # its anomalies are all in; forget their keys
        if self.spill is not None:
            self._spill_grown()

    def _spill_grown(self) -> None:
        """Hand over each table grown to ``spill_rows`` rows (records also by payload bytes, and while
        a transaction is open only at ``OPEN_TXN_HOLD`` times that, so its abort can still mark them)."""
        assert self.spill is not None
        big, limit = self._payload_held >= self.options.spill_bytes, self.options.spill_rows
        tables = self.rows
        joined = any(tables[name].length >= limit for name in self._joined)
        for name in self.spilled_tables:
            rows = tables[name].length  # (an attribute, not len(): this runs once per event for every table)
            if joined and name in self._joined:
                self.spill(name, self.take(name))
                continue
            if rows < limit and not (big and rows and name == "records"):
                continue
            hold = name == "records" and self.transactions.open and rows < OPEN_TXN_HOLD * limit
            if (rows >= limit and not hold) or (big and name == "records" and rows):
                self.spill(name, self.take(name))
        if big:
            self._payload_held = 0

    def _anomaly(self, kind: str, conn_id: int | None, direction: str | None, offset: int | None,
                 length: int | None, ts: int | None, detail: str, source: str | None = None) -> None:
        """One anomaly row, or, past ``options.anomaly_rows`` of one kind on one connection and
        direction, one more in the count of the single row that stands for the rest."""
        runs = self._anomaly_runs.setdefault(conn_id, {})
        run = runs.setdefault((kind, direction), [0, -1])
        run[0] += 1
        table = self.rows["anomalies"]
        if run[0] <= self.options.anomaly_rows:
            table.append({"kind": kind, "connection_id": conn_id, "direction": direction, "stream_offset": offset,
                          "length": length, "ts": ts, "detail": detail, "count": 1, "source_file": source})
        elif run[1] < 0:
            run[1] = len(table)
            table.append({"kind": kind, "connection_id": conn_id, "direction": direction, "stream_offset": offset,
                          "length": length, "ts": ts, "count": 1, "source_file": source,
                          "detail": f"{detail} (the first of the rest of this kind here: see count)"})
        else:
            table.listed("count")[run[1]] += 1
            if length is not None:
                lengths = table.listed("length")
                lengths[run[1]] = (lengths[run[1]] or 0) + length

    def consume_all(self, events: Iterable[KafkaEvent]) -> None:
        for ev in events:
            self.consume(ev)

    # -- exchanges and what hangs off them ------------------------------------------------
    def _exchange(self, ex: Exchange) -> None:
        req, resp = ex.request, ex.response
        first = req or resp
        assert first is not None
        if detail_walk.native is not None and not self._lean:
            errors = self._walked_details(ex, first)
        else:
            errors = self._entry_details(ex, first)
        if self._keeps_records and req is not None and req.api_key == _END_TXN and req.body is not None \
                and not errors:
            body = req.body
            self.transactions.end_txn(body["producer_id"], body["producer_epoch"], body["committed"])
        if self.details.wanted:
            self.details.add(ex, self.rows)

    def _entry_details(self, ex: Exchange, first: KafkaMessage) -> list[tuple]:
        """The exchange's row and its partitions/errors/brokers/records rows from the Python schema
        walk's entries (the reference); returns the exchange's errors."""
        req, resp = ex.request, ex.response
        # Only the exchanges table: requests need no walk, responses only down to their errors.
        lean = self._lean
        req_entries = _entries(req) if not lean or self._records_in(req) else []
        resp_records = self._records_in(resp)
        resp_entries = (_entries(resp, errors_only=lean and not resp_records)
                        if not lean or resp_records or _has_error(resp) else [])  # fmt: skip
        self._learn_topic_ids(req_entries)
        self._learn_topic_ids(resp_entries)
        errors = exchange_errors(ex, resp_entries)
        self.rows["exchanges"].append(exchange_row(ex, errors))
        if "errors" in self.wanted:
            self._entry_error_rows(ex, first, resp, errors)
        if "partitions" in self.wanted and first.api_key not in _NOT_PARTITION_TRAFFIC:
            self._partition_rows(ex, first, req, req_entries, resp_entries)
        if "brokers" in self.wanted and resp is not None:
            self._broker_rows(resp.conn_id, resp.api_key, resp.ts_first, [e.scalars for e in resp_entries])
        if self._decodes_records:
            self._record_rows(ex.conn_id, first.correlation_id, _at(req), _at(resp), located_records(req_entries),
                              located_records(resp_entries),
                              produce_base_offsets(resp_entries) if req is not None else {})
        return errors

    # -- the native detail walk (tables/detail_walk.py; the rows above, found in C) ---------
    def _walked_details(self, ex: Exchange, first: KafkaMessage) -> list[tuple]:
        """What :meth:`_entry_details` does, from the native walk of the exchange's bodies."""
        req, resp = ex.request, ex.response
        req_schema, resp_schema = _message_schema(req), _message_schema(resp)
        partitions = "partitions" in self.wanted and first.api_key not in _NOT_PARTITION_TRAFFIC
        walked = detail_walk.walk_exchange(
            (req, req_schema) if req_schema is not None else None,  # type: ignore[arg-type]
            (resp, resp_schema) if resp_schema is not None else None,  # type: ignore[arg-type]
            partitions, self._decodes_records, "brokers" in self.wanted, self.topic_names)
        errors: list[tuple] = walked.errors or exchange_errors(ex, [])  # (the SASL failure, if any)
        self.rows["exchanges"].append(exchange_row(ex, errors))
        if "errors" in self.wanted:
            if walked.errors:
                for found in walked.errors:
                    self._error_row(ex.conn_id, first.correlation_id, first.api_key, _ts(resp), *found)
            else:
                self._entry_error_rows(ex, first, resp, errors)
        if walked.partitions:
            self.rows["partitions"].append_values(
                detail_walk.PARTITION_PREFIX + detail_walk.PARTITION_SLOTS,
                (ex.conn_id, first.correlation_id, first.api_key, api_name(first.api_key),
                 req.ts_first if req else None), list(walked.partitions.values()))
        if walked.brokers:
            assert resp is not None
            self._broker_rows(resp.conn_id, resp.api_key, resp.ts_first, walked.brokers)
        if self._decodes_records:
            self._record_rows(ex.conn_id, first.correlation_id, _at(req), _at(resp), walked.request_records,
                              walked.response_records, walked.base_offsets)
        return errors

    # -- the rows the lane's pairing made (kafka/_details.c) --------------------------------
    def _lane_parts(self, parts: detail_walk.LaneParts) -> None:
        """The detail rows of a piece of exchanges the native pairing paired: its partitions and
        request_params rows as columns, the topic ids it learned, then, per exchange with error codes,
        brokers or records, those rows as :meth:`_walked_details` makes them: the records and batches
        rows of plain batches in C, a run of exchanges per call, the others in :meth:`_left_rows`."""
        for topic_id, name in parts.topics.items():
            self.topic_names.setdefault(topic_id, name)
        for name, names, columns in (("partitions", detail_walk.PARTITION_COLUMNS, parts.partitions),
                                     ("request_params", PARAMS, parts.params)):
            if columns[0] and name in self.wanted:
                self.rows[name].add_columns(typed(dict(zip(names, columns, strict=True))),
                                            typed_rows(columns[0]))
        left, i = parts.left, 0
        while i < len(left):
            if self._c_arena is not None:  # the exchanges whose rows are records only: in C
                allowance = -1 if self.spill is not None else max(self.options.payload_bytes - self._payload_held, 0)
                end, held = lane_rows_in_c(left, i, self.options, self._c_arena, self._records_table(),
                                           self.rows["batches"] if "batches" in self.wanted else None,
                                           "errors" in self.wanted, "brokers" in self.wanted, allowance,
                                           self._repeats())  # fmt: skip
                self._payload_held += held
                if end > i:
                    i = end
                    self._check_payloads(left[end - 1][0], left[end - 1][3] or left[end - 1][4])
                    continue
            self._left_rows(*left[i])
            if self.left_made is not None:
                self.left_made(i)
            i += 1

    def _left_rows(self, conn_id: int, correlation_id: int | None, api_key: int | None, request_at: At,
                   response_at: At, errors: list[tuple], brokers: list[dict[str, Any]], req_records: list[Located],
                   resp_records: list[Located], base_offsets: dict[tuple[str | None, int | None], int]) -> None:
        """The rows of one exchange the lane's pairing left to the sink (``LaneParts.left``)."""
        if "errors" in self.wanted:
            for found in errors:
                self._error_row(conn_id, correlation_id, api_key, response_at[1], *found)  # type: ignore[index]
        if brokers and "brokers" in self.wanted:
            self._broker_rows(conn_id, api_key, response_at[1], brokers)  # type: ignore[index]
        if self._decodes_records:
            self._record_rows(conn_id, correlation_id, request_at, response_at, req_records, resp_records,
                              base_offsets)

    def _records_in(self, msg: KafkaMessage | None) -> bool:
        """Whether ``msg`` has record batches this sink decodes."""
        found = _message_schema(msg) if self._decodes_records else None
        return found is not None and carries_records(found)

    def _record_rows(self, conn_id: int, correlation_id: int | None, request_at: At, response_at: At,
                     req_records: Iterable[Located], resp_records: Iterable[Located],
                     base_offsets: dict[tuple[str | None, int | None], int]) -> None:
        """An exchange's records and batches rows; ``request_at``/``response_at``: each message's stream
        offset and first capture time, or None without it."""
        for direction, role, at, located in (("produce", "request", request_at, req_records),
                                             ("fetch", "response", response_at, resp_records)):
            if at is None:
                continue
            located = list(located)
            if self._c_arena is not None and located:  # plain batches: their rows in C
                held = rows_in_c(located, self.options, self._c_arena, self._records_table(),
                                 self.rows["batches"] if "batches" in self.wanted else None,
                                 (conn_id, correlation_id, direction), base_offsets, self._repeats())
                if held is not None:
                    self._payload_held += held
                    continue
            parts = record_fields(located, self.options, self._arena)
            if not parts:
                continue
            if "batches" in self.wanted:
                self.rows["batches"].append_values(BATCH_NAMES, (conn_id, correlation_id, direction), batch_rows(parts))
            if "records" in self.wanted:
                add_records(self.rows["records"], conn_id, correlation_id, direction, parts, base_offsets,
                            self.transactions, self.spilled["records"])
                self._steady_records()  # (a control batch's rows, a plain block, leave it unsteady)
                self._payload_held += sum(b.decompressed_size or b.size for p in parts for b in p.records.batches)
            for part in parts:
                for w in part.records.all_warnings():
                    self._anomaly(w.code, conn_id, role, at[0], None, at[1],
                                  f"{part.topic}[{part.partition}] records: {w.message}")
        self._check_payloads(conn_id, request_at or response_at)

    def _records_table(self) -> TableRows | None:
        return self.rows["records"] if self._arena is not None else None

    def _repeats(self) -> Repeats | None:
        """:attr:`repeats`, numbered from the records rows so far (for the rows in C about to be made)."""
        repeats = self.repeats
        if repeats is not None:
            repeats.base = self.spilled["records"] + self.rows["records"].length
        return repeats

    def _check_payloads(self, conn_id: int, first: At) -> None:
        """After an exchange's records (``first``: its first message's place): the payload budget."""
        if self._payload_held > self.options.payload_bytes and self.spill is None:
            assert first is not None
            self._stop_keeping_payloads(conn_id, first[1])

    def _stop_keeping_payloads(self, conn_id: int, ts: int) -> None:
        """The records held in memory reached the payload budget: keep sizes only from here on (as
        empty bytes, not ``--no-payloads``' nulls, which would blank the payloads kept before)."""
        self._payload_held = 0
        if self.options.payloads.keep == 0:
            return
        self.options = replace(self.options, payloads=Payloads(0))
        self._anomaly(CAP, conn_id, None, None, None, ts,
                      f"records held in memory reached {self.options.payload_bytes} payload bytes: later records "
                      "keep their sizes, not their keys, values and header values")

    def _entry_error_rows(self, ex: Exchange, first: KafkaMessage, resp: KafkaMessage | None,
                          errors: list[tuple[Entry, str, int]]) -> None:
        for entry, key, code in errors:
            ctx = entry.context
            self._error_row(ex.conn_id, first.correlation_id, first.api_key, _ts(resp), entry.path, key, code,
                            ctx.topic, ctx.topic_id, ctx.partition, ctx.group, entry.scalars.get("error_message"))

    def _error_row(self, conn_id: int, correlation_id: int | None, api_key: int | None, response_ts: int | None,
                   path: str, key: str, code: int, topic: str | None, topic_id: uuid.UUID | None,
                   partition: int | None, group: str | None, message: str | None) -> None:
        """One errors row: ``path`` is the struct's (entities.walk's), ``key`` its error field."""
        self.rows["errors"].append({
            "connection_id": conn_id, "correlation_id": correlation_id, "api_key": api_key,
            "api_name": api_name(api_key), "response_ts": response_ts,
            "path": f"{path}.{key}" if path else key, "error_code": code, "error_name": error_name(code),
            "retriable": is_retriable(code), "topic": topic, "_topic_id": topic_id,
            "partition": partition, "group": group, "error_message": message,
        })

    def _partition_rows(self, ex: Exchange, first: KafkaMessage, req: KafkaMessage | None,
                        req_entries: list[Entry], resp_entries: list[Entry]) -> None:
        merged: dict[tuple, dict[str, Any]] = {}
        for side, entries in (("request", req_entries), ("response", resp_entries)):
            for e in entries:
                if not e.has_partition or (e.context.topic is None and e.context.topic_id is None):
                    continue
                key = (e.context.topic or e.context.topic_id, e.context.partition)
                row = merged.get(key)
                if row is None:
                    row = merged[key] = {
                        "connection_id": ex.conn_id, "correlation_id": first.correlation_id,
                        "api_key": first.api_key, "api_name": api_name(first.api_key),
                        "request_ts": req.ts_first if req else None, "topic": e.context.topic,
                        "_topic_id": e.context.topic_id, "partition": e.context.partition,
                    }
                for name in _PARTITION_VALUES:
                    if name in e.scalars and row.get(name) is None:
                        row[name] = e.scalars[name]
                if side == "response" and "error_code" in e.scalars:
                    row["error_code"] = e.scalars["error_code"]
                    row["error_name"] = error_name(e.scalars["error_code"])
                records = e.scalars.get("records")
                if isinstance(records, bytes):
                    row[f"{side}_records_bytes"] = len(records)
        self.rows["partitions"].extend(merged.values())

    def _broker_rows(self, conn_id: int, api_key: int | None, ts: int, structs: list[Mapping[str, Any]]) -> None:
        """Brokers named by a response's structs (their scalars; the walk's structs with a host and port):
        the first :data:`BROKER_ROWS` distinct ones, each announcement of another counted as an anomaly."""
        for s in structs:
            node = s.get("node_id", s.get("broker_id"))
            if node is None or "host" not in s or "port" not in s:
                continue
            key = (node, s["host"], s["port"], s.get("rack"))
            if key in self._brokers_seen:
                continue
            if len(self._brokers_seen) >= BROKER_ROWS:
                self._anomaly(BROKERS_NOT_KEPT, conn_id, "response", None, None, ts,
                              f"{api_name(api_key)} named broker {node} at {s['host']}:{s['port']}: the brokers "
                              f"table keeps the first {BROKER_ROWS:,} brokers")
                continue
            self._brokers_seen.add(key)
            self.rows["brokers"].append({
                "node_id": node, "host": s["host"], "port": s["port"], "rack": s.get("rack"),
                "source": api_name(api_key), "first_seen": ts,
                "source_file": self.connection_sources.get(conn_id),
            })

    def _learn_topic_ids(self, entries: list[Entry]) -> None:
        for e in entries:
            ctx = e.context
            if ctx.topic is not None and ctx.topic_id is not None and ctx.topic_id.int != 0:
                self.topic_names.setdefault(ctx.topic_id, ctx.topic)

    def _connection(self, c: ConnectionSummary) -> None:
        self.rows["connections"].append({
            "connection_id": c.conn_id,
            "client_ip": c.client[0] if c.client else c.endpoints[0][0],
            "client_port": c.client[1] if c.client else c.endpoints[0][1],
            "broker_ip": c.broker[0] if c.broker else c.endpoints[1][0],
            "broker_port": c.broker[1] if c.broker else c.endpoints[1][1],
            "is_kafka": c.is_kafka, "first_ts": c.first_ts, "last_ts": c.last_ts,
            "bytes_to_broker": c.bytes_to_broker, "bytes_to_client": c.bytes_to_client,
            "frames_to_broker": c.frames_to_broker, "frames_to_client": c.frames_to_client,
            "gaps": c.gaps, "gap_bytes": c.gap_bytes, "retransmissions": c.retransmissions,
            "skipped_bytes": c.skipped_bytes, "client_ids": ",".join(c.client_ids) or None,
            "software_name": c.software_name, "software_version": c.software_version,
            "encrypted": c.encrypted, **_sasl_columns(c.sasl), "end_reason": c.end_reason,
            "tls_version": c.tls_version, "cipher_suite": c.cipher_suite, "sni": c.sni, "alpn": c.alpn,
            "tls_resumed": c.tls_resumed, "decryption": c.decryption,
            **_tcp_counters(c),
        })

    # -- output ---------------------------------------------------------------------------
    def _resolve_topic_ids(self, rows: TableRows) -> None:
        """Name the topic of rows that gave only its id (Fetch v13+, ...), from what Metadata said."""
        if "topic" not in rows.columns:
            return
        with_text = "topic_id" in rows.columns
        ids, topics, *text_column = rows.aligned(["_topic_id", "topic", "topic_id"][: 3 if with_text else 2])
        strings = text_column[0] if text_column else None
        # the rows with an id (found without a Python step per row: a UUID is true, None false; not
        # ids.count(None), which calls UUID.__eq__ per id, nor a map asking each cell whether it is None,
        # which cost three times this), and per run of rows of one id object (a struct's partitions, a
        # batch's records) its name and text looked up once
        present = list(compress(range(len(ids)), ids))
        text: dict[uuid.UUID, str] = {}
        last, known, as_text, name = None, False, None, None
        for i in present:
            tid = ids[i]
            if tid is not last:
                last, known = tid, tid.int != 0
                as_text = (text.get(tid) or text.setdefault(tid, str(tid))) if known else None
                name = self.topic_names.get(tid) if known else None
            if known:
                if strings is not None:
                    strings[i] = as_text
                if topics[i] is None:
                    topics[i] = name
            if topics[i] is not None or not known:
                ids[i] = None
            else:  # an id not named yet stays: the run's figures name it at the end
                self.unnamed_ids = True

    def _name_sources(self, rows: TableRows) -> None:
        """A connection's rows come from the capture file the connection opened in: the rows not named
        yet are named, one lookup per distinct connection id. Ids held as typed parts (the native
        pairing's) are read out of them, the column keeping its parts; runs are named per run."""
        if "connection_id" not in rows.columns or not self.connection_sources:
            return
        column = rows.columns["connection_id"]
        in_parts = type(column) is Parts and all(type(part) is not tuple for part in column.parts)
        if in_parts:
            listed, files = None, rows.listed("source_file")
        else:
            listed, files = rows.aligned(["connection_id", "source_file"])
        if not through_numpy(len(files), _NAMED_ONE_BY_ONE):  # (no numpy, which a summary run never loads)
            get = self.connection_sources.get
            ids = column.expand() if in_parts else listed
            files[:] = [get(conn_id) if file is None and conn_id is not None else file
                        for conn_id, file in zip(ids, files, strict=True)]
            return
        ids, nulls = joined_numbers("int64", column.parts) if in_parts else number_arrays("int64", listed)
        distinct, where = np.unique(ids, return_inverse=True)
        get = self.connection_sources.get
        names = np.array([*map(get, distinct.tolist()), None], dtype=object)
        if nulls is not None:  # (no connection, no file)
            where[nulls] = len(distinct)
        named = names[where.reshape(-1)]
        if files.count(None) != len(files):  # rows named before keep their file
            before = np.array(files, dtype=object)
            named = np.where(np.equal(before, None), named, before)
        files[:] = named.tolist()

    def forget_connections(self, ids: Iterable[int]) -> None:
        """Name the file of every pending row, then forget these (ended) connections' files: what
        keeps ``connection_sources`` bounded in a run that never ends."""
        for rows in self.rows.values():
            self._name_sources(rows)
        for conn_id in ids:
            self.connection_sources.pop(conn_id, None)

    def _steady_records(self) -> None:
        """The records table made steady where it may not be (new, or rows added by the reference), when
        its rows may be made in C (the reference alone adds no empty block)."""
        records = self.rows["records"]
        if self._arena is not None and records.block is None and rows_made_in_c():
            ends = self._arena.lengths()
            records.steady(ArenaColumns(self._arena.buffers, ends, ends, 0))

    def columns(self, name: str) -> Columns:
        """The table's rows so far, column by column, topic ids named (unless ``resolve_topics`` is off)."""
        rows = self.rows[name]
        self._name_sources(rows)
        if self.resolve_topics:
            self._resolve_topic_ids(rows)
        if name == "records":
            self.transactions.apply(rows, self.spilled[name])
            if self.options.payloads.null and len(rows):
                null_payloads(rows)
        return rows.columns

    def take(self, name: str) -> Columns:
        """The table's columns so far, forgetting them (what ``spill`` receives)."""
        columns = self.columns(name)
        self.spilled[name] += len(self.rows[name])
        self.rows[name] = TableRows(name)
        if name == "records" and self._arena is not None:  # (the columns handed on keep the old buffers)
            self._arena.renew()
            self._steady_records()
        if name == "anomalies":  # a counted row handed over keeps its count; more start a new one
            for runs in self._anomaly_runs.values():
                for run in runs.values():
                    run[1] = -1
        return columns
