"""Throughput (:mod:`kdissect.analysis.throughput`'s tables) and the overview's record count as a
mergeable value fed by the run's pieces of ``batches``, so the report never holds a batch row.

Per (direction, topic, partition): batches, records and bytes of data batches (control batches left
out); per codec: batches, compressed and decompressed bytes. Topics are chosen by clients, so the
partitions kept are bounded (:class:`~kdissect.analysis.bounded.Groups`, the rest in one ``(other)``
row); codecs are the protocol's few. The tables are then made by the same code as from the batches
table (:func:`~kdissect.analysis.throughput.with_rates`, :func:`~kdissect.analysis.throughput.with_ratio`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kdissect.analysis.bounded import KEY_LIMIT, OTHER, Groups
from kdissect.analysis.placed import topic_key
from kdissect.analysis.throughput import CODEC_COLUMNS, PARTITION_COLUMNS, PARTITION_KEY, with_rates, with_ratio
from kdissect.tables.columns import cells
from kdissect.tables.sink import Columns

if TYPE_CHECKING:
    import pandas as pd


class Sums:
    """A few running sums."""

    __slots__ = ("values",)

    def __init__(self, size: int = 3) -> None:
        self.values = [0] * size

    def merge(self, other: Sums) -> None:
        self.values = [a + b for a, b in zip(self.values, other.values, strict=True)]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sums) and self.values == other.values


class BatchFigures:
    def __init__(self, limit: int = KEY_LIMIT) -> None:
        self.partitions: Groups[Sums] = Groups(Sums, limit)  # (direction, topic, partition) -> batches, records, bytes
        self.codecs: dict[str, Sums] = {}  # codec -> batches, compressed bytes, decompressed bytes
        self.records = 0  # data records decoded

    def add_batches(self, b: Columns) -> None:
        names = ("direction", "topic", "partition", "is_control", "records_decoded", "batch_bytes", "compression",
                 "compressed_bytes", "decompressed_bytes")  # fmt: skip
        n = len(cells(b["direction"]))
        ids = cells(b["_topic_id"]) if "_topic_id" in b else [None] * n  # (a Spark task's: see analysis.placed)
        rows = zip(*(cells(b[c]) for c in names), ids, strict=True)
        for direction, topic, partition, control, records, size, codec, compressed, decompressed, tid in rows:
            if not control:
                sums = self.partitions.get((direction, topic_key(topic, tid), partition)).values
                sums[0] += 1
                sums[1] += records or 0
                sums[2] += size or 0
                self.records += records or 0
            if codec is not None and compressed is not None and decompressed is not None:
                totals = self.codecs.setdefault(codec, Sums()).values
                totals[0] += 1
                totals[1] += compressed
                totals[2] += decompressed

    def merge(self, other: BatchFigures) -> None:
        self.partitions.merge(other.partitions)
        for codec, sums in other.codecs.items():
            self.codecs.setdefault(codec, Sums()).merge(sums)
        self.records += other.records

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BatchFigures) and (self.partitions, self.codecs, self.records) == (
            other.partitions, other.codecs, other.records)  # fmt: skip

    def per_partition(self, span_s: float) -> pd.DataFrame:
        """:func:`kdissect.analysis.throughput.per_partition`'s table."""
        import pandas as pd

        groups = sorted(self.partitions.groups.items(), key=lambda kv: [(v is None, v) for v in kv[0]])  # type: ignore[attr-defined]
        rows = [(*key, *sums.values) for key, sums in groups]  # type: ignore[misc]
        other = self.partitions.other.values
        if other[0]:
            rows.append((OTHER, None, None, *other))
        if not rows:
            return pd.DataFrame(columns=PARTITION_COLUMNS)
        return with_rates(pd.DataFrame(rows, columns=[*PARTITION_KEY, "batches", "records", "bytes"]), span_s)

    def compression(self) -> pd.DataFrame:
        """:func:`kdissect.analysis.throughput.compression`'s table."""
        import pandas as pd

        rows = [(codec, *self.codecs[codec].values) for codec in sorted(self.codecs)]
        if not rows:
            return pd.DataFrame(columns=CODEC_COLUMNS)
        return with_ratio(pd.DataFrame(rows, columns=CODEC_COLUMNS[:-1]))
