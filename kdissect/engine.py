"""The local engine: capture files -> core pipeline -> sinks. A thin shell over the core.

Files are read in chunks and streamed, so a multi-GB capture never sits in memory; the
same :class:`~kdissect.pipeline.KafkaPipeline` serves the live and Spark engines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import BinaryIO

from .connection import Options
from .events import Anomaly, KafkaEvent
from .pipeline import KafkaPipeline
from .reassembly.segment import TcpSegment
from .sources.events import SourceAnomaly, SourceStats
from .sources.files import iter_capture

Progress = Callable[[int], None]  # called with bytes read since the last call


class _CountingReader:
    """A binary file that reports how much was read (for progress bars)."""

    def __init__(self, raw: BinaryIO, progress: Progress) -> None:
        self._raw = raw
        self._progress = progress

    def read(self, n: int = -1) -> bytes:
        data = self._raw.read(n)
        self._progress(len(data))
        return data


@dataclass(slots=True)
class RunStats:
    """Counters for the summary line: what was read and what could not be decoded."""

    files: int = 0
    packets: int = 0
    tcp_segments: int = 0
    non_tcp: int = 0
    bytes_read: int = 0
    source_anomalies: int = 0
    per_file: list[SourceStats] = field(default_factory=list)


def _source_anomaly(a: SourceAnomaly) -> Anomaly:
    return Anomaly(a.kind, None, None, a.offset, None, a.ts_ns, a.message)


def iter_events(
    paths: Iterable[str | PathLike[str]],
    options: Options | None = None,
    *,
    stats: RunStats | None = None,
    progress: Progress | None = None,
) -> Iterator[KafkaEvent]:
    """Every Kafka event of the captures, in order. Files are read one after the other as
    one capture (rotated capture files continue each other's connections)."""
    pipeline = KafkaPipeline(options)
    budget = pipeline.options.budget
    stats = stats if stats is not None else RunStats()
    for path in paths:
        stats.files += 1
        source_stats = SourceStats()
        with Path(path).open("rb") as raw:
            reader: BinaryIO = _CountingReader(raw, progress) if progress else raw  # type: ignore[assignment]
            for item in iter_capture(reader, stats=source_stats, budget=budget):
                if isinstance(item, TcpSegment):
                    yield from pipeline.feed(item)
                else:
                    stats.source_anomalies += 1
                    yield _source_anomaly(item)
        stats.per_file.append(source_stats)
        stats.packets += source_stats.packets
        stats.tcp_segments += source_stats.tcp_segments
        stats.non_tcp += source_stats.non_tcp
        stats.bytes_read += source_stats.bytes_read
    yield from pipeline.finish()
