"""Sans-I/O push parser for capture streams: bytes in (any chunking), records out.

The same object serves a file reader, a live pipe and a Spark task: the caller feeds
whatever bytes it has and gets back the records (and anomalies) those bytes complete.
Memory stays bounded: bytes are held only until the unit they belong to is complete,
and no unit may claim more than ``ReaderLimits`` allow.
"""

from __future__ import annotations

from kdissect.lazy import lazy_module
from kdissect.sources.native_records import NativeRecords
from kdissect.sources.pcap import PcapFormat, is_pcap_magic
from kdissect.sources.record_loop import FramedFormat, ReaderLimits
from kdissect.sources.shapes import CaptureFormatError, RecordEvent

pcapng = lazy_module("kdissect.sources.pcapng")  # read only when a file is not pcap

_MAGIC_LEN = 4
# Magics of things people mistake for captures, to make the error say what the file is.
_FOREIGN_MAGICS = (
    (b"\x1f\x8b", "gzip-compressed (read it with kdissect.sources.files, which decompresses)"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed"),
    (b"\xfd7zXZ", "xz-compressed"),
    (b"BZh", "bzip2-compressed"),
    (b"PK\x03\x04", "a zip archive"),
)


def _not_a_capture(head: bytes) -> CaptureFormatError:
    shown = head[:8].hex(" ")
    for magic, what in _FOREIGN_MAGICS:
        if head.startswith(magic):
            return CaptureFormatError(f"not a pcap or pcapng capture: starts with {shown}, looks {what}")
    return CaptureFormatError(f"not a pcap or pcapng capture: starts with {shown}")


class CaptureParser:
    """Feed capture bytes, get ``CaptureRecord``/``SourceAnomaly`` events in stream order.

    Raises ``CaptureFormatError`` (from ``feed`` or ``close``) only when the stream does
    not start like a pcap or pcapng file; every later problem is an anomaly.
    """

    def __init__(self, limits: ReaderLimits | None = None, native: NativeRecords | None = None) -> None:
        self._limits = limits or ReaderLimits()
        self._native = native  # takes common records natively (they come out as segments)
        self._chunks: list[bytes] = []  # fed bytes not yet joined into _buf
        self._into = 0  # bytes of _chunks[0] already copied into _buf (by a bridge)
        self._chunked = 0  # bytes of _chunks not in _buf
        self._buf = b""
        self._pos = 0
        self._base = 0  # stream offset of _buf[0]
        self._need = _MAGIC_LEN  # bytes after _pos required before parsing can progress
        self._format: FramedFormat | None = None
        self._closed = False

    @property
    def buffered(self) -> int:
        """Bytes held waiting for the rest of their unit."""
        return len(self._buf) - self._pos + self._chunked

    def feed(self, data: bytes) -> list[RecordEvent]:
        """Add the next bytes of the stream; return the events they complete."""
        if self._closed:
            raise RuntimeError("feed() after close()")
        if data:
            self._chunks.append(data if type(data) is bytes else bytes(data))  # (a caller may reuse its buffer)
            self._chunked += len(data)
        # Joining only once enough bytes are held keeps tiny chunks from costing a copy each.
        if self.buffered < self._need:
            return []
        return self._parse(final=False)

    def close(self) -> list[RecordEvent]:
        """The stream has ended: return the last events, including any truncation."""
        if self._closed:
            return []
        self._closed = True
        return self._parse(final=True)

    def _parse(self, final: bool) -> list[RecordEvent]:
        """Parse the buffer, then each fed chunk in place: a unit that straddles two is parsed from a
        bridge (the buffer's unparsed tail and the chunk's first bytes it needs), so the chunks, most
        of the stream, are never copied (they had been joined into one buffer)."""
        out: list[RecordEvent] = []
        if self._format is None:
            self._join()
            self._format = self._detect(final)
            if self._format is None:
                return out
        while True:
            last = not self._chunks
            self._pos, self._need = self._format.parse(self._buf, self._pos, self._base, out, final and last)
            if last:
                return out
            rest = len(self._buf) - self._pos
            if rest + self._chunked < self._need and not final:
                return out  # (the unit is not all here yet)
            self._next_buffer(rest)

    def _next_buffer(self, rest: int) -> None:
        """Move on to the first chunk: itself when the buffer is used up, else a bridge, else (a unit
        longer than what the chunk has left) the tail and every chunk joined."""
        chunk, into = self._chunks[0], self._into
        if not rest:
            self._base += len(self._buf) - into  # (the stream offset of chunk[0])
            self._buf, self._pos, self._into = chunk, into, 0
            self._chunked -= len(chunk) - into
            self._chunks.pop(0)
            return
        more = max(self._need - rest, 1)
        if into + more > len(chunk):
            self._join()
            return
        self._base += self._pos
        self._buf, self._pos = self._buf[self._pos :] + chunk[into : into + more], 0
        self._chunked -= more
        self._into += more
        if self._into == len(chunk):
            self._chunks.pop(0)
            self._into = 0

    def _join(self) -> None:
        """The unparsed tail and every fed chunk as one buffer."""
        if not self._chunks:
            return
        self._base += self._pos
        with memoryview(self._buf) as view, memoryview(self._chunks[0]) as first:
            self._buf = b"".join([view[self._pos :], first[self._into :], *self._chunks[1:]])
        self._pos = self._into = 0
        self._chunks.clear()
        self._chunked = 0

    def _detect(self, final: bool) -> FramedFormat | None:
        head = self._buf[:_MAGIC_LEN]
        if len(head) < _MAGIC_LEN:
            if final:
                raise CaptureFormatError(
                    f"not a pcap or pcapng capture: only {len(self._buf)} bytes" if head else "empty capture file"
                )
            return None
        if is_pcap_magic(head):
            return PcapFormat(head, self._limits, self._native)
        if head == pcapng.SHB_MAGIC:
            return pcapng.PcapngFormat(self._limits, self._native)
        raise _not_a_capture(self._buf)
