"""The native detail walk: an exchange's partitions, errors and records found by C, not by Entries.

:func:`kdissect.decoders.entities.walk` builds an Entry (a context, two dicts) per struct of a
body and the sink then reads them back; on chatty traffic that was a quarter of the every-table
job. ``tables/_native.c`` does the same walk over the decoded body and fills, directly, what the
sink reads from the entries (partition rows merged per topic-partition, error tuples, records
fields, learned topic ids, produce base offsets). Its plan is compiled here from the schema
table, once per message version, so nothing in C is per API. The Python walk stays the reference
(``KDISSECT_PURE_PYTHON=1``); the differential tests compare the tables of both.

The entry point takes one exchange's bodies (:func:`walk_exchange`): the sink calls it per
exchange today, and a native connection engine can call the C ``walk`` per exchange later.
"""

from __future__ import annotations

import sys
import uuid
from dataclasses import field
from typing import Any

from kdissect.dataclass import dataclass

from ..decoders import apis, compiler, schema
from ..decoders.entities import PARTITION_KEYS, is_error_field
from ..decoders.error_codes import error_name
from ..events import ExchangeRows, KafkaMessage
from ..native import native_module
from .details import BODY_APIS, PARAMS, PARAMS_APIS
from .rows import native_columns

native = native_module("tables._native")
if native is not None:
    native.setup(uuid.UUID, error_name)

# Member flags, as _native.c numbers them.
(STRUCT, ARRAY, TOPIC_NAME, GROUP_ID, TOPIC_ID, PARTITION, ERROR, RECORDS, ERROR_MESSAGE, BASE_OFFSET, ERROR_CODE,
 HOST, PORT) = (1 << i for i in range(13))
# A partition row's own values after topic, topic id and partition (the walk's P_VALUES slots);
# TableSink._partition_rows's order of precedence is theirs.
PARTITION_VALUES = ("fetch_offset", "committed_offset", "offset", "base_offset", "high_watermark",
                    "last_stable_offset", "log_start_offset", "timestamp", "leader_epoch")
# Every slot of a partition row list, in _native.c's order.
PARTITION_SLOTS = ("topic", "_topic_id", "partition", *PARTITION_VALUES, "error_code", "error_name",
                   "request_records_bytes", "response_records_bytes")
# The partitions table's columns shared by an exchange's rows (the walk's rows follow them).
PARTITION_PREFIX = ("connection_id", "correlation_id", "api_key", "api_name", "request_ts")
PARTITION_COLUMNS = PARTITION_PREFIX + PARTITION_SLOTS
# Cluster-state broadcasts list every partition of the cluster: not per-partition traffic.
NOT_PARTITION_TRAFFIC = apis.keys_with(apis.CLUSTER_STATE)

Plan = tuple[tuple[str, int, Any, int], ...]  # per member: key, flags, its struct's plan, partition value slot


def _flags(f: schema.Field) -> int:
    nested = f.elem == "struct" or f.is_array
    flags = (STRUCT if f.elem == "struct" else 0) | (ARRAY if f.is_array else 0)
    flags |= TOPIC_NAME if f.entity == "topicName" else 0
    flags |= GROUP_ID if f.entity == "groupId" else 0
    flags |= TOPIC_ID if f.key == "topic_id" else 0
    flags |= PARTITION if f.key in PARTITION_KEYS and f.elem == "int32" else 0
    flags |= ERROR if is_error_field(f.key) else 0
    flags |= RECORDS if f.key == "records" else 0
    flags |= ERROR_MESSAGE if f.key == "error_message" else 0
    flags |= BASE_OFFSET if f.key == "base_offset" else 0
    flags |= ERROR_CODE if f.key == "error_code" else 0
    flags |= HOST if f.key == "host" and not nested else 0
    flags |= PORT if f.key == "port" and not nested else 0
    return flags


def _compile(f: schema.Field) -> Plan:
    # Keys interned, as the decoder's programs' are: the walk over frame bytes matches them by identity.
    return tuple((sys.intern(m.key), _flags(m), _compile(m) if m.elem == "struct" else None,
                  PARTITION_VALUES.index(m.key) if m.key in PARTITION_VALUES else -1) for m in f.fields)


_PLANS: dict[int, tuple[schema.Message, Plan]] = {}


def plan_of(msg: schema.Message) -> Plan:
    """The walk's plan for a message version (memoised; the Message is kept so its id stays its own)."""
    found = _PLANS.get(id(msg))
    if found is None:
        found = _PLANS[id(msg)] = (msg, _compile(msg.root))
    return found[1]


@dataclass(slots=True)
class Walked:
    """What the walk of one exchange found (see _native.c's header for each part)."""

    partitions: dict[tuple, list[Any]] | None
    errors: list[tuple] = field(default_factory=list)  # (path, key, code, topic, topic id, partition, group, message)
    request_records: list[tuple] = field(default_factory=list)  # (topic, topic id, partition, bytes, aborted)
    response_records: list[tuple] = field(default_factory=list)
    base_offsets: dict[tuple, int] = field(default_factory=dict)
    brokers: list[dict[str, Any]] = field(default_factory=list)  # response structs with a host and a port


def walk_exchange(req: tuple[KafkaMessage, schema.Message] | None, resp: tuple[KafkaMessage, schema.Message] | None,
                  partitions: bool, records: bool, brokers: bool, topics: dict[uuid.UUID, str]) -> Walked:
    """Walk a request's and a response's decoded bodies (each with the schema it was decoded
    with, or None), learning topic ids into ``topics``."""
    out = Walked({} if partitions else None)
    walk = native.walk  # type: ignore[union-attr]
    if req is not None:
        walk(plan_of(req[1]), req[0].body, False, out.partitions, None, out.request_records if records else None,
             topics, None, None)
    if resp is not None:
        walk(plan_of(resp[1]), resp[0].body, True, out.partitions, out.errors,
             out.response_records if records else None, topics, out.base_offsets if req is not None else None,
             out.brokers if brokers else None)
    return out


# -- the native pairing's detail rows (kafka/_details.c) ---------------------------------------

@dataclass(slots=True)
class LaneParts:
    """The detail rows of a piece of exchanges the native pairing made (``ExchangeRows.details``), what
    ``kafka/_details.c`` fills and ``TableSink`` takes: partitions rows (a column per PARTITION_COLUMNS
    name), request_params rows (a column per details.PARAMS name), each column a list or, for an integer
    column, a typed buffer (``rows.typed``'s NULLABLE records), the topic ids learned, and per
    exchange with error codes, brokers or records one ``left`` tuple, (connection id, correlation id, api
    key, request (offset, ts), response (offset, ts), errors, brokers, request records, response records,
    base offsets), as walk_exchange's Walked parts, whose rows the sink builds; and per topic id learned
    and per ``left`` tuple the index of the segment that completed the exchange in the batch the lanes
    took (``topics_at``, ``left_at``: what an engine placing them in capture order reads)."""

    partitions: tuple[list[Any] | bytearray, ...] = field(
        default_factory=lambda: native_columns("partitions", PARTITION_COLUMNS))
    params: tuple[list[Any] | bytearray, ...] = field(default_factory=lambda: native_columns("request_params", PARAMS))
    topics: dict[uuid.UUID, str] = field(default_factory=dict)
    left: list[tuple] = field(default_factory=list)
    left_at: list[int] = field(default_factory=list)
    topics_at: list[int] = field(default_factory=list)


def new_lane_piece() -> tuple:
    """A piece for the native pairing of a details run: as events.new_rows', then its parts'."""
    parts = LaneParts()
    piece = ExchangeRows(details=parts)
    return (piece, piece.lists, (piece.topics, piece.codes, piece.named), parts.partitions, parts.params,
            parts.topics, parts.left, parts.left_at, parts.topics_at)


def _plan_for(api_key: int, api_version: int, response: bool) -> Plan:
    return plan_of(schema.api_message(api_key, api_version, "response" if response else "request"))


def lane_spec(errors: bool, brokers: bool, records: bool) -> tuple:
    """What ``kafka/_details.c`` reads (``Options.exchange_details``): the decoder's C frame path, the
    walk's plans, the piece factory, the apis whose exchanges go to the session (details.BODY_APIS), those
    without partitions rows, those with a request_params row and its request fields; all from the
    registries; then whether the sink reads a left tuple's errors, brokers and records (one it would not
    read is not made, and records nothing reads are not collected)."""
    return (compiler.frame_decoder, _plan_for, new_lane_piece, BODY_APIS, frozenset(NOT_PARTITION_TRAFFIC),
            PARAMS_APIS, tuple(map(sys.intern, PARAMS[3:])), (errors, brokers, records))
