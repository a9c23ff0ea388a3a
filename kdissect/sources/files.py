"""The file front of the capture layer: open, gunzip if needed, stream through the decoder.

The only module here that does I/O. Memory stays constant whatever the file size: the
file is read in chunks and the decoder holds at most one unfinished record or block.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from typing import BinaryIO

from kdissect.limits import DEFAULT_BUDGET, Budget
from kdissect.sources.capture import CaptureDecoder
from kdissect.sources.defrag import DefragLimits
from kdissect.sources.events import SourceAnomaly, SourceEvent, SourceStats
from kdissect.sources.framing import ReaderLimits
from kdissect.sources.gunzip import GZIP_MAGIC, GzipStream

DEFAULT_CHUNK_SIZE = 1 << 20


def iter_capture(
    source: str | os.PathLike[str] | BinaryIO,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    limits: ReaderLimits | None = None,
    defrag: DefragLimits | None = None,
    stats: SourceStats | None = None,
    budget: Budget = DEFAULT_BUDGET,
) -> Iterator[SourceEvent]:
    """Yield the ``TcpSegment`` and ``SourceAnomaly`` events of a pcap/pcapng file (or
    gzip of one) in file order.

    ``source`` is a path or a binary file object (left open). Pass ``stats`` to read the
    counters while or after iterating. Raises ``CaptureFormatError`` if the input is
    not a capture, ``OSError`` if it cannot be read.
    """
    with ExitStack() as stack:
        if isinstance(source, str | os.PathLike):
            stream: BinaryIO = stack.enter_context(open(source, "rb"))
        else:
            stream = source
        if defrag is None:
            defrag = DefragLimits(
                max_datagrams=budget.fragment_datagrams,
                max_bytes=budget.fragment_bytes,
                max_holes=budget.fragment_holes,
            )
        decoder = CaptureDecoder(limits, defrag, stats)
        for piece in _capture_bytes(_read_chunks(stream, chunk_size), chunk_size, budget):
            if isinstance(piece, SourceAnomaly):
                decoder.stats.anomalies += 1
                yield piece
            else:
                yield from decoder.feed(piece)
        yield from decoder.close()


def _read_chunks(stream: BinaryIO, chunk_size: int) -> Iterator[bytes]:
    while chunk := stream.read(chunk_size):
        yield chunk


def _capture_bytes(chunks: Iterator[bytes], chunk_size: int, budget: Budget) -> Iterable[bytes | SourceAnomaly]:
    """The capture stream itself: ``chunks`` as they are, or gunzipped when they start
    with the gzip magic (no capture format starts that way)."""
    head = b""
    for chunk in chunks:
        head += chunk
        if len(head) >= len(GZIP_MAGIC):
            break
    if not head.startswith(GZIP_MAGIC):
        yield head
        yield from chunks
        return
    gzip = GzipStream(chunk_size, budget.gunzip_ratio, budget.gunzip_free)
    yield from gzip.feed(head)
    for chunk in chunks:
        yield from gzip.feed(chunk)
    yield from gzip.close()
