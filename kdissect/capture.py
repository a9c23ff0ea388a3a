"""The library front door: ``kdissect.open_capture(path)`` -> tables and decoded messages."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cached_property
from os import PathLike

import pandas as pd

from kdissect.kafka.session import DEFAULT_PORTS, Options
from kdissect.engines.local import RunStats, iter_events
from kdissect.events import Exchange, KafkaEvent, KafkaMessage
from kdissect.kafka.framing import DEFAULT_MAX_FRAME
from kdissect.tables.record_rows import RecordOptions
from kdissect.tables.sink import TableSink

PathArg = str | PathLike[str]


def _table(name: str) -> property:
    """A read-only attribute for one table (the whole capture is analysed on first access)."""
    return property(lambda self: self._tables[name], doc=f"The ``{name}`` table (pandas DataFrame).")


class Capture:
    """One or more capture files, analysed lazily on first table access.

    Tables are pandas DataFrames: ``exchanges``, ``partitions``, ``errors``, ``connections``,
    ``brokers``, ``records``, ``batches``, ``anomalies``. :meth:`events` and :meth:`messages`
    stream the capture again without keeping it in memory.
    """

    def __init__(self, paths: Sequence[PathArg], options: Options, records: RecordOptions | None = None) -> None:
        self.paths = list(paths)
        self.options = options
        self.record_options = records or RecordOptions()
        self.stats = RunStats()

    def events(self) -> Iterator[KafkaEvent]:
        """Every exchange, anomaly and connection summary, streamed in capture order."""
        return iter_events(self.paths, self.options)

    def exchanges_iter(self) -> Iterator[Exchange]:
        return (ev for ev in self.events() if isinstance(ev, Exchange))

    def messages(self) -> Iterator[KafkaMessage]:
        """Decoded messages (request, then its response), with header, body, timestamps, connection."""
        for ex in self.exchanges_iter():
            if ex.request is not None:
                yield ex.request
            if ex.response is not None:
                yield ex.response

    @cached_property
    def _tables(self) -> dict[str, pd.DataFrame]:
        sink = TableSink(records=self.record_options)
        sink.consume_all(iter_events(self.paths, self.options, stats=self.stats))
        return sink.frames()

    exchanges = _table("exchanges")
    partitions = _table("partitions")
    errors = _table("errors")
    connections = _table("connections")
    brokers = _table("brokers")
    records = _table("records")
    batches = _table("batches")
    anomalies = _table("anomalies")


def open_capture(
    path_or_paths: PathArg | Sequence[PathArg],
    *,
    ports: Sequence[int] = DEFAULT_PORTS,
    auto_detect: bool = True,
    max_frame: int = DEFAULT_MAX_FRAME,
    records: RecordOptions | None = None,
) -> Capture:
    """Open capture file(s) (pcap, pcapng, gzip of either) for analysis.

    ``ports`` are where brokers listen; with ``auto_detect`` any other TCP connection whose
    bytes decode as Kafka requests is analysed too. ``records`` sets how much of each record
    payload to keep and the per-batch decompression cap (see ``kdissect.RecordOptions``).
    """
    paths = [path_or_paths] if isinstance(path_or_paths, str | PathLike) else list(path_or_paths)
    options = Options(ports=tuple(ports), auto_detect=auto_detect, max_frame=max_frame)
    return Capture(paths, options, records)
