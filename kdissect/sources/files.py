"""The file front of the capture layer: open, gunzip if needed, stream through the decoder.

The only module here that does I/O. Memory stays constant whatever the file size: the
file is read in chunks and the decoder holds at most one unfinished record or block.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from typing import Any, BinaryIO

from kdissect.sources.decoder import CaptureDecoder
from kdissect.sources.defrag import DefragLimits
from kdissect.sources.gunzip import GUNZIP_FREE, GUNZIP_RATIO, GZIP_MAGIC, GzipStream
from kdissect.sources.native_records import PackedSegments
from kdissect.sources.record_loop import ReaderLimits
from kdissect.sources.shapes import CaptureFormatError, CaptureRecord, SourceAnomaly, SourceEvent, SourceStats

DEFAULT_CHUNK_SIZE = 1 << 20
MERGED_READ_AHEAD = 8 << 20  # what files read together (merged by capture time) may hold read ahead, all told
MIN_CHUNK_SIZE = 64 << 10


def merged_chunk_size(files: int) -> int:
    """The chunk each of ``files`` read together is read in: every open file holds a chunk and the
    segments decoded from it (about four times the chunk), and captures taken side by side are all
    open at once, so the chunks share :data:`MERGED_READ_AHEAD` rather than each taking
    :data:`DEFAULT_CHUNK_SIZE` (64 overlapping files held about 250 MB so)."""
    return max(MIN_CHUNK_SIZE, min(DEFAULT_CHUNK_SIZE, MERGED_READ_AHEAD // max(files, 1)))


def capture_batches(
    source: str | os.PathLike[str] | BinaryIO,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    limits: ReaderLimits | None = None,
    defrag: DefragLimits | None = None,
    stats: SourceStats | None = None,
    gunzip_ratio: int = GUNZIP_RATIO,
    gunzip_free: int = GUNZIP_FREE,
    records: bool = False,
    packed: bool = False,
) -> Iterator[list[SourceEvent | CaptureRecord | PackedSegments]]:
    """The ``TcpSegment`` and ``SourceAnomaly`` events of a pcap/pcapng file (or gzip of one) in file
    order, in lists: the events each chunk read completes (none empty). The engines move them on a
    list at a time, with no Python step per packet.

    ``source`` is a path or a binary file object (left open). Pass ``stats`` to read the
    counters while or after iterating. ``defrag`` and ``gunzip_*`` bound what the input may
    cost (:class:`kdissect.sources.gunzip.GzipStream`). With ``records``, each ``CaptureRecord``
    comes before the events decoded from it (a distributed read locates payloads by it); with ``packed``
    too, the native path's runs of segments come as ``PackedSegments`` (payload offsets in place). Raises
    ``CaptureFormatError`` if the input is not a capture (naming the gzip damage when that is why no
    capture bytes came), ``OSError`` if it cannot be read.
    """
    with ExitStack() as stack:
        if isinstance(source, str | os.PathLike):
            stream: BinaryIO = stack.enter_context(open(source, "rb"))
        else:
            stream = source
        decoder = CaptureDecoder(limits, defrag, stats, records, packed)
        gzip = GzipStream(chunk_size, gunzip_ratio, gunzip_free)
        damage: SourceAnomaly | None = None
        try:
            for piece in _capture_bytes(_read_chunks(stream, chunk_size), gzip):
                if isinstance(piece, SourceAnomaly):
                    decoder.stats.anomalies += 1
                    damage = damage or piece
                    yield [piece]
                elif events := decoder.feed(piece):
                    yield events
            if events := decoder.close():
                yield events
        except CaptureFormatError:
            if damage is None:
                raise
            raise CaptureFormatError(f"{damage.message}; no capture could be read") from None


def iter_capture(source: str | os.PathLike[str] | BinaryIO, **options: Any
                 ) -> Iterator[SourceEvent | CaptureRecord | PackedSegments]:  # fmt: skip
    """The events of :func:`capture_batches` (same arguments) one by one."""
    for events in capture_batches(source, **options):
        yield from events


def first_time(path: str | os.PathLike[str]) -> int | None:
    """Capture time of a file's first record (None: it has none, or is no capture): where the file
    starts on the timeline when several are merged by time (:mod:`kdissect.sources.interleave`)."""
    records = iter_capture(path, records=True)
    try:
        return next((r.ts_ns for r in records if isinstance(r, CaptureRecord)), None)
    except (CaptureFormatError, OSError):
        return None
    finally:
        records.close()


def timeline(paths: list[str]) -> list[tuple[str, int | None]]:
    """Several local files, each with its first record's time, in that order (files of unknown time
    first, ties as given): how the engines merge inputs by time. One file, or remote ones, as given
    (their times unknown)."""
    if len(paths) < 2 or not all(os.path.isfile(p) for p in paths):
        return [(p, None) for p in paths]
    timed = [(p, first_time(p)) for p in paths]
    return sorted(timed, key=lambda pt: (pt[1] is not None, pt[1] or 0))


def in_time_order(paths: list[str]) -> list[str]:
    """The files of :func:`timeline`, without their times."""
    return [p for p, _ in timeline(paths)]


def _read_chunks(stream: BinaryIO, chunk_size: int) -> Iterator[bytes]:
    while chunk := stream.read(chunk_size):
        yield chunk


def _capture_bytes(chunks: Iterator[bytes], gzip: GzipStream) -> Iterable[bytes | SourceAnomaly]:
    """The capture stream itself: ``chunks`` as they are, or gunzipped when they start
    with the gzip magic (no capture format starts that way) by ``gzip``."""
    head = b""
    for chunk in chunks:
        head += chunk
        if len(head) >= len(GZIP_MAGIC):
            break
    if not head.startswith(GZIP_MAGIC):
        yield head
        yield from chunks
        return
    yield from gzip.feed(head)
    for chunk in chunks:
        yield from gzip.feed(chunk)
    yield from gzip.close()
