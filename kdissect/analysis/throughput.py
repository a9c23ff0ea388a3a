"""Records and bytes per topic and partition, and what each compression codec saved.

Counted from record batches (produced in requests, fetched in responses; a fetched batch is the
same data read again, so the two directions are kept apart). Rates are over the capture's span.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


def capture_span_s(tables: Mapping[str, pd.DataFrame]) -> float:
    """Seconds from the first to the last request or response seen (0 for an empty capture)."""
    ex = tables["exchanges"]
    times = [
        t
        for t in (ex["request_ts"].min(), ex["response_ts"].min(), ex["request_ts"].max(), ex["response_ts"].max())
        if t == t and t is not None
    ]
    return (max(times) - min(times)).total_seconds() if times else 0.0


PARTITION_KEY = ["direction", "topic", "partition"]
PARTITION_COLUMNS = [*PARTITION_KEY, "batches", "records", "bytes", "records_per_s", "bytes_per_s"]
CODEC_COLUMNS = ["compression", "batches", "compressed_bytes", "decompressed_bytes", "ratio"]


def per_partition(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per direction, topic and partition: batches, records, bytes on the wire, records/s and bytes/s."""
    import pandas as pd

    b = tables["batches"]
    data = b[~b["is_control"].fillna(False).astype(bool)]
    if data.empty:
        return pd.DataFrame(columns=PARTITION_COLUMNS)
    out = (
        data.groupby(PARTITION_KEY, observed=True, dropna=False)
        .agg(
            batches=("record_count", "size"),
            records=("records_decoded", "sum"),
            bytes=("batch_bytes", "sum"),
        )
        .reset_index()
    )
    return with_rates(out, capture_span_s(tables))


def with_rates(sums: pd.DataFrame, span_s: float) -> pd.DataFrame:
    """Per-partition sums (in ``groupby`` order) with their rates over the span, most bytes first."""
    span = max(span_s, 1e-3)
    sums["records_per_s"] = sums["records"] / span
    sums["bytes_per_s"] = sums["bytes"] / span
    return sums.sort_values("bytes", ascending=False).reset_index(drop=True)[PARTITION_COLUMNS]


def per_topic(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """:func:`per_partition` summed over each topic's partitions."""
    return topic_sums(per_partition(tables))


def topic_sums(parts: pd.DataFrame) -> pd.DataFrame:
    """:func:`per_partition`'s table summed over each topic's partitions."""
    if parts.empty:
        return parts.drop(columns=["partition"])
    out = (
        parts.groupby(["direction", "topic"], observed=True, dropna=False)[
            ["batches", "records", "bytes", "records_per_s", "bytes_per_s"]
        ]
        .sum()
        .reset_index()
    )
    return out.sort_values("bytes", ascending=False).reset_index(drop=True)


def compression(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per codec: batches, compressed and decompressed bytes, and the ratio (decompressed / compressed)."""
    import pandas as pd

    b = tables["batches"]
    b = b[b["compression"].notna() & b["compressed_bytes"].notna() & b["decompressed_bytes"].notna()]
    if b.empty:
        return pd.DataFrame(columns=CODEC_COLUMNS)
    out = (
        b.groupby("compression", observed=True)
        .agg(
            batches=("compressed_bytes", "size"),
            compressed_bytes=("compressed_bytes", "sum"),
            decompressed_bytes=("decompressed_bytes", "sum"),
        )
        .reset_index()
    )
    return with_ratio(out)


def with_ratio(sums: pd.DataFrame) -> pd.DataFrame:
    """Per-codec sums (in ``groupby`` order) with their ratio, most batches first."""
    sums["ratio"] = sums["decompressed_bytes"] / sums["compressed_bytes"].where(sums["compressed_bytes"] > 0)
    return sums.sort_values("batches", ascending=False).reset_index(drop=True)[CODEC_COLUMNS]
