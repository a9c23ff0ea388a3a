"""Classic libpcap files: a 24-byte global header, then length-prefixed records.

The file's snap length is not used to judge record lengths: real files break it (an
old 65535-byte snap length on a loopback capture holds 65550-byte frames), so only the
configured ``max_caplen`` marks a captured length as corrupt, as in libpcap.
"""

from __future__ import annotations

from struct import Struct

from kdissect.sources.native_records import NativeRecords
from kdissect.sources.record_loop import (
    ACCEPT,
    REJECT,
    CorruptFraming,
    FramedFormat,
    ReaderLimits,
    checked_wire_len,
)
from kdissect.sources.shapes import AnomalyKind, CaptureRecord, RecordEvent, SourceAnomaly

# First four stored bytes -> (struct byte order, nanoseconds per fraction unit, record header length).
_MAGICS: dict[bytes, tuple[str, int, int]] = {
    b"\xd4\xc3\xb2\xa1": ("<", 1000, 16),
    b"\xa1\xb2\xc3\xd4": (">", 1000, 16),
    b"\x4d\x3c\xb2\xa1": ("<", 1, 16),
    b"\xa1\xb2\x3c\x4d": (">", 1, 16),
    # Kuznetzov's patched libpcap: 8 more bytes per record (ifindex, protocol, packet type).
    b"\x34\xcd\xb2\xa1": ("<", 1000, 24),
    b"\xa1\xb2\xcd\x34": (">", 1000, 24),
}
GLOBAL_HEADER_LEN = 24
_LINK_TYPE_MASK = 0xFFFF  # the upper bits of the network field carry FCS information
# Resync plausibility: nothing on a link is bigger (Linux BIG TCP tops out at 512 KiB),
# and neighbouring records are not a month apart.
_MAX_WIRE_LEN = 1 << 20
_MAX_CLOCK_JUMP_S = 30 * 86_400


def record_layout(magic: bytes) -> tuple[str, int, int] | None:
    """(struct byte order, ns per fraction unit, record header length) of a pcap magic, else None."""
    return _MAGICS.get(magic)


def is_pcap_magic(magic: bytes) -> bool:
    """True when the first four bytes of a stream are one of the pcap magics."""
    return magic in _MAGICS


class PcapFormat(FramedFormat):
    """Push parser state for one classic pcap stream (see ``FramedFormat.parse``)."""

    def __init__(self, magic: bytes, limits: ReaderLimits, native: NativeRecords | None = None) -> None:
        super().__init__(limits)
        order, self._ns_per_unit, self._rec_len = _MAGICS[magic]
        self._big_endian = order == ">"
        # With ``native``, runs of common records become segments in C (``native_records``).
        self.native = native
        self._units_per_s = 1_000_000_000 // self._ns_per_unit
        self._global = Struct(order + "4sHHiIII")
        self._rec = Struct(order + "IIII")
        self._link_type: int | None = None
        self._last_sec: int | None = None

    def _step(self, buf: bytes, pos: int, base: int, out: list[RecordEvent]) -> int:
        if self._link_type is None:
            return self._global_header(buf, pos, base, out)
        native = self.native
        if native is not None and native.active:
            taken, last_sec = native.take(buf, pos, base, self._big_endian, self._ns_per_unit, self._rec_len,
                                          self._limits.max_caplen, self._link_type, out)
            if taken:
                self._last_sec = last_sec
                return taken
        avail = len(buf) - pos
        hdr_len = self._rec_len
        if avail < hdr_len:
            return -hdr_len
        sec, frac, incl, orig = self._rec.unpack_from(buf, pos)
        if incl > self._limits.max_caplen:
            raise CorruptFraming(f"pcap record claims {incl} captured bytes (limit {self._limits.max_caplen})")
        size = hdr_len + incl
        if avail < size:
            return -size
        ts_ns = sec * 1_000_000_000 + frac * self._ns_per_unit
        orig = checked_wire_len(orig, incl, base + pos, ts_ns, out)
        out.append(CaptureRecord(self._link_type, ts_ns, buf[pos + hdr_len : pos + size], orig, base + pos))
        self._last_sec = sec
        return size

    def _global_header(self, buf: bytes, pos: int, base: int, out: list[RecordEvent]) -> int:
        if len(buf) - pos < GLOBAL_HEADER_LEN:
            return -GLOBAL_HEADER_LEN
        _magic, major, minor, _zone, _sigfigs, _snaplen, network = self._global.unpack_from(buf, pos)
        if major != 2:
            out.append(
                SourceAnomaly(AnomalyKind.BAD_RECORD, f"pcap version {major}.{minor}; reading as 2.4", base + pos)
            )
        self._link_type = network & _LINK_TYPE_MASK
        return GLOBAL_HEADER_LEN

    def _probe(self, buf: bytes, pos: int, final: bool) -> int:
        end = len(buf)
        hdr_len = self._rec_len
        if end - pos < hdr_len:
            return REJECT if final else hdr_len
        sec, frac, incl, orig = self._rec.unpack_from(buf, pos)
        if not self._plausible(sec, frac, incl, orig):
            return REJECT
        nxt = pos + hdr_len + incl
        if nxt > end:  # a real record cut by the end of the stream cannot be told from noise
            return REJECT if final else nxt + hdr_len - pos
        if end - nxt < hdr_len:
            return ACCEPT if final else nxt + hdr_len - pos
        return ACCEPT if self._plausible(*self._rec.unpack_from(buf, nxt)) else REJECT

    def _plausible(self, sec: int, frac: int, incl: int, orig: int) -> bool:
        if not (incl <= self._limits.max_caplen and 0 < orig <= _MAX_WIRE_LEN and incl <= orig):
            return False
        if frac >= self._units_per_s:
            return False
        return self._last_sec is None or abs(sec - self._last_sec) <= _MAX_CLOCK_JUMP_S
