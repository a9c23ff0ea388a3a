"""The library front door: ``kdissect.open_capture(path)`` -> tables and decoded messages."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from functools import cached_property
from os import PathLike
from typing import Any

import pandas as pd

from kdissect.engines import local
from kdissect.events import Exchange, KafkaEvent, KafkaMessage
from kdissect.options import Options
from kdissect.tables.frames import to_dataframe

PathArg = str | PathLike[str]


def _table(name: str) -> property:
    """A read-only attribute for one table (the whole capture is analysed on first access)."""
    return property(lambda self: self._tables[name], doc=f"The ``{name}`` table (pandas DataFrame).")


class Capture:
    """One or more capture files, analysed lazily on first table access.

    Tables are pandas DataFrames: ``exchanges``, ``partitions``, ``errors``, ``connections``,
    ``brokers``, ``records``, ``batches``, ``anomalies``, and the request details the analysis reads
    (``request_params``, ``group_events``, ``txn_events``, ``metadata_partitions``). :meth:`events` and :meth:`messages`
    stream the capture again without keeping it in memory.
    """

    def __init__(self, paths: Sequence[PathArg], options: Options | None = None) -> None:
        self.paths = list(paths)
        self.options = options or Options()
        self.stats = local.RunStats()

    def events(self) -> Iterator[KafkaEvent]:
        """Every exchange, anomaly and connection summary, streamed in capture order."""
        return local.events(self.paths, self.options)

    def exchanges_iter(self) -> Iterator[Exchange]:
        return (ex for ex, _ in local.exchanges(self.paths, self.options))

    def messages(self) -> Iterator[KafkaMessage]:
        """Decoded messages (request, then its response), with header, body, timestamps, connection."""
        for ex in self.exchanges_iter():
            if ex.request is not None:
                yield ex.request
            if ex.response is not None:
                yield ex.response

    @cached_property
    def _tables(self) -> dict[str, pd.DataFrame]:
        run = local.analyze(self.paths, self.options)
        self.stats = run.stats
        return {name: to_dataframe(name, columns) for name, columns in run.tables.items()}

    exchanges = _table("exchanges")
    partitions = _table("partitions")
    errors = _table("errors")
    connections = _table("connections")
    brokers = _table("brokers")
    records = _table("records")
    batches = _table("batches")
    anomalies = _table("anomalies")
    request_params = _table("request_params")
    group_events = _table("group_events")
    txn_events = _table("txn_events")
    metadata_partitions = _table("metadata_partitions")

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table by name: what the :mod:`kdissect.analysis` functions take."""
        return dict(self._tables)


def open_capture(path_or_paths: PathArg | Sequence[PathArg], options: Options | None = None, **knobs: Any) -> Capture:
    """Open capture file(s) (pcap, pcapng, gzip of either; a directory stands for the capture files
    in it) for analysis. Raises ``FileNotFoundError`` at once for a path that does not exist.

    Settings are a :class:`kdissect.Options`, or its fields given by name: ``ports`` (where
    brokers listen), ``auto_detect`` (also analyse other TCP connections whose bytes decode as
    Kafka requests), ``max_frame``, ``payloads`` (how much of each record key and value to keep,
    e.g. ``kdissect.Payloads.preview(64)``), ``limits`` (``kdissect.Limits(max_decompressed=...)``,
    the per-batch decompression cap) and the other resource bounds (``max_connections``,
    ``payload_bytes``, ...: see :class:`kdissect.Options`).
    """
    paths = [path_or_paths] if isinstance(path_or_paths, str | PathLike) else list(path_or_paths)
    paths = local.capture_paths(paths)  # a missing file fails here, not at the first table access
    if "ports" in knobs:
        knobs["ports"] = tuple(knobs["ports"])
    return Capture(paths, replace(options or Options(), **knobs))
