"""The read side of a distributed run: capture files -> work units -> ordered segment rows.

A unit is a whole file, or a byte range of a large classic pcap file (see
:mod:`kdissect.sources.split`). Reading one yields Arrow batches of rows, each a TCP segment with
its connection key and its place in capture order (``pos``: unit index, then order in the unit),
or a capture-level anomaly, or the unit's counters. No pyspark here: a Spark task calls
:func:`read_units`, and tests call it directly.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import BinaryIO

import pyarrow as pa

from kdissect.engines.local import unreadable_file
from kdissect.sources.decoder import CaptureDecoder
from kdissect.sources.files import iter_capture
from kdissect.sources.pcap import GLOBAL_HEADER_LEN
from kdissect.sources.segment import TcpSegment
from kdissect.sources.shapes import CaptureFormatError, SourceAnomaly, SourceEvent, SourceStats
from kdissect.sources.split import PcapLayout, chain_span, pcap_layout, prove_boundary

SEGMENT, ANOMALY, DONE = 0, 1, 2  # row kinds
SEGMENT_SCHEMA = pa.schema([
    ("key", pa.int64()), ("pos", pa.int64()), ("kind", pa.int8()), ("file_index", pa.int32()),
    ("ts", pa.int64()), ("src_ip", pa.string()), ("src_port", pa.int32()), ("dst_ip", pa.string()),
    ("dst_port", pa.int32()), ("seq", pa.int64()), ("ack", pa.int64()), ("flags", pa.int32()),
    ("window", pa.int32()), ("payload", pa.binary()), ("payload_len", pa.int32()),
    ("anomaly", pa.string()), ("offset", pa.int64()), ("detail", pa.string()),
])  # fmt: skip
UNIT_SCHEMA = pa.schema([("index", pa.int32()), ("file_index", pa.int32()), ("path", pa.string()),
                         ("start", pa.int64()), ("end", pa.int64())])  # fmt: skip
_WINDOW = 4 << 20  # bytes read at a time while looking for a proven record boundary
_CHUNK = 1 << 20
_BATCH_BYTES = 8 << 20  # payload bytes per Arrow batch handed to Spark
_RESYNC_AT_END = "stream ended while resyncing: "  # (kdissect.sources.framing's wording)


@dataclass(frozen=True, slots=True)
class Unit:
    """Bytes ``[start, end)`` of file ``path`` (``end`` -1: to its end); ``index`` orders units in
    capture order (files in the order given, ranges in file order)."""

    index: int
    file_index: int
    path: str
    start: int
    end: int


def plan_units(files: Iterable[tuple[str, int | None]], split_bytes: int) -> list[Unit]:
    """Units for ``(path, size)`` pairs (size None when unknown): files above ``split_bytes`` become
    ranges of about that size. Which ranges hold records is found when they are read: a file that
    turns out not to be splittable is read whole by its first range, the others yield nothing."""
    units: list[Unit] = []
    for file_index, (path, size) in enumerate(files):
        if size is None or size <= split_bytes:
            units.append(Unit(len(units), file_index, path, 0, -1))
            continue
        for start in range(0, size, split_bytes):
            end = min(start + split_bytes, size)
            units.append(Unit(len(units), file_index, path, start, -1 if end == size else end))
    return units


def open_input(path: str) -> BinaryIO:
    """A seekable binary file for a local path or any URI pyarrow reads (hdfs://, s3://, ...)."""
    from pyarrow import fs

    if "://" in path:
        filesystem, inner = fs.FileSystem.from_uri(path)
        return filesystem.open_input_file(inner)  # type: ignore[return-value]
    return open(path, "rb")


def connection_key(seg: TcpSegment) -> int:
    """The same number for both directions of a 4-tuple: what sends a connection's segments from
    every file to one task (a collision only puts two connections in the same task)."""
    a, b = f"{seg.src_ip}|{seg.src_port}", f"{seg.dst_ip}|{seg.dst_port}"
    return zlib.crc32((f"{a}|{b}" if a <= b else f"{b}|{a}").encode())


def read_unit(unit: Unit, stats: SourceStats) -> Iterator[SourceEvent]:
    """The unit's segments and anomalies in file order. Raises ``OSError`` and
    ``CaptureFormatError`` as :func:`~kdissect.sources.files.iter_capture` does."""
    with open_input(unit.path) as f:
        layout = pcap_layout(f.read(GLOBAL_HEADER_LEN))
        f.seek(0)
        if unit.start == 0 and (unit.end < 0 or layout is None):
            yield from iter_capture(f, stats=stats)  # a whole file (gzip, pcapng, or small)
            return
        if layout is None:
            return  # a later range of a file that is read whole by its first range
        size = f.seek(0, 2)
        start = GLOBAL_HEADER_LEN if unit.start == 0 else _boundary(f, layout, unit.start, size)
        end = size if unit.end < 0 else _boundary(f, layout, unit.end, size)
        yield from _read_range(f, layout, start, end, stats, end < size)


def _boundary(f: BinaryIO, layout: PcapLayout, at: int, size: int) -> int:
    """The first proven record boundary at or after ``at`` (``size`` if none)."""
    span = chain_span(layout)
    while at < size:
        f.seek(at)
        window = f.read(min(_WINDOW, size - at))
        at_eof = at + len(window) >= size
        found = prove_boundary(layout, window, at_eof=at_eof)
        if found is not None:
            return at + found
        if at_eof:
            break
        at += max(len(window) - span, 1)
    return size


def _read_range(f: BinaryIO, layout: PcapLayout, start: int, end: int, stats: SourceStats, more: bool
                ) -> Iterator[SourceEvent]:  # fmt: skip
    """Records ``[start, end)`` read as the file's header followed by them; anomaly offsets are the
    file's, and the header's own anomalies are left to the file's first range. When ``more`` of the
    file follows, ``end`` is a proven record start: a resync still going on there ends there."""
    decoder = CaptureDecoder(stats=stats)
    later = start > GLOBAL_HEADER_LEN
    shift = start - GLOBAL_HEADER_LEN

    def placed(events: list[SourceEvent]) -> Iterator[SourceEvent]:
        for ev in events:
            if type(ev) is not SourceAnomaly:
                yield ev
            elif ev.offset is None or ev.offset >= GLOBAL_HEADER_LEN:
                yield ev if ev.offset is None else SourceAnomaly(ev.kind, ev.message, ev.offset + shift, ev.ts_ns)
            elif not later:
                yield ev

    yield from placed(decoder.feed(layout.header))
    f.seek(start)
    at = start
    while at < end and (chunk := f.read(min(_CHUNK, end - at))):
        at += len(chunk)
        yield from placed(decoder.feed(chunk))
    for ev in placed(decoder.close()):
        if more and type(ev) is SourceAnomaly and ev.message.startswith(_RESYNC_AT_END):
            ev = SourceAnomaly(ev.kind, ev.message.removeprefix(_RESYNC_AT_END), ev.offset, ev.ts_ns)
        yield ev
    stats.bytes_read -= GLOBAL_HEADER_LEN


def read_units(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Unit rows (``UNIT_SCHEMA``) in, segment rows (``SEGMENT_SCHEMA``) out: a Spark task's read."""
    for batch in batches:
        for row in batch.to_pylist():
            yield from _unit_rows(Unit(**row))


def _unit_rows(unit: Unit) -> Iterator[pa.RecordBatch]:
    rows = _Rows(unit)
    stats = SourceStats()
    error = None
    try:
        for ev in read_unit(unit, stats):
            if type(ev) is TcpSegment:
                rows.segment(ev)
            else:
                rows.anomaly(ev)  # type: ignore[arg-type]
            if rows.bytes >= _BATCH_BYTES:
                yield rows.take()
    except (CaptureFormatError, OSError) as exc:
        # As in the local engine, an anomaly row names the file (OSError: a remote file gone or refused).
        why = CaptureFormatError(f"cannot read: {exc.strerror or exc}") if isinstance(exc, OSError) else exc
        rows.anomaly(unreadable_file(unit.path, why, stats))
        error = str(why)
    rows.done(stats, error)
    yield rows.take()


class _Rows:
    """Segment rows being gathered column by column."""

    def __init__(self, unit: Unit) -> None:
        self.unit = unit
        self.base = unit.index << 32
        self.n = 0
        self.columns: dict[str, list] = {name: [] for name in SEGMENT_SCHEMA.names}
        self.bytes = 0

    def _add(self, key: int, kind: int, values: dict) -> None:
        c = self.columns
        c["key"].append(key)
        c["pos"].append(self.base + self.n)
        c["kind"].append(kind)
        c["file_index"].append(self.unit.file_index)
        for name in ("ts", "src_ip", "src_port", "dst_ip", "dst_port", "seq", "ack", "flags", "window", "payload",
                     "payload_len", "anomaly", "offset", "detail"):  # fmt: skip
            c[name].append(values.get(name))
        self.n += 1

    def segment(self, s: TcpSegment) -> None:
        self._add(connection_key(s), SEGMENT, {
            "ts": s.ts_ns, "src_ip": s.src_ip, "src_port": s.src_port, "dst_ip": s.dst_ip, "dst_port": s.dst_port,
            "seq": s.seq, "ack": s.ack, "flags": s.flags, "window": s.window, "payload": s.payload,
            "payload_len": s.payload_len,
        })  # fmt: skip
        self.bytes += len(s.payload) + 64

    def anomaly(self, a: SourceAnomaly) -> None:
        self._add(self.unit.file_index, ANOMALY, {"ts": a.ts_ns, "offset": a.offset, "anomaly": a.kind,
                                                  "detail": a.message})  # fmt: skip

    def done(self, stats: SourceStats, error: str | None) -> None:
        counters = {**asdict(stats), "error": error}
        self._add(self.unit.file_index, DONE, {"detail": json.dumps(counters)})

    def take(self) -> pa.RecordBatch:
        batch = pa.RecordBatch.from_pydict(self.columns, schema=SEGMENT_SCHEMA)
        self.columns = {name: [] for name in SEGMENT_SCHEMA.names}
        self.bytes = 0
        return batch
