"""The TLS record layer of one direction: byte runs in, whole records out.

Records split across segments are joined, several in one segment are split, and a length no TLS
record may have is reported and hunted past. A direction picked up mid-stream (or after a lost
segment took a record header) has no known record boundary: the reader hunts for one, accepting a
position only when the header there and the header its length points to both look like TLS (a
chance 5-byte match is not enough). Memory is bounded by one record plus one header.
"""

from __future__ import annotations

from collections import deque

from kdissect.dataclass import dataclass

CHANGE_CIPHER_SPEC, ALERT, HANDSHAKE, APPLICATION_DATA = 20, 21, 22, 23
HEADER = 5
MAX_RECORD = (1 << 14) + 2048  # TLSCiphertext.length may not exceed 2^14 + 2048 (RFC 5246 §6.2.3)
LEGACY_MINOR = 3  # every record after the hellos carries version 3.3, TLS 1.2 and 1.3 alike


def looks_like_tls(head: bytes) -> bool:
    """A TLS record header's first bytes: content type 20-23, protocol major version 3, minor 0-4."""
    return len(head) >= 3 and CHANGE_CIPHER_SPEC <= head[0] <= APPLICATION_DATA and head[1] == 3 and head[2] <= 4


def _header_ok(buf: bytes | bytearray, at: int, strict: bool) -> bool:
    """A plausible header at ``at``; ``strict`` (hunting) asks for what follows a handshake."""
    if not looks_like_tls(buf[at : at + 3]):
        return False
    length = int.from_bytes(buf[at + 3 : at + 5], "big")
    if length == 0 or length > MAX_RECORD:
        return False
    return not strict or (buf[at] in (ALERT, APPLICATION_DATA) and buf[at + 2] == LEGACY_MINOR)


@dataclass(slots=True)
class Record:
    """One TLS record read from a connection's byte stream."""

    content_type: int
    version: int
    fragment: bytes
    offset: int  # stream offset of the header
    ts_ns: int  # capture time of the packet that completed the record


@dataclass(frozen=True, slots=True)
class RecordsLost:
    """Records that will never be read: ``count`` of them when known (a hole inside one record),
    None when the boundary was lost too (the reader hunts for the next one)."""

    offset: int
    count: int | None
    ts_ns: int
    reason: str


@dataclass(frozen=True, slots=True)
class BadHeader:
    """Bytes where a record header was due that no TLS record has (the reader hunts past them)."""

    offset: int
    ts_ns: int
    detail: str


RecordEvent = Record | RecordsLost | BadHeader


class RecordReader:
    """Whole records of one direction, in order."""

    __slots__ = ("_buf", "_chunks", "_need", "_skip_to", "_start", "at", "hunting", "skipped", "synced")

    def __init__(self, hunting: bool = False) -> None:
        self._buf = bytearray()
        self._start = 0  # index in _buf of the next unread byte
        self._need = 0  # _buf's length before the record being read is whole (most segments end short of it)
        self.at: int | None = None  # stream offset of _buf[_start]
        self._skip_to: int | None = None  # the rest of a record a hole cut: skipped up to here
        # (end offset, capture time) of the runs buffered: a record's time is its last byte's
        self._chunks: deque[tuple[int, int]] = deque()
        self.hunting = hunting
        self.synced = False  # a record boundary was found by hunting or known from the start
        self.skipped = 0  # bytes hunted past

    def feed(self, offset: int, data: bytes, ts_ns: int) -> list[RecordEvent]:
        if self.at is None or offset != self.at + len(self._buf) - self._start:
            self._reset(offset)
        if self._skip_to is not None:
            end = offset + len(data)
            if end <= self._skip_to:
                self.at = end
                return []
            data = data[self._skip_to - offset :] if offset < self._skip_to else data
            self._reset(max(offset, self._skip_to))
            self._skip_to = None
        self._buf += data
        self._chunks.append((offset + len(data), ts_ns))
        if len(self._buf) < self._need:
            return []
        out: list[RecordEvent] = []
        self._read(ts_ns, out, final=False)
        return out

    def gap(self, offset: int, length: int | None, ts_ns: int, reason: str) -> list[RecordEvent]:
        """Bytes that will never come: the record they cut is lost; without its header, the
        boundary too (hunting)."""
        if reason == "midstream":
            self.hunting = True
            self._reset(offset)
            return []
        pending = self._pending_end()
        self._reset(offset + (length or 0))
        if length is not None and pending is not None and offset + length <= pending:
            self._skip_to = pending
            return [RecordsLost(offset, 1, ts_ns, reason)]
        self.hunting = True
        return [RecordsLost(offset, None, ts_ns, reason)]

    def finish(self, ts_ns: int) -> list[RecordEvent]:
        """End of the direction: a hunted candidate that ends exactly at the last byte counts."""
        out: list[RecordEvent] = []
        if self.at is not None:  # a direction that never carried a byte has nothing to finish
            self._read(ts_ns, out, final=True)
        return out

    @property
    def pending_bytes(self) -> int:
        return len(self._buf) - self._start

    def _reset(self, offset: int) -> None:
        self._need = 0
        self._chunks.clear()
        self._buf = bytearray()
        self._start = 0
        self.at = offset

    def _pending_end(self) -> int | None:
        """Where the record being read ends, when its header was read."""
        if self.hunting or self.at is None or self.pending_bytes < HEADER:
            return None
        length = int.from_bytes(self._buf[self._start + 3 : self._start + 5], "big")
        return self.at + HEADER + length

    def _read(self, ts_ns: int, out: list[RecordEvent], final: bool) -> None:
        buf = self._buf
        assert self.at is not None
        while True:
            if self.hunting and not self._hunt(final):
                break
            start = self._start
            if len(buf) - start < HEADER:
                break
            if not _header_ok(buf, start, strict=False):
                out.append(BadHeader(self.at, ts_ns, f"bytes {bytes(buf[start:start + HEADER]).hex()} are no TLS "
                                     "record header"))  # fmt: skip
                self.hunting = True
                self._advance(1)
                self.skipped += 1
                continue
            length = int.from_bytes(buf[start + 3 : start + 5], "big")
            end = start + HEADER + length
            if len(buf) < end:
                self._need = end
                break
            version = int.from_bytes(buf[start + 1 : start + 3], "big")
            stream_end = self.at + HEADER + length
            chunks = self._chunks
            while len(chunks) > 1 and chunks[0][0] < stream_end:
                chunks.popleft()
            done_ts = chunks[0][1] if chunks else ts_ns
            fragment = bytes(memoryview(buf)[start + HEADER : end])  # one copy, not two
            out.append(Record(buf[start], version, fragment, self.at, done_ts))
            self.synced = True
            self._advance(HEADER + length)
        if self._start > (1 << 16) and self._start * 2 > len(buf):
            del buf[: self._start]
            self._need = max(0, self._need - self._start)
            self._start = 0
            while len(self._chunks) > 1 and self._chunks[0][0] <= self.at:
                self._chunks.popleft()  # runs hunted past

    def _advance(self, n: int) -> None:
        assert self.at is not None
        self._start += n
        self.at += n

    def _hunt(self, final: bool) -> bool:
        """Move to the first position whose header is followed by another header (or, at the
        end, by the end of the stream); False while that cannot be told yet."""
        buf = self._buf
        while len(buf) - self._start >= HEADER:
            p = self._start
            if _header_ok(buf, p, strict=True):
                nxt = p + HEADER + int.from_bytes(buf[p + 3 : p + 5], "big")
                if nxt + HEADER <= len(buf):
                    if _header_ok(buf, nxt, strict=True):
                        self.hunting = False
                        return True
                elif final and nxt == len(buf):
                    self.hunting = False
                    return True
                elif not final:
                    return False  # wait for the header this one points to
            self._advance(1)
            self.skipped += 1
        return False
