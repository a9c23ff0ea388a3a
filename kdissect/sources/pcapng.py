"""pcapng files: sections of typed blocks, each framed by a leading and trailing length.

A Section Header Block fixes the byte order and forgets earlier interfaces; Interface
Description Blocks give each interface its link type, snap length and timestamp unit
(``if_tsresol``, ``if_tsoffset``). Packets come in Enhanced, Simple or obsolete Packet
Blocks; Decryption Secrets Blocks (``editcap --inject-secrets``) are handed on as
:class:`DecryptionSecrets`; every other block type is skipped.
"""

from __future__ import annotations

from struct import Struct

from kdissect.dataclass import dataclass
from kdissect.sources.native_records import NativeRecords
from kdissect.sources.record_loop import (
    ACCEPT,
    REJECT,
    CorruptFraming,
    FramedFormat,
    ReaderLimits,
    checked_wire_len,
)
from kdissect.sources.shapes import (
    AnomalyKind,
    CaptureFormatError,
    CaptureRecord,
    DecryptionSecrets,
    RecordEvent,
    SourceAnomaly,
)

SHB_TYPE = 0x0A0D0D0A  # the same in both byte orders
SHB_MAGIC = SHB_TYPE.to_bytes(4, "little")
IDB_TYPE = 1
PB_TYPE = 2  # obsolete Packet Block
SPB_TYPE = 3
EPB_TYPE = 6
DSB_TYPE = 10
KNOWN_TYPES = frozenset(
    # SHB, IDB, PB, SPB, NRB, ISB, EPB, systemd journal, DSB, the two custom block types
    {SHB_TYPE, IDB_TYPE, PB_TYPE, SPB_TYPE, 4, 5, EPB_TYPE, 9, 10, 0xBAD, 0x40000BAD}
)
BYTE_ORDER_MAGIC = 0x1A2B3C4D
BYTE_ORDERS = {BYTE_ORDER_MAGIC.to_bytes(4, "little"): "<", BYTE_ORDER_MAGIC.to_bytes(4, "big"): ">"}
_MIN_BLOCK = 12
_MIN_SHB = 28
OPT_TSRESOL = 9
OPT_TSOFFSET = 14
_NS_PER_S = 1_000_000_000


@dataclass(frozen=True, slots=True)
class _Interface:
    link_type: int
    snaplen: int
    ts_units_per_s: int  # from if_tsresol: 10**k or 2**k
    ts_offset_ns: int  # from if_tsoffset (whole seconds)

    def ts_ns(self, units: int) -> int:
        return units * _NS_PER_S // self.ts_units_per_s + self.ts_offset_ns


class _Codec:
    """The structs of one byte order (chosen per section)."""

    def __init__(self, order: str) -> None:
        self.big_endian = order == ">"
        self.u32 = Struct(order + "I")
        self.head = Struct(order + "II")
        self.idb = Struct(order + "HHI")
        self.epb = Struct(order + "IIIII")
        self.pb = Struct(order + "HHIIII")
        self.opt = Struct(order + "HH")
        self.shb = Struct(order + "HH")
        self.i64 = Struct(order + "q")


_CODECS = {order: _Codec(order) for order in BYTE_ORDERS.values()}


class PcapngFormat(FramedFormat):
    """Push parser state for one pcapng stream (see ``FramedFormat.parse``)."""

    def __init__(self, limits: ReaderLimits, native: NativeRecords | None = None) -> None:
        super().__init__(limits)
        self._codec: _Codec | None = None  # None until the first section header
        self._interfaces: list[_Interface] = []
        self._last_ts = 0
        # With ``native``, runs of enhanced and simple packet blocks become segments in C
        # (``native_records``); this class still reads every other block.
        self.native = native

    def _step(self, buf: bytes, pos: int, base: int, out: list[RecordEvent]) -> int:
        native, codec = self.native, self._codec
        if native is not None and native.active and codec is not None and self._interfaces:
            taken, self._last_ts = native.take_pcapng(buf, pos, base, codec.big_endian, self._interfaces,
                                                      self._limits.max_block_len, self._last_ts, out)
            if taken:
                return taken
        avail = len(buf) - pos
        if avail < _MIN_BLOCK:
            return -_MIN_BLOCK
        codec = self._block_codec(buf, pos)
        if codec is None:
            if self._codec is None:
                raise CaptureFormatError("pcapng section header has no valid byte-order magic")
            raise CorruptFraming("pcapng section header with an invalid byte-order magic")
        btype, blen = codec.head.unpack_from(buf, pos)
        if not self._length_ok(btype, blen):
            raise CorruptFraming(f"pcapng block type {btype:#x} claims an impossible length {blen}")
        if avail < blen:
            return -blen
        trailer = codec.u32.unpack_from(buf, pos + blen - 4)[0]
        if trailer != blen:
            raise CorruptFraming(f"pcapng block type {btype:#x}: length {blen} but trailing length {trailer}")
        body, body_end = pos + 8, pos + blen - 4
        offset = base + pos
        if btype == EPB_TYPE:
            self._enhanced_packet(codec, buf, body, body_end, offset, out)
        elif btype == SHB_TYPE:
            self._section_header(codec, buf, body, offset, out)
        elif btype == IDB_TYPE:
            self._interface(codec, buf, body, body_end, offset, out)
        elif btype == SPB_TYPE:
            self._simple_packet(codec, buf, body, body_end, offset, out)
        elif btype == PB_TYPE:
            self._obsolete_packet(codec, buf, body, body_end, offset, out)
        elif btype == DSB_TYPE:
            self._secrets(codec, buf, body, body_end, offset, out)
        return blen

    def _probe(self, buf: bytes, pos: int, final: bool) -> int:
        end = len(buf)
        if end - pos < _MIN_BLOCK:
            return REJECT if final else _MIN_BLOCK
        codec = self._block_codec(buf, pos)
        if codec is None:
            return REJECT
        btype, blen = codec.head.unpack_from(buf, pos)
        if btype not in KNOWN_TYPES or not self._length_ok(btype, blen):
            return REJECT
        if btype == EPB_TYPE and codec.u32.unpack_from(buf, pos + 8)[0] >= len(self._interfaces):
            return REJECT
        if end - pos < blen:
            return REJECT if final else blen  # a real block cut by the end cannot be told from noise
        return ACCEPT if codec.u32.unpack_from(buf, pos + blen - 4)[0] == blen else REJECT

    def _block_codec(self, buf: bytes, pos: int) -> _Codec | None:
        """The byte order of the block at ``pos``: a section header names its own."""
        if buf[pos : pos + 4] != SHB_MAGIC:
            return self._codec
        order = BYTE_ORDERS.get(buf[pos + 8 : pos + 12])
        return None if order is None else _CODECS[order]

    def _length_ok(self, btype: int, blen: int) -> bool:
        minimum = _MIN_SHB if btype == SHB_TYPE else _MIN_BLOCK
        return minimum <= blen <= self._limits.max_block_len and blen % 4 == 0

    def _section_header(self, codec: _Codec, buf: bytes, body: int, offset: int, out: list[RecordEvent]) -> None:
        self._codec = codec
        self._interfaces = []
        self._last_ts = 0
        major, minor = codec.shb.unpack_from(buf, body + 4)
        if major != 1:
            out.append(SourceAnomaly(AnomalyKind.BAD_RECORD, f"pcapng version {major}.{minor}; reading as 1.0", offset))

    def _interface(
        self, codec: _Codec, buf: bytes, body: int, body_end: int, offset: int, out: list[RecordEvent]
    ) -> None:
        if body_end - body < 8:
            out.append(SourceAnomaly(AnomalyKind.BAD_RECORD, "interface description block too short", offset))
            return
        link_type, _reserved, snaplen = codec.idb.unpack_from(buf, body)
        units_per_s, offset_s = 1_000_000, 0
        for code, value in self._options(codec, buf, body + 8, body_end, offset, out):
            if code == OPT_TSRESOL and value:
                exponent = value[0] & 0x7F
                units_per_s = 2**exponent if value[0] & 0x80 else 10**exponent
            elif code == OPT_TSOFFSET and len(value) == 8:
                offset_s = codec.i64.unpack(value)[0]
        self._interfaces.append(_Interface(link_type, snaplen, units_per_s, offset_s * _NS_PER_S))

    def _options(
        self, codec: _Codec, buf: bytes, pos: int, end: int, offset: int, out: list[RecordEvent]
    ) -> list[tuple[int, bytes]]:
        """The (code, value) options in ``buf[pos:end]``, stopping at opt_endofopt."""
        options = []
        while end - pos >= 4:
            code, length = codec.opt.unpack_from(buf, pos)
            if code == 0:
                break
            if pos + 4 + length > end:
                out.append(SourceAnomaly(AnomalyKind.BAD_RECORD, f"option {code} overruns its block", offset))
                break
            options.append((code, buf[pos + 4 : pos + 4 + length]))
            pos += 4 + (length + 3) // 4 * 4
        return options

    def _enhanced_packet(
        self, codec: _Codec, buf: bytes, body: int, body_end: int, offset: int, out: list[RecordEvent]
    ) -> None:
        if body_end - body < 20:
            out.append(SourceAnomaly(AnomalyKind.BAD_RECORD, "enhanced packet block too short", offset))
            return
        iface_id, ts_high, ts_low, caplen, orig = codec.epb.unpack_from(buf, body)
        self._packet(iface_id, ts_high << 32 | ts_low, buf, body + 20, body_end, caplen, orig, offset, out)

    def _secrets(self, codec: _Codec, buf: bytes, body: int, body_end: int, offset: int,
                 out: list[RecordEvent]) -> None:  # fmt: skip
        if body_end - body < 8:
            out.append(SourceAnomaly(AnomalyKind.BAD_RECORD, "decryption secrets block too short", offset))
            return
        secrets_type, length = codec.head.unpack_from(buf, body)
        if length > body_end - body - 8:
            out.append(SourceAnomaly(AnomalyKind.BAD_RECORD, "decryption secrets block longer than its block", offset))
            return
        out.append(DecryptionSecrets(secrets_type, bytes(buf[body + 8 : body + 8 + length])))

    def _obsolete_packet(
        self, codec: _Codec, buf: bytes, body: int, body_end: int, offset: int, out: list[RecordEvent]
    ) -> None:
        if body_end - body < 20:
            out.append(SourceAnomaly(AnomalyKind.BAD_RECORD, "packet block too short", offset))
            return
        iface_id, _drops, ts_high, ts_low, caplen, orig = codec.pb.unpack_from(buf, body)
        self._packet(iface_id, ts_high << 32 | ts_low, buf, body + 20, body_end, caplen, orig, offset, out)

    def _simple_packet(
        self, codec: _Codec, buf: bytes, body: int, body_end: int, offset: int, out: list[RecordEvent]
    ) -> None:
        if body_end - body < 4:
            out.append(SourceAnomaly(AnomalyKind.BAD_RECORD, "simple packet block too short", offset))
            return
        if not self._interfaces:
            out.append(SourceAnomaly(AnomalyKind.BAD_RECORD, "simple packet block before any interface", offset))
            return
        orig = codec.u32.unpack_from(buf, body)[0]
        caplen = min(orig, body_end - body - 4)
        snaplen = self._interfaces[0].snaplen
        if snaplen:
            caplen = min(caplen, snaplen)
        data = buf[body + 4 : body + 4 + caplen]
        out.append(CaptureRecord(self._interfaces[0].link_type, self._last_ts, data, orig, offset, 0))

    def _packet(
        self,
        iface_id: int,
        units: int,
        buf: bytes,
        data_pos: int,
        body_end: int,
        caplen: int,
        orig: int,
        offset: int,
        out: list[RecordEvent],
    ) -> None:
        """Emit the record of an enhanced or obsolete packet block."""
        if iface_id >= len(self._interfaces):
            out.append(SourceAnomaly(AnomalyKind.BAD_RECORD, f"packet on undeclared interface {iface_id}", offset))
            return
        iface = self._interfaces[iface_id]
        ts_ns = iface.ts_ns(units)
        if data_pos + caplen > body_end:
            out.append(
                SourceAnomaly(AnomalyKind.BAD_RECORD, f"captured length {caplen} overruns its block", offset, ts_ns)
            )
            caplen = body_end - data_pos
        orig = checked_wire_len(orig, caplen, offset, ts_ns, out)
        self._last_ts = ts_ns
        out.append(CaptureRecord(iface.link_type, ts_ns, buf[data_pos : data_pos + caplen], orig, offset, iface_id))
