"""One definition of every table's columns and types, shared by pandas, Parquet and Spark.

Types are abstract names, mapped to each backend by its own module (``frames`` for pandas,
``arrow`` for Arrow/Parquet), so a column added once shows up with the same type everywhere.
This module imports neither (and numpy only when a typed part is converted): the command line writes Parquet without
loading pandas.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field, fields
from itertools import repeat
from struct import calcsize, iter_unpack, pack
from typing import Any

from kdissect.dataclass import dataclass
from kdissect.lazy import lazy_module
from kdissect.reassembly.streams import DirectionStats

np = lazy_module("numpy")

# The reassembler's counters, per direction in the connections table (``tcp_<counter>_to_broker``, ...).
TCP_COUNTERS = tuple(f.name for f in fields(DirectionStats))

TABLES: dict[str, list[tuple[str, str]]] = {
    "exchanges": [
        ("connection_id", "int64"),
        ("client_ip", "category"),
        ("client_port", "int32"),
        ("broker_ip", "category"),
        ("broker_port", "int32"),
        ("api_key", "int16"),
        ("api_name", "category"),
        ("api_version", "int16"),
        ("correlation_id", "int32"),
        ("client_id", "category"),
        ("request_ts", "timestamp"),
        ("response_ts", "timestamp"),
        ("latency_ms", "float64"),
        ("total_ms", "float64"),
        ("request_bytes", "int64"),
        ("response_bytes", "int64"),
        ("error_code", "int16"),
        ("error_name", "category"),
        ("error_count", "int32"),
        ("throttle_time_ms", "int32"),
        ("status", "category"),
        ("out_of_order", "bool"),
        ("inferred", "bool"),
        ("warnings", "string"),
    ],
    "partitions": [
        ("connection_id", "int64"),
        ("correlation_id", "int32"),
        ("api_key", "int16"),
        ("api_name", "category"),
        ("request_ts", "timestamp"),
        ("topic", "category"),
        ("topic_id", "string"),
        ("partition", "int32"),
        ("error_code", "int16"),
        ("error_name", "category"),
        ("fetch_offset", "int64"),
        ("committed_offset", "int64"),
        ("offset", "int64"),
        ("base_offset", "int64"),
        ("high_watermark", "int64"),
        ("last_stable_offset", "int64"),
        ("log_start_offset", "int64"),
        ("timestamp", "int64"),
        ("leader_epoch", "int32"),
        ("record_count", "int64"),
        ("request_records_bytes", "int64"),
        ("response_records_bytes", "int64"),
    ],
    "errors": [
        ("connection_id", "int64"),
        ("correlation_id", "int32"),
        ("api_key", "int16"),
        ("api_name", "category"),
        ("response_ts", "timestamp"),
        ("path", "string"),
        ("error_code", "int16"),
        ("error_name", "category"),
        ("retriable", "bool"),
        ("topic", "category"),
        ("partition", "int32"),
        ("group", "category"),
        ("error_message", "string"),
    ],
    "connections": [
        ("connection_id", "int64"),
        ("client_ip", "category"),
        ("client_port", "int32"),
        ("broker_ip", "category"),
        ("broker_port", "int32"),
        ("is_kafka", "bool"),
        ("first_ts", "timestamp"),
        ("last_ts", "timestamp"),
        ("bytes_to_broker", "int64"),
        ("bytes_to_client", "int64"),
        ("frames_to_broker", "int64"),
        ("frames_to_client", "int64"),
        ("gaps", "int64"),
        ("gap_bytes", "int64"),
        ("retransmissions", "int64"),
        ("skipped_bytes", "int64"),
        ("client_ids", "string"),
        ("software_name", "category"),
        ("software_version", "category"),
        ("encrypted", "bool"),
        ("sasl", "category"),
        ("sasl_tokens", "int64"),
        ("sasl_user", "string"),
        ("sasl_principal", "string"),
        ("sasl_result", "category"),
        ("sasl_error", "string"),
        ("sasl_reauths", "int32"),
        ("sasl_session_lifetime_ms", "int64"),
        ("end_reason", "category"),
        ("tls_version", "category"),
        ("cipher_suite", "category"),
        ("sni", "string"),
        ("alpn", "category"),
        ("tls_resumed", "bool"),
        ("decryption", "category"),
        *((f"tcp_{name}_{side}", "int64") for side in ("to_broker", "to_client") for name in TCP_COUNTERS),
    ],
    "brokers": [
        ("node_id", "int32"),
        ("host", "string"),
        ("port", "int32"),
        ("rack", "string"),
        ("source", "category"),
        ("first_seen", "timestamp"),
    ],
    "records": [
        ("connection_id", "int64"),
        ("correlation_id", "int32"),
        ("direction", "category"),
        ("topic", "category"),
        ("partition", "int32"),
        ("offset", "int64"),
        ("timestamp", "timestamp"),
        ("timestamp_type", "category"),
        ("key", "bytes"),
        ("value", "bytes"),
        ("key_size", "int32"),
        ("value_size", "int32"),
        ("headers", "headers"),  # [(key, value bytes or None), ...]
        ("batch_base_offset", "int64"),
        ("magic", "int8"),
        ("compression", "category"),
        ("batch_bytes", "int64"),
        ("batch_compressed_bytes", "int64"),
        ("crc_ok", "bool"),
        ("is_control", "bool"),
        ("control_type", "category"),
        ("producer_id", "int64"),
        ("producer_epoch", "int16"),
        ("base_sequence", "int32"),
        ("transactional", "bool"),
        ("aborted", "bool"),
        ("aborted_by", "category"),  # the rule that marked it (kdissect.tables.transactions)
    ],
    "batches": [
        ("connection_id", "int64"),
        ("correlation_id", "int32"),
        ("direction", "category"),
        ("topic", "category"),
        ("partition", "int32"),
        ("position", "int64"),
        ("base_offset", "int64"),
        ("last_offset", "int64"),
        ("magic", "int8"),
        ("compression", "category"),
        ("record_count", "int64"),
        ("records_decoded", "int64"),
        ("batch_bytes", "int64"),
        ("compressed_bytes", "int64"),
        ("decompressed_bytes", "int64"),
        ("compression_ratio", "float64"),
        ("crc_ok", "bool"),
        ("complete", "bool"),
        ("is_control", "bool"),
        ("transactional", "bool"),
        ("producer_id", "int64"),
        ("producer_epoch", "int16"),
        ("base_sequence", "int32"),
        ("warnings", "string"),
    ],
    "anomalies": [
        ("kind", "category"),
        ("connection_id", "int64"),
        ("direction", "category"),
        ("stream_offset", "int64"),
        ("length", "int64"),
        ("ts", "timestamp"),
        ("detail", "string"),
        ("count", "int64"),  # anomalies this row stands for (past 100 of a kind on a connection: one row)
    ],
    # What makes a latency long by design: a Fetch's wait, a Produce's acks, a JoinGroup's timeouts.
    "request_params": [
        ("connection_id", "int64"),
        ("correlation_id", "int32"),
        ("api_key", "int16"),
        ("max_wait_ms", "int32"),
        ("min_bytes", "int32"),
        ("isolation_level", "int8"),
        ("acks", "int16"),
        ("transactional_id", "string"),
        ("session_timeout_ms", "int32"),
        ("rebalance_timeout_ms", "int32"),
    ],
    # Consumer-group requests (classic and KIP-848), with generations and decoded assignments.
    "group_events": [
        ("connection_id", "int64"),
        ("correlation_id", "int32"),
        ("api_name", "category"),
        ("request_ts", "timestamp"),
        ("response_ts", "timestamp"),
        ("latency_ms", "float64"),
        ("client_id", "category"),
        ("group_id", "category"),
        ("member_id", "string"),
        ("generation", "int32"),  # generation id, or member epoch (KIP-848)
        ("protocol", "category"),
        ("leader", "string"),
        ("members", "int32"),  # members a JoinGroup answer lists (the leader's)
        ("assignment", "string"),  # "topic[0,1] other[2]"
        ("error_name", "category"),
    ],
    # Transaction requests: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn.
    "txn_events": [
        ("connection_id", "int64"),
        ("correlation_id", "int32"),
        ("api_name", "category"),
        ("request_ts", "timestamp"),
        ("latency_ms", "float64"),
        ("client_id", "category"),
        ("transactional_id", "category"),
        ("producer_id", "int64"),
        ("producer_epoch", "int16"),
        ("committed", "bool"),  # EndTxn: commit (true) or abort
        ("partitions", "string"),
        ("group_id", "category"),
        ("error_name", "category"),
    ],
    # Every partition of every Metadata answer: the cluster's state as the brokers described it.
    "metadata_partitions": [
        ("connection_id", "int64"),
        ("correlation_id", "int32"),
        ("response_ts", "timestamp"),
        ("topic", "category"),
        ("partition", "int32"),
        ("leader_id", "int32"),
        ("leader_epoch", "int32"),
        ("replicas", "string"),  # node ids, comma-separated
        ("isr", "string"),
        ("offline_replicas", "string"),
        ("error_name", "category"),
    ],
}
# The kinds whose cells the native pairing may hand over as typed buffers (int64 in machine order,
# tables/_typed.c): what tables.rows.typed reads back.
INTEGER_KINDS = frozenset({"int64", "int32", "int16", "int8", "timestamp"})
# Every table says which capture file its rows came from: for a row of a connection, the file in which
# the connection was first seen (rotated files continue connections); for a capture-level anomaly, its file.
for _columns in TABLES.values():
    _columns.append(("source_file", "category"))
DETAIL_TABLES = ("request_params", "group_events", "txn_events", "metadata_partitions")


@dataclass(slots=True)
class Runs:
    """A column given as runs, ``values[i]`` repeated ``counts[i]`` times: what a value shared by a
    batch's records costs once per batch instead of once per record. ``values`` is a list, or for an
    integer column a typed buffer of NULLABLE records (no Python object per run: :func:`typed_cell`)."""

    values: list[Any] | bytearray = field(default_factory=list)
    counts: list[int] = field(default_factory=list)

    def value_list(self) -> list[Any]:
        """The runs' values as Python values (None: null)."""
        values = self.values
        return Typed(values, NULLABLE).tolist() if type(values) is bytearray else values

    def append(self, value: Any) -> None:
        """One more run's value (its count goes to ``counts``, shared by a table's runs)."""
        if type(self.values) is bytearray:
            self.values += typed_cell(value)
        else:
            self.values.append(value)

    def expand(self) -> list[Any]:
        out: list[Any] = []
        for value, n in zip(self.value_list(), self.counts, strict=True):
            out.extend(repeat(value, n))
        return out


NULLABLE = "n"  # a typed buffer of tables/_typed.c's records: int64 in machine order, then 1 (valid) or 0 (null)
_RECORD = [("value", "=i8"), ("valid", "u1")]  # its numpy dtype (packed: TYPED_RECORD bytes)
_RECORD_SIZE = calcsize(_PACKED := "=qB")  # (its size without numpy: measuring a column must not load it)
_NULL_CELL = bytes(_RECORD_SIZE)


def typed_cell(value: int | None) -> bytes:
    """One NULLABLE record, as ``tables/_typed.c``'s typed_append writes it (its Python twin): null for
    None and for an integer int64 cannot hold."""
    return _NULL_CELL if value is None or not -(2**63) <= value < 2**63 else pack(_PACKED, value, 1)


@dataclass(slots=True)
class Typed:
    """A run of a column's cells as machine values in one buffer, no Python object per cell: what the
    native pairing's typed buffers become (``code``: a numpy type code, ``events.EXCHANGE_TYPED``; or
    NULLABLE, ``tables/_typed.c``'s records). Wide types only (int64, float64, bool): the Arrow
    conversion narrows them to the column's type, joining a column's parts in one buffer."""

    buffer: bytearray
    code: str

    def __len__(self) -> int:
        return len(self.buffer) // (_RECORD_SIZE if self.code == NULLABLE else calcsize(self.code))

    def arrays(self) -> tuple[np.ndarray, np.ndarray | None]:
        """The values (copied out of the buffer, which may grow later) and their nulls (None: none)."""
        if self.code != NULLABLE:
            return np.frombuffer(self.buffer, dtype=self.code).copy(), None
        cells = np.frombuffer(self.buffer, dtype=_RECORD)
        valid = cells["valid"].astype(np.bool_)
        return cells["value"].copy(), None if valid.all() else ~valid

    def tolist(self) -> list[Any]:
        """The cells as Python values (None: null), read by the buffer protocol: no numpy."""
        if self.code != NULLABLE:
            return memoryview(self.buffer).cast(self.code).tolist()
        return [value if valid else None for value, valid in iter_unpack(_PACKED, self.buffer)]


@dataclass(slots=True)
class Parts:
    """A column given in consecutive parts: lists of values, :class:`Typed` arrays, and ``(block, name)``
    pairs for rows still held as a :class:`~kdissect.tables.blocks.RecordBlock`'s buffers. A list part may
    be a native piece's own list, kept as it came (extending one list per column by each piece moved the
    whole column each time the list grew by its eighth): such a part is never changed. Values added one
    by one (``append``, ``extend``) go to ``open``, a list of the column's own after the last part."""

    parts: list[Any] = field(default_factory=list)
    open: list[Any] | None = None  # the list values added go to, while it is the last part

    def lists(self) -> list[list[Any]]:
        """Each part as a list (a list part itself: read it, do not change it)."""
        return [part if type(part) is list else part.tolist() if type(part) is Typed else part[0].listed(part[1])
                for part in self.parts]  # fmt: skip

    def expand(self) -> list[Any]:
        return end_to_end(self.lists())

    def tail(self) -> list[Any]:
        """The list that values added after the last part go to (the column's own, never a piece's)."""
        if self.open is None or not self.parts or self.parts[-1] is not self.open:
            self.open = []
            self.parts.append(self.open)
        return self.open

    def append(self, value: Any) -> None:
        self.tail().append(value)

    def extend(self, values: Iterable[Any]) -> None:
        self.tail().extend(values)


def end_to_end(lists: Iterable[list[Any]]) -> list[Any]:
    """The lists' cells end to end, in one new list made at its size (a list extended list by list
    moves its cells again each time it grows by its eighth)."""
    lists = list(lists)
    out: list[Any] = [None] * sum(map(len, lists))
    at = 0
    for part in lists:
        out[at : at + len(part)] = part
        at += len(part)
    return out


def cells(column: list[Any] | Runs | Parts) -> list[Any]:
    """A column as the plain list of its cells."""
    return column if isinstance(column, list) else column.expand()
