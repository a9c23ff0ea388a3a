"""One definition of every table's columns and types, shared by pandas, Parquet and Spark.

Types are abstract names mapped to each backend here, so a column added once shows up
with the same type everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

import numpy as np
import pandas as pd

# abstract type -> pandas dtype
_PANDAS = {
    "int64": "Int64",
    "int32": "Int32",
    "int16": "Int16",
    "int8": "Int8",
    "float64": "Float64",
    "bool": "boolean",
    "string": "string",
    "category": "category",
    "timestamp": "datetime64[ns, UTC]",
    "bytes": "object",
    "headers": "object",
}

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
        ("end_reason", "category"),
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
    ],
}


@dataclass(slots=True)
class Runs:
    """A column given as runs, ``values[i]`` repeated ``counts[i]`` times: what a value shared by a
    batch's records costs once per batch instead of once per record."""

    values: list[Any] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)

    def expand(self) -> list[Any]:
        out: list[Any] = []
        for value, n in zip(self.values, self.counts, strict=True):
            out.extend(repeat(value, n))
        return out


def to_dataframe(table: str, columns: Mapping[str, list[Any] | Runs]) -> pd.DataFrame:
    """Columns (values per column name, None for null) as a DataFrame with the table's declared dtypes.

    Timestamps are given as integer nanoseconds since the epoch (UTC).
    """
    data = {name: _column(kind, columns[name]) for name, kind in TABLES[table]}
    return pd.DataFrame(data, columns=list(data), copy=False)


def _column(kind: str, column: list[Any] | Runs) -> Any:
    if isinstance(column, Runs):  # convert each run's value once, then repeat it
        return _array(kind, column.values).take(np.repeat(np.arange(len(column.values)), column.counts))
    return _array(kind, column)


# kinds that go through numpy: the numpy type of their values
_NUMPY = {"int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8, "bool": np.bool_,
          "timestamp": np.int64}


def _array(kind: str, values: list[Any]) -> Any:
    """One column as a pandas array. Numbers and objects go through numpy, many times faster than
    pandas' element-by-element inference; whatever numpy cannot take goes to pandas as before."""
    if kind in _NUMPY:
        masked = _masked(values, _NUMPY[kind])
        if kind == "timestamp":
            return pd.to_datetime(masked if masked is not None else pd.array(values, dtype="Int64"), unit="ns",
                                  utc=True)
        return masked if masked is not None else pd.array(values, dtype=_PANDAS[kind])
    if kind == "category":  # (all null: pandas infers float categories from a list, kept as they were)
        return pd.Categorical(_objects(values) if values.count(None) != len(values) else values)
    if kind in ("bytes", "headers"):
        return pd.array(_objects(values), dtype=object)
    return pd.array(values, dtype=_PANDAS[kind])


def _objects(values: list[Any]) -> np.ndarray:
    """A 1-d object array of the values as they are (lists stay cells, not a dimension)."""
    return np.fromiter(values, dtype=object, count=len(values))


def _masked(values: list[Any], dtype: type) -> Any:
    """The values (None: null) as a pandas masked array of ``dtype``, or None when they are not all
    of that type or out of its range."""
    wide_type = np.bool_ if dtype is np.bool_ else np.int64
    try:
        if None in values:
            objects = _objects(values)
            mask = np.equal(objects, None)
            objects[mask] = 0
            wide = objects.astype(wide_type)
        else:
            mask = np.zeros(len(values), dtype=np.bool_)
            wide = np.array(values, dtype=wide_type)
    except (TypeError, ValueError, OverflowError):
        return None
    if dtype is np.bool_:
        return pd.arrays.BooleanArray(wide, mask)
    data = wide.astype(dtype)
    if not np.array_equal(data, wide):
        return None
    return pd.arrays.IntegerArray(data, mask)


def arrow_schema(table: str):
    """The table's fixed Arrow schema, so files written in pieces have one schema whatever each
    piece holds (categories as int32-indexed dictionaries, headers as key/value structs)."""
    import pyarrow as pa

    types = {
        "int64": pa.int64(), "int32": pa.int32(), "int16": pa.int16(), "int8": pa.int8(),
        "float64": pa.float64(), "bool": pa.bool_(), "string": pa.string(),
        "category": pa.dictionary(pa.int32(), pa.string()), "timestamp": pa.timestamp("ns", tz="UTC"),
        "bytes": pa.binary(), "headers": pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
    }
    return pa.schema([(name, types[kind]) for name, kind in TABLES[table]])
