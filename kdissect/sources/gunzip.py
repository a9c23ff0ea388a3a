"""Streaming gunzip as a push object, so compressed captures stay constant-memory.

Handles concatenated members (``cat a.gz b.gz``) and hands out decompressed bytes in
pieces of at most ``piece_size``, so a small compressed chunk that inflates a thousand
times never becomes one huge buffer. Damage becomes an anomaly, never an exception.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

from kdissect.sources.shapes import AnomalyKind, SourceAnomaly

GZIP_MAGIC = b"\x1f\x8b"
_GZIP_WBITS = 16 + zlib.MAX_WBITS
GUNZIP_RATIO = 200  # a gzip capture may inflate this many times its compressed size...
GUNZIP_FREE = 64 << 20  # ...once it has produced this much (real captures gzip 3-20x)


class GzipStream:
    """Feed compressed bytes; iterate decompressed pieces (and at most one anomaly)."""

    def __init__(
        self,
        piece_size: int = 1 << 20,
        max_ratio: int = GUNZIP_RATIO,
        free: int = GUNZIP_FREE,
    ) -> None:
        """Past ``free`` bytes out, output more than ``max_ratio`` times the input is cut (a bomb):
        reading stops with a ``cap`` anomaly."""
        self._piece_size = piece_size
        self._max_ratio = max_ratio
        self._free = free
        self._produced = 0
        self._inflater = zlib.decompressobj(_GZIP_WBITS)
        self._member_started = False  # bytes of the current member were fed
        self._consumed = 0  # compressed bytes fed
        self._failed = False

    def feed(self, data: bytes) -> Iterator[bytes | SourceAnomaly]:
        """Decompressed pieces of ``data``; a ``SourceAnomaly`` ends the stream if it is damaged."""
        if self._failed or not data:
            return
        start = self._consumed
        self._consumed += len(data)
        self._member_started = True
        while True:
            try:
                piece = self._inflater.decompress(data, self._piece_size)
            except zlib.error as exc:
                self._failed = True
                yield SourceAnomaly(
                    AnomalyKind.DECOMPRESSION,
                    f"gzip data damaged in the chunk at compressed byte {start} ({exc}); reading stops",
                )
                return
            if piece:
                self._produced += len(piece)
                if self._produced > self._free and self._produced > self._max_ratio * self._consumed:
                    self._failed = True
                    yield SourceAnomaly(
                        AnomalyKind.CAP,
                        f"gzip inflates more than {self._max_ratio} times ({self._produced} bytes out of at most "
                        f"{self._consumed}): reading stops",
                    )
                    return
                yield piece
            if self._inflater.eof:  # a member ended; another may follow
                data = self._inflater.unused_data
                self._inflater = zlib.decompressobj(_GZIP_WBITS)
                self._member_started = bool(data)
                if not data:
                    return
            else:
                # An empty tail with a full piece means zlib may still hold output.
                data = self._inflater.unconsumed_tail
                if not data and len(piece) < self._piece_size:
                    return

    def close(self) -> list[SourceAnomaly]:
        """End of the compressed stream: report a member cut short."""
        if self._failed or not self._member_started:
            return []
        return [SourceAnomaly(AnomalyKind.DECOMPRESSION, f"gzip stream ends inside a member ({self._consumed} bytes)")]
