"""The read side of a distributed run: capture files -> work units -> ordered segment rows.

A unit is a whole file, or a byte range of a large classic pcap file or local pcapng file (see
:mod:`kdissect.sources.split`). Reading one yields Arrow batches of rows, each a TCP segment with
its connection key and its place in capture order (``pos``: unit index, then order in the unit),
or a capture-level anomaly, or the unit's counters. No pyspark here: a Spark task calls
:func:`read_units`, and tests call it directly.

A first pass (:func:`unit_census`, merged into a :class:`Census`) finds the connections that cross
units; the read task decodes every other one itself, with the decoder it is given, and hands on
only that decoder's pieces (``PIECE`` rows) in place of their segments.

A segment's payload travels by reference when its bytes lie as they are in a local file
(``payload_at``: their offset there; :class:`MappedFiles` reads them back after the shuffle), and
inline otherwise (gzip, remote URIs, datagrams rebuilt from fragments).

Segments that travel by reference (and those without payload) are packed: a ``RUN`` row holds up
to ``RUN_SEGMENTS`` segments of one 4-tuple from one unit as an array of fixed-size headers
(``RUN_HEADER``), so Spark moves, shuffles and sorts a row per run instead of a row per segment,
which cost several times the packing (``bench/bench_spark_rows.py``). Where the sources' native path
takes the records, it hands them over packed (``PackedSegments``: headers and payload offsets, no
object per segment), and the runs and the census are made from those arrays with numpy; the records
it leaves to Python (and every record without the native path: the reference) go one segment at a
time. A run's ``pos`` is its first
segment's and its ``ts`` its earliest segment's, so it sorts (``segment_order``) before every one of its
segments; a decode task merges the runs back into that order (:mod:`kdissect.engines.partition`).
"""

from __future__ import annotations

import json
import mmap
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from itertools import pairwise
from socket import AF_INET, AF_INET6, inet_ntop
from typing import BinaryIO, Protocol

import numpy as np
import pyarrow as pa

from kdissect.dataclass import dataclass
from kdissect.engines.run import unreadable_file
from kdissect.engines.storage import is_local, local_path, open_input
from kdissect.sources import native_records
from kdissect.sources.decoder import CaptureDecoder
from kdissect.sources.files import iter_capture
from kdissect.sources.gunzip import GZIP_MAGIC
from kdissect.sources.native_records import PACKED_FIELDS, PackedSegments
from kdissect.sources.pcap import GLOBAL_HEADER_LEN
from kdissect.sources.pcapng import SHB_MAGIC
from kdissect.sources.segment import TcpSegment
from kdissect.sources.shapes import (
    TLS_KEY_LOG,
    CaptureFormatError,
    CaptureRecord,
    DecryptionSecrets,
    SourceAnomaly,
    SourceEvent,
    SourceStats,
)
from kdissect.sources.split import PcapLayout, chain_span, pcap_layout, pcapng_cuts, prove_boundary

SEGMENT, ANOMALY, DONE, RUN, PIECE = 0, 1, 2, 3, 5  # row kinds (PIECE: an envelope row of a unit's own decoding)
SEGMENT_SCHEMA = pa.schema([
    ("key", pa.int64()), ("pos", pa.int64()), ("kind", pa.int8()), ("file_index", pa.int32()),
    ("ts", pa.int64()), ("src_ip", pa.string()), ("src_port", pa.int32()), ("dst_ip", pa.string()),
    ("dst_port", pa.int32()), ("seq", pa.int64()), ("ack", pa.int64()), ("flags", pa.int32()),
    ("window", pa.int32()), ("payload", pa.binary()), ("payload_len", pa.int32()),
    ("anomaly", pa.string()), ("offset", pa.int64()), ("detail", pa.string()),
    ("payload_at", pa.int64()), ("captured", pa.int32()), ("run", pa.binary()),
])  # fmt: skip
# A run's segments: place in capture order, TCP header fields, where the payload lies (-1: none),
# and whether the segment goes from the run's source (the 4-tuple of the row) or back to it.
RUN_HEADER = np.dtype([("pos", "<i8"), ("ts", "<i8"), ("seq", "<i8"), ("ack", "<i8"), ("flags", "<i4"),
                       ("window", "<i4"), ("payload_len", "<i4"), ("captured", "<i4"), ("payload_at", "<i8"),
                       ("forward", "i1")])  # fmt: skip
RUN_SEGMENTS = 4096
# sources/_runs.c reads RUN_HEADER's fields in the machine's byte order: a little-endian machine's only
_NATIVE_RUNS = sys.byteorder == "little" and getattr(native_records._native, "RUN_HEADER_SIZE", 0) == \
    RUN_HEADER.itemsize
PACKED = np.dtype(list(PACKED_FIELDS))
_ENDS_AT = PACKED.fields["src_port"][1]  # a packed segment's 4-tuple: its bytes from here to its end


def segment_order(files: int) -> tuple[str, ...]:
    """The columns a connection's segment rows are fed in order of: file order for one file; merged by
    capture time for several, as the local engine merges them (:mod:`kdissect.sources.interleave`), so a
    packet read twice meets its copy (:mod:`kdissect.sources.duplicates`)."""
    return ("ts", "pos") if files > 1 else ("pos",)


_WINDOW = 4 << 20  # bytes read at a time while looking for a proven record boundary
_CHUNK = 1 << 20
_BATCH_BYTES = 8 << 20  # payload bytes per Arrow batch handed to Spark
_RESYNC_AT_END = "stream ended while resyncing: "  # (kdissect.sources.framing's wording)
_RECORD_HEAD = 32  # at least a pcap record header or pcapng block head: where a record's data may start
_MAPPED_FILES = 64  # files a decoding task keeps mapped at once


@dataclass(frozen=True, slots=True)
class Unit:
    """Bytes ``[start, end)`` of file ``path`` (``end`` -1: to its end); ``index`` orders units in
    capture order (files in the order given, ranges in file order). A range of a pcapng file
    starts on a proven block and is read after the blocks of its section that ``section`` spans."""

    index: int
    file_index: int
    path: str
    start: int
    end: int
    section: tuple[tuple[int, int], ...] | None = None  # (offset, length) per block; None: not pcapng


def plan_units(files: Iterable[tuple[str, int | None]], split_bytes: int) -> list[Unit]:
    """Units for ``(path, size)`` pairs (size None when unknown): files above ``split_bytes`` become
    ranges of about that size. A local pcapng file is cut here, where its blocks are proven; for
    the others, which ranges hold records is found when they are read: a file that turns out not
    to be splittable is read whole by its first range, the others yield nothing."""
    units: list[Unit] = []
    for file_index, (path, size) in enumerate(files):
        if size is None or size <= split_bytes:
            units.append(Unit(len(units), file_index, path, 0, -1))
            continue
        cuts = _block_cuts(path, split_bytes)
        if cuts is not None:
            starts = [(0, ()), *((cut.at, cut.section) for cut in cuts)]
            for (start, section), (end, _) in zip(starts, [*starts[1:], (-1, ())], strict=True):
                units.append(Unit(len(units), file_index, path, start, end, section))
            continue
        for start in range(0, size, split_bytes):
            end = min(start + split_bytes, size)
            units.append(Unit(len(units), file_index, path, start, -1 if end == size else end))
    return units


def largest_first(units: list[Unit], sizes: Mapping[str, int | None]) -> list[Unit]:
    """The units in the order to read them: the largest first (``sizes``: each file's bytes, None when
    unknown; ties in capture order). Spark starts a stage's tasks in partition order, so the small units
    fill the cores as the large ones end, rather than a large one running alone at the stage's end."""

    def size(unit: Unit) -> int:
        whole = sizes.get(unit.path) or 0
        return (whole if unit.end < 0 else unit.end) - unit.start

    return sorted(units, key=lambda unit: (-size(unit), unit.index))


def _block_cuts(path: str, split_bytes: int) -> list | None:
    """The proven cuts of a local pcapng file (``split.pcapng_cuts``), or None for any other file."""
    if not is_local(path):
        return None
    try:
        with open(local_path(path), "rb") as f:
            if f.read(len(SHB_MAGIC)) != SHB_MAGIC:
                return None
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return pcapng_cuts(data, split_bytes)
    except (OSError, ValueError):  # unreadable: reading it reports that
        return None


class MappedFiles:
    """Referenced payloads read back from the capture files (memory-mapped, a few at a time)."""

    def __init__(self, files: list[str]) -> None:
        self.files = files
        self.maps: list[mmap.mmap | None] = [None] * len(files)  # per file: its map while it is mapped
        self._used: dict[int, None] = {}  # the files mapped, the one last asked for (open) last
        self._last_index = -1

    def payload(self, file_index: int, at: int, size: int) -> bytes:
        if file_index != self._last_index:  # (most payloads come from the file the one before came from)
            self.open(file_index)
        return self.maps[file_index][at : at + size]  # type: ignore[index]

    def open(self, file_index: int) -> None:
        """File ``file_index`` mapped, the one last asked for (past ``_MAPPED_FILES``, the one asked for
        longest ago is unmapped: the native walk reads mapped files without asking, so this is the order
        of the asks, not of every read)."""
        if self.maps[file_index] is None:
            if len(self._used) >= _MAPPED_FILES:
                oldest = next(iter(self._used))
                del self._used[oldest]
                self.maps[oldest].close()  # type: ignore[union-attr]
                self.maps[oldest] = None
            with open(local_path(self.files[file_index]), "rb") as f:
                self.maps[file_index] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        else:
            del self._used[file_index]
        self._used[file_index] = None
        self._last_index = file_index

    def close(self) -> None:
        for index in self._used:
            self.maps[index].close()  # type: ignore[union-attr]
            self.maps[index] = None
        self._used.clear()
        self._last_index = -1


Ends = tuple[str, int, str, int, int]  # a run's first segment's source and destination, and its file's index
_RUN_COLUMNS = ("ts", "seq", "ack", "flags", "window", "payload_len", "captured", "payload_at", "forward")


def run_segments(headers: np.ndarray, runs: np.ndarray, ends: list[Ends], mapped: MappedFiles) -> list[TcpSegment]:
    """The segments of run headers (``RUN_HEADER``), header i of the run whose ends are ``ends[runs[i]]``
    (``runs``: int64), each in its own direction, its payload read back from its file. Natively when the
    sources' extension is built (``sources/_runs.c``; this loop is its reference)."""
    native = native_records._native
    if native is not None and _NATIVE_RUNS:
        segments: list[TcpSegment] = []
        done = 0
        while (done := native.run_segments(headers, runs, ends, mapped.maps, done, TcpSegment, segments)) < len(runs):
            mapped.open(ends[runs[done]][4])  # the next header's file, not mapped
        return segments
    used = np.unique(runs).tolist()
    if used and not 0 <= used[0] <= used[-1] < len(ends):
        raise IndexError("a header's run is not among the ends")
    if any(not 0 <= ends[run][4] < len(mapped.maps) for run in used):
        raise IndexError("a run's file index is not among the maps")
    payload = mapped.payload
    out = []
    for ts, seq, ack, flags, window, payload_len, captured, at, forward, run \
            in zip(*(headers[name].tolist() for name in _RUN_COLUMNS), runs.tolist(), strict=True):  # fmt: skip
        a_ip, a_port, b_ip, b_port, file_index = ends[run]
        data = payload(file_index, at, captured) if at >= 0 else b""
        out.append(TcpSegment(ts, a_ip, a_port, b_ip, b_port, seq, ack, flags, window, data, payload_len)
                   if forward else
                   TcpSegment(ts, b_ip, b_port, a_ip, a_port, seq, ack, flags, window, data, payload_len))
    return out


def connection_key(src_ip: str, src_port: int, dst_ip: str, dst_port: int) -> int:
    """The same number for both directions of a 4-tuple: what sends a connection's segments from
    every file to one task (a collision only puts two connections in the same task)."""
    a, b = f"{src_ip}|{src_port}", f"{dst_ip}|{dst_port}"
    return zlib.crc32((f"{a}|{b}" if a <= b else f"{b}|{a}").encode())


def read_unit(unit: Unit, stats: SourceStats, records: bool = False, packed: bool = False
              ) -> Iterator[SourceEvent | CaptureRecord | PackedSegments]:  # fmt: skip
    """The unit's segments and anomalies in file order (with ``records``, each record before the
    segments made of it, at its file offset; with ``packed``, the native path's runs of segments as
    ``PackedSegments``, payload offsets the file's). Raises ``OSError`` and ``CaptureFormatError`` as
    :func:`~kdissect.sources.files.iter_capture` does."""
    with open_input(unit.path) as f:
        layout = pcap_layout(f.read(GLOBAL_HEADER_LEN))
        f.seek(0)
        if unit.section is not None and (unit.start, unit.end) != (0, -1):  # a range of a pcapng file
            size = f.seek(0, 2)
            end = size if unit.end < 0 else unit.end
            yield from _read_range(f, _blocks(f, unit.section), unit.start, end, stats, end < size, records, packed)
            return
        if unit.start == 0 and (unit.end < 0 or layout is None):
            # a whole file (gzip, pcapng, or small)
            yield from iter_capture(f, stats=stats, records=records, packed=packed)
            return
        if layout is None:
            return  # a later range of a file that is read whole by its first range
        size = f.seek(0, 2)
        start = GLOBAL_HEADER_LEN if unit.start == 0 else _boundary(f, layout, unit.start, size)
        end = size if unit.end < 0 else _boundary(f, layout, unit.end, size)
        yield from _read_range(f, layout.header, start, end, stats, end < size, records, packed)


def _blocks(f: BinaryIO, spans: tuple[tuple[int, int], ...]) -> bytes:
    out = []
    for at, length in spans:
        f.seek(at)
        out.append(f.read(length))
    return b"".join(out)


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


def _read_range(f: BinaryIO, header: bytes, start: int, end: int, stats: SourceStats, more: bool,
                records: bool, packed: bool) -> Iterator[SourceEvent | CaptureRecord | PackedSegments]:  # fmt: skip
    """Records ``[start, end)`` read after ``header`` (a pcap file's header; a pcapng section's header
    and interface blocks, or nothing at the file's start); anomaly offsets are the file's, and the
    header's own anomalies are left to the range that holds it. When ``more`` of the file follows,
    ``end`` is a proven record start: a resync still going on there ends there."""
    decoder = CaptureDecoder(stats=stats, records=records, packed=packed)
    later = start > len(header)
    shift = start - len(header)

    def placed(events: list) -> Iterator[SourceEvent | CaptureRecord | PackedSegments]:
        for ev in events:
            if type(ev) is CaptureRecord:
                ev.offset += shift
                yield ev
            elif type(ev) is PackedSegments:
                yield PackedSegments(ev.data, ev.shift + shift)
            elif type(ev) is not SourceAnomaly:
                yield ev
            elif ev.offset is None or ev.offset >= len(header):
                yield ev if ev.offset is None else SourceAnomaly(ev.kind, ev.message, ev.offset + shift, ev.ts_ns)
            elif not later:
                yield ev
            else:
                stats.anomalies -= 1  # (counted by the range that holds the header)

    yield from placed(decoder.feed(header))
    f.seek(start)
    at = start
    while at < end and (chunk := f.read(min(_CHUNK, end - at))):
        at += len(chunk)
        yield from placed(decoder.feed(chunk))
    for ev in placed(decoder.close()):
        if more and type(ev) is SourceAnomaly and ev.message.startswith(_RESYNC_AT_END):
            ev = SourceAnomaly(ev.kind, ev.message.removeprefix(_RESYNC_AT_END), ev.offset, ev.ts_ns)
        yield ev
    stats.bytes_read -= len(header)


@dataclass(slots=True)
class UnitCensus:
    """What a first pass over a unit finds: the connection keys of its segments (unique, sorted) with
    the first and last time each is seen and its segments and payload bytes there (the work of decoding
    and writing it, :mod:`kdissect.engines.routes`), the text of its TLS key log secrets blocks (in file
    order), and the unit's file."""

    keys: np.ndarray
    first: np.ndarray
    last: np.ndarray
    segments: np.ndarray
    payload: np.ndarray
    secrets: list[bytes]
    file_index: int


@dataclass(slots=True)
class Census:
    """The units' census merged: the keys found in more than one unit (the connections that must meet
    after the shuffle; every other one lies wholly inside one unit and is decoded by the task that
    reads it) with their segments and payload bytes and the file each starts in, the segments and payload
    bytes of each unit's own connections (those only it holds), the key log blocks in capture order, the
    run's latest segment time, and whether a packet may repeat one of another file
    (:mod:`kdissect.sources.duplicates`): only if a crossing key's times in two files overlap. When none
    can, the decode tasks skip the duplicate filter (and take the native lanes, which it turns off): it
    would drop nothing."""

    crossing: dict[int, tuple[int, int, int]]  # key -> (segments, payload bytes: over the units; its first file)
    own: list[tuple[int, int]]  # per unit, in unit order: (segments, payload bytes) of the connections only it holds
    secrets: list[bytes]
    last_ts: int | None
    repeats: bool

    @classmethod
    def merge(cls, units: Iterable[UnitCensus]) -> Census:
        """Of the units' censuses in unit order."""
        found = list(units)
        every = [np.concatenate([getattr(u, name) for u in found] + [np.zeros(0, np.int64)])
                 for name in ("keys", "first", "last", "segments", "payload")]  # fmt: skip
        files = np.concatenate([np.full(len(u.keys), u.file_index, np.int64) for u in found] + [np.zeros(0, np.int64)])
        keys, which, counts = np.unique(every[0], return_inverse=True, return_counts=True)
        crossing = keys[counts > 1]
        sums = [np.bincount(which, every[i], len(keys)).astype(np.int64)[counts > 1].tolist() for i in (3, 4)]
        alone = (counts == 1)[which]  # per unit's key: held by no other unit
        unit_of = np.repeat(np.arange(len(found)), [len(u.keys) for u in found])
        own = [np.bincount(unit_of[alone], every[i][alone], len(found)).astype(np.int64).tolist() for i in (3, 4)]
        spans: dict[tuple[int, int], list[int]] = {}  # (crossing key, file) -> [first, last]
        mask = np.isin(every[0], crossing)
        for key, first, last, file in zip(*(column[mask].tolist() for column in (*every[:3], files)), strict=True):
            span = spans.setdefault((key, file), [first, last])
            span[0], span[1] = min(span[0], first), max(span[1], last)
        starts: dict[int, tuple[int, int]] = {}  # crossing key -> (first time, its file)
        for (key, file), (first, _) in spans.items():
            starts[key] = min(starts.get(key, (first, file)), (first, file))
        summed = zip(crossing.tolist(), *sums, strict=True)
        return cls({key: (segments, payload, starts[key][1]) for key, segments, payload in summed},
                   list(zip(*own, strict=True)), [block for u in found for block in u.secrets],
                   int(every[2].max()) if len(every[2]) else None, _overlap(spans))  # fmt: skip


def _overlap(spans: dict[tuple[int, int], list[int]]) -> bool:
    """Whether one key's time spans in two files share an instant (a packet there may be a copy)."""
    ordered = sorted((key, first, last) for (key, _), (first, last) in spans.items())
    return any(a[0] == b[0] and b[1] <= a[2] for a, b in pairwise(ordered))


def unit_census(unit: Unit) -> UnitCensus:
    """The census of a unit (one that cannot be read has nothing: reading it again reports that)."""
    spans: dict[tuple, list[int]] = {}  # 4-tuple -> [key, first time, last time, segments, payload bytes]
    secrets: list[bytes] = []
    ends_of = _Ends()
    try:
        for ev in read_unit(unit, SourceStats(), packed=True):
            if type(ev) is PackedSegments:
                segments = np.frombuffer(ev.data, PACKED)
                tuples, inverse = ends_of.unique(segments)
                ts = segments["ts"]
                early, late = np.full(len(tuples), np.iinfo(np.int64).max), np.full(len(tuples), np.iinfo(np.int64).min)
                np.minimum.at(early, inverse, ts)
                np.maximum.at(late, inverse, ts)
                count = np.bincount(inverse, minlength=len(tuples)).tolist()
                payload = np.bincount(inverse, segments["payload_len"], len(tuples)).astype(np.int64).tolist()
                for ends, t0, t1, n, b in zip(tuples, early.tolist(), late.tolist(), count, payload, strict=True):
                    span = spans.get(ends)
                    if span is None:
                        spans[ends] = [connection_key(*ends), t0, t1, n, b]
                    else:
                        span[1], span[2] = min(span[1], t0), max(span[2], t1)
                        span[3] += n
                        span[4] += b
            elif type(ev) is TcpSegment:
                ts = ev.ts_ns
                span = spans.get((ev.src_ip, ev.src_port, ev.dst_ip, ev.dst_port))
                if span is None:
                    ends = (ev.src_ip, ev.src_port, ev.dst_ip, ev.dst_port)
                    spans[ends] = [connection_key(*ends), ts, ts, 1, ev.payload_len]
                    continue
                span[3] += 1
                span[4] += ev.payload_len
                if ts > span[2]:
                    span[2] = ts
                elif ts < span[1]:
                    span[1] = ts
            elif type(ev) is DecryptionSecrets and ev.secrets_type == TLS_KEY_LOG:
                secrets.append(ev.data)
    except (CaptureFormatError, OSError):
        pass
    rows = np.array(list(spans.values()), np.int64).reshape(-1, 5)
    rows = rows[np.argsort(rows[:, 0], kind="stable")]
    keys = np.unique(rows[:, 0])  # (a 4-tuple's two directions: one key)
    at = np.searchsorted(rows[:, 0], keys)
    none = np.zeros(0, np.int64)
    first = np.minimum.reduceat(rows[:, 1], at) if len(keys) else none
    last = np.maximum.reduceat(rows[:, 2], at) if len(keys) else none
    count, payload = (np.add.reduceat(rows[:, i], at) if len(keys) else none for i in (3, 4))
    return UnitCensus(keys, first, last, count, payload, secrets, unit.file_index)


class _Ends:
    """The 4-tuples of packed segments, as the segments' ``(src_ip, src_port, dst_ip, dst_port)`` name
    them (address text as the native walk writes it), each made once."""

    def __init__(self) -> None:
        self._known: dict[bytes, tuple[str, int, str, int]] = {}

    def unique(self, segments: np.ndarray) -> tuple[list[tuple[str, int, str, int]], np.ndarray]:
        """The distinct 4-tuples of ``segments`` in order of first appearance, and each segment's
        4-tuple (an index into them)."""
        raw = np.ascontiguousarray(segments.view(np.uint8).reshape(len(segments), PACKED.itemsize)[:, _ENDS_AT:])
        keys = raw.view(np.dtype((np.void, PACKED.itemsize - _ENDS_AT))).ravel()
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # sorted by bytes -> by first appearance
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        tuples = [self._ends(keys[first[i]].tobytes()) for i in order.tolist()]
        return tuples, rank[inverse.ravel()]

    def _ends(self, key: bytes) -> tuple[str, int, str, int]:
        ends = self._known.get(key)
        if ends is None:
            one = np.frombuffer(key.rjust(PACKED.itemsize, b"\0"), PACKED)[0]
            family, size = (AF_INET, 4) if int(one["version"]) == 4 else (AF_INET6, 16)
            src, dst = one["src"].tobytes()[:size], one["dst"].tobytes()[:size]
            ends = (inet_ntop(family, src), int(one["src_port"]), inet_ntop(family, dst), int(one["dst_port"]))
            self._known[key] = ends
        return ends


class UnitDecoder(Protocol):
    """What decodes a unit's own connections in its read task (``partition.PartitionDecoder``)."""

    def segment(self, segment: TcpSegment, pos: int, file_index: int) -> None: ...

    def clock(self, ts: int, pos: int) -> None: ...

    def clocks(self, ts: np.ndarray, pos: np.ndarray) -> None: ...

    def finish(self) -> None: ...

    def take(self) -> Iterator[tuple[str, bytes | None, str | None]]: ...


def read_units(batches: Iterable[pa.RecordBatch], units: list[Unit], crossing: Mapping[int, int] | None = None,
               decoder: Callable[[Unit], UnitDecoder] | None = None, last_ts: int | None = None,
               pieces_to: Mapping[int, int] | None = None) -> Iterator[pa.RecordBatch]:  # fmt: skip
    """Rows naming units by their place in ``units`` (column ``id``: Spark's ``range``, so that no Python
    job makes them) in, segment rows (``SEGMENT_SCHEMA``) out: a Spark task's read. With ``decoder``,
    the segments of every connection whose key is not ``crossing`` are decoded here, by the decoder
    made for the unit, and only its pieces (``PIECE`` rows) go on. Its clock follows the unit's other
    segments and then the run's latest time (``last_ts``), so the idle rule ends its connections as
    in a run over everything. A crossing connection's rows carry the routing key ``crossing`` maps its
    key to (:mod:`kdissect.engines.routes`) in place of its key, and the pieces the one ``pieces_to``
    maps the unit's index to (default: the index)."""
    for batch in batches:
        for place in batch.column("id").to_pylist():
            unit = units[place]
            piece_key = (pieces_to or {}).get(unit.index, unit.index)
            yield from _unit_rows(unit, crossing or {}, decoder(unit) if decoder else None, last_ts, piece_key)


def _unit_rows(unit: Unit, crossing: Mapping[int, int], decoder: UnitDecoder | None, last_ts: int | None,
               piece_key: int) -> Iterator[pa.RecordBatch]:  # fmt: skip
    rows = _Rows(unit, crossing, piece_key)
    stats = SourceStats()
    error = None
    here: dict[tuple, bool] = {}  # 4-tuple -> decoded in this task
    ends_of = _Ends()
    try:
        with _file_bytes(unit.path) as data:
            record = None
            for ev in read_unit(unit, stats, records=data is not None, packed=data is not None):
                if type(ev) is PackedSegments:
                    assert data is not None
                    _packed_rows(rows, ev, ends_of, here, crossing, decoder, data)
                elif type(ev) is CaptureRecord:
                    record = ev
                elif type(ev) is TcpSegment:
                    if decoder is not None:
                        ends = (ev.src_ip, ev.src_port, ev.dst_ip, ev.dst_port)
                        local = here.get(ends)
                        if local is None:
                            local = here[ends] = connection_key(*ends) not in crossing
                        if local:
                            decoder.segment(ev, rows.place(), unit.file_index)
                            continue
                        decoder.clock(ev.ts_ns, rows.base + rows.n)
                    rows.segment(ev, _payload_at(data, record, ev.payload) if ev.payload else None)
                elif type(ev) is not DecryptionSecrets:  # (secrets: read by the census, before any decoding)
                    rows.anomaly(ev)  # type: ignore[arg-type]
                if rows.bytes >= _BATCH_BYTES:
                    yield rows.take()
    except (CaptureFormatError, OSError) as exc:
        # As in the local engine, an anomaly row names the file (OSError: a remote file gone or refused).
        why = CaptureFormatError(f"cannot read: {exc.strerror or exc}") if isinstance(exc, OSError) else exc
        rows.anomaly(unreadable_file(unit.path, why, stats))
        error = str(why)
    if decoder is not None:
        if last_ts is not None:
            decoder.clock(last_ts, rows.base + rows.n)
        decoder.finish()
        for piece in decoder.take():
            rows.piece(*piece)
    rows.done(stats, error)
    yield rows.take()


def _packed_rows(rows: _Rows, packed: PackedSegments, ends_of: _Ends, here: dict[tuple, bool],
                 crossing: Mapping[int, int],
                 decoder: UnitDecoder | None, data: mmap.mmap) -> None:  # fmt: skip
    """A run of packed segments, as ``_unit_rows`` takes segments one by one: the decoder's own
    connections' segments to the decoder (its clock told by the others'), the others into runs."""
    segments = np.frombuffer(packed.data, PACKED)
    tuples, inverse = ends_of.unique(segments)
    pos = rows.base + rows.n + np.arange(len(segments), dtype=np.int64)
    at = np.where(segments["captured"] > 0, segments["payload_at"] + packed.shift, -1)
    if decoder is None:
        own = np.zeros(len(tuples), bool)
    else:
        own = np.array([here[ends] if ends in here else here.setdefault(ends, connection_key(*ends) not in crossing)
                        for ends in tuples], bool)  # fmt: skip
    local = own[inverse]
    rows.headers(tuples, inverse[~local], segments[~local], pos[~local], at[~local])
    rows.n += len(segments)
    if decoder is None or not local.any():
        if decoder is not None:
            decoder.clocks(segments["ts"], pos)
        return
    done = 0
    mine = np.flatnonzero(local)
    # (each field of the decoder's segments made Python values at once: a numpy scalar per field and
    # segment cost more than the segment's own decoding in chatty traffic)
    fields = [segments[name][mine].tolist() for name in ("ts", "seq", "ack", "flags", "window", "payload_len")]
    file_index = rows.unit.file_index
    for i, ends, start, size, place, ts, seq, ack, flags, window, payload_len in zip(
            mine.tolist(), inverse[mine].tolist(), at[mine].tolist(), segments["captured"][mine].tolist(),
            pos[mine].tolist(), *fields, strict=True):  # fmt: skip
        if i > done:
            decoder.clocks(segments["ts"][done:i], pos[done:i])
        src_ip, src_port, dst_ip, dst_port = tuples[ends]
        payload = data[start : start + size] if start >= 0 else b""
        decoder.segment(TcpSegment(ts, src_ip, src_port, dst_ip, dst_port, seq, ack, flags, window, payload,
                                   payload_len), place, file_index)  # fmt: skip
        done = i + 1
    if done < len(segments):
        decoder.clocks(segments["ts"][done:], pos[done:])


def may_hold_secrets(path: str) -> bool:
    """Whether a file may carry Decryption Secrets Blocks (pcapng, or gzip that may hide one): only
    then does the driver read the secrets before decoding (unreadable: no, reading reports it)."""
    try:
        with open_input(path) as f:
            head = f.read(len(SHB_MAGIC))
    except OSError:
        return False
    return head == SHB_MAGIC or head.startswith(GZIP_MAGIC)


@contextmanager
def _file_bytes(path: str) -> Iterator[mmap.mmap | None]:
    """The file's bytes, where payloads can be found as they are: a local file, not gzipped
    (anything else, or a file that cannot be mapped, gives None and payloads go inline)."""
    mapped = None
    try:
        if is_local(path):
            with open(local_path(path), "rb") as f:
                if f.read(len(GZIP_MAGIC)) != GZIP_MAGIC:
                    mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # missing, unreadable or empty: read_unit reports it
        pass
    try:
        yield mapped
    finally:
        if mapped is not None:
            mapped.close()


def _payload_at(data: mmap.mmap | None, record: CaptureRecord | None, payload: bytes) -> int | None:
    """Where ``payload``'s bytes lie in the file: looked for in its record (bytes equal, so any
    match will do); None when they are not there as they are (a datagram rebuilt from fragments)."""
    if data is None or record is None:
        return None
    at = data.find(payload, record.offset, record.offset + _RECORD_HEAD + len(record.data))
    return at if at >= 0 else None


class _RunHeaders:
    """A run's headers being gathered, in order: one segment's (a tuple) or many (a ``RUN_HEADER`` array)."""

    __slots__ = ("parts", "size")

    def __init__(self) -> None:
        self.parts: list[tuple | np.ndarray] = []
        self.size = 0

    def add(self, header: tuple) -> None:
        self.parts.append(header)
        self.size += 1

    def extend(self, headers: np.ndarray) -> None:
        self.parts.append(headers)
        self.size += len(headers)

    def array(self) -> np.ndarray:
        arrays, loose = [], []
        for part in self.parts:
            if type(part) is tuple:
                loose.append(part)
                continue
            if loose:
                arrays.append(np.array(loose, RUN_HEADER))
                loose = []
            arrays.append(part)
        if loose:
            arrays.append(np.array(loose, RUN_HEADER))
        return np.concatenate(arrays)


class _Rows:
    """Segment rows being gathered column by column, and runs being gathered per 4-tuple; a connection's
    rows keyed by the routing key ``routes`` maps its key to, if any, the unit's pieces by ``piece_key``."""

    def __init__(self, unit: Unit, routes: Mapping[int, int], piece_key: int) -> None:
        self.unit = unit
        self.routes = routes
        self.piece_key = piece_key
        self.base = unit.index << 32
        self.n = 0
        self.columns: dict[str, list] = {name: [] for name in SEGMENT_SCHEMA.names}
        self.runs: dict[tuple, _RunHeaders] = {}  # (src ip, port, dst ip, port) of its first -> headers
        self.bytes = 0

    def _add(self, key: int, kind: int, values: dict) -> None:
        c = self.columns
        c["key"].append(key)
        c["pos"].append(values["pos"] if kind == RUN else self.base + self.n)
        c["kind"].append(kind)
        c["file_index"].append(self.unit.file_index)
        for name in ("ts", "src_ip", "src_port", "dst_ip", "dst_port", "seq", "ack", "flags", "window", "payload",
                     "payload_len", "anomaly", "offset", "detail", "payload_at", "captured", "run"):  # fmt: skip
            c[name].append(values.get(name))
        if kind != RUN:
            self.n += 1

    def segment(self, s: TcpSegment, at: int | None) -> None:
        """A segment: a row of its own if its payload travels inline, else a header in its 4-tuple's run."""
        if at is None and s.payload:
            self._add(self._key(connection_key(s.src_ip, s.src_port, s.dst_ip, s.dst_port)), SEGMENT, {
                "ts": s.ts_ns, "src_ip": s.src_ip, "src_port": s.src_port, "dst_ip": s.dst_ip,
                "dst_port": s.dst_port, "seq": s.seq, "ack": s.ack, "flags": s.flags, "window": s.window,
                "payload": s.payload, "payload_len": s.payload_len, "captured": len(s.payload),
            })  # fmt: skip
            self.bytes += len(s.payload) + 64
            return
        ends, forward = self._run_of((s.src_ip, s.src_port, s.dst_ip, s.dst_port))
        run = self.runs[ends]
        run.add((self.base + self.n, s.ts_ns, s.seq, s.ack, s.flags, s.window, s.payload_len, len(s.payload),
                 -1 if at is None else at, forward))  # fmt: skip
        self.n += 1
        self.bytes += RUN_HEADER.itemsize
        if run.size >= RUN_SEGMENTS:
            self._run(ends)

    def _key(self, key: int) -> int:
        return self.routes.get(key, key)

    def _run_of(self, ends: tuple) -> tuple[tuple, bool]:
        """The 4-tuple of the run a segment of ``ends`` joins (made if there is none), and whether the
        segment goes in that run's direction."""
        if ends in self.runs:
            return ends, True
        back = (ends[2], ends[3], ends[0], ends[1])
        if back in self.runs:
            return back, False
        self.runs[ends] = _RunHeaders()
        return ends, True

    def headers(self, tuples: list[tuple], which: np.ndarray, segments: np.ndarray, pos: np.ndarray,
                at: np.ndarray) -> None:  # fmt: skip
        """Packed segments into their runs (``which``: each one's 4-tuple, an index into ``tuples``; ``pos``
        their places; ``at`` where their payloads lie, -1: none), as :meth:`segment` puts them one by one."""
        if not len(segments):
            return
        headers = np.empty(len(segments), RUN_HEADER)
        headers["pos"], headers["payload_at"] = pos, at
        for name in ("ts", "seq", "ack", "flags", "window", "payload_len", "captured"):
            headers[name] = segments[name]
        run_of = np.zeros(len(tuples), np.int64)  # per 4-tuple: its run, an index into ``runs``
        forward = np.zeros(len(tuples), bool)
        runs: list[tuple] = []
        for k in np.unique(which).tolist():  # (in order of first appearance, as one by one)
            ends, forward[k] = self._run_of(tuples[k])
            if ends not in runs:
                runs.append(ends)
            run_of[k] = runs.index(ends)
        headers["forward"] = forward[which]
        each = run_of[which]
        order = np.argsort(each, kind="stable")  # a run's segments in their order
        for part in np.split(order, np.flatnonzero(np.diff(each[order])) + 1):
            self.runs[runs[int(each[part[0]])]].extend(headers[part])
        for ends in runs:
            if self.runs[ends].size >= RUN_SEGMENTS:
                self._run(ends, whole=True)
        self.bytes += RUN_HEADER.itemsize * len(segments)

    def _run(self, ends: tuple, whole: bool = False) -> None:
        """The run's rows, of ``RUN_SEGMENTS`` headers at most (``whole``: only full ones, the rest waits)."""
        headers = self.runs.pop(ends).array()
        if whole and len(headers) % RUN_SEGMENTS:
            rest = self.runs[ends] = _RunHeaders()
            rest.extend(headers[len(headers) - len(headers) % RUN_SEGMENTS :])
            headers = headers[: len(headers) - len(headers) % RUN_SEGMENTS]
        src_ip, src_port, dst_ip, dst_port = ends
        for start in range(0, len(headers), RUN_SEGMENTS):
            part = headers[start : start + RUN_SEGMENTS]
            self._add(self._key(connection_key(*ends)), RUN, {  # placed (pos, ts) no later than any of its segments
                "pos": int(part["pos"][0]), "ts": int(part["ts"].min()), "src_ip": src_ip, "src_port": src_port,
                "dst_ip": dst_ip, "dst_port": dst_port, "run": part.tobytes()})  # fmt: skip

    def anomaly(self, a: SourceAnomaly) -> None:
        self._add(self.unit.file_index, ANOMALY, {"ts": a.ts_ns, "offset": a.offset, "anomaly": a.kind,
                                                  "detail": a.message})  # fmt: skip

    def place(self) -> int:
        """The place in capture order of a segment that is decoded in the read task (no row)."""
        self.n += 1
        return self.base + self.n - 1

    def piece(self, table: str, data: bytes | None, path: str | None) -> None:
        """An envelope row of the unit's own decoding (``partition.ENVELOPE_SCHEMA``), passed on by the
        decode task that gets it."""
        self._add(self.piece_key, PIECE, {"anomaly": table, "payload": data, "detail": path})
        self.bytes += len(data or b"")

    def done(self, stats: SourceStats, error: str | None) -> None:
        counters = {**asdict(stats), "error": error}
        self._add(self.unit.file_index, DONE, {"detail": json.dumps(counters)})

    def take(self) -> pa.RecordBatch:
        """The rows gathered, runs included (a connection's run goes on in the next batch)."""
        for ends in list(self.runs):
            self._run(ends)
        batch = pa.RecordBatch.from_pydict(self.columns, schema=SEGMENT_SCHEMA)
        self.columns = {name: [] for name in SEGMENT_SCHEMA.names}
        self.bytes = 0
        return batch
