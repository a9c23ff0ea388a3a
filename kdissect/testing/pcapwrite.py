"""Write frames or TCP segments as pcap or pcapng bytes, for tests and synthetic captures.

Pure functions returning bytes: nothing touches the disk. The block builders are public
so tests can splice unknown, corrupt or extra blocks between good ones.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Literal

from kdissect.dataclass import dataclass
from kdissect.sources.pcapng import (
    BYTE_ORDER_MAGIC,
    EPB_TYPE,
    IDB_TYPE,
    OPT_TSOFFSET,
    OPT_TSRESOL,
    PB_TYPE,
    SHB_TYPE,
    SPB_TYPE,
)
from kdissect.sources.segment import TcpSegment
from kdissect.testing.packets import ETHERNET, Encapsulation, segment_frames

ByteOrder = Literal["little", "big"]
BlockKind = Literal["epb", "spb", "pb"]
PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D
DEFAULT_SNAPLEN = 262_144
_NS_PER_S = 1_000_000_000


def _fmt(byteorder: ByteOrder) -> str:
    return "<" if byteorder == "little" else ">"


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame as it was on the wire, and when."""

    ts_ns: int
    data: bytes
    interface: int = 0


@dataclass(frozen=True, slots=True)
class Interface:
    """A pcapng interface. ``tsresol`` is the ``if_tsresol`` byte (6: microseconds,
    9: nanoseconds, ``0x80 | k``: 2**-k s); ``tsoffset`` the ``if_tsoffset`` seconds."""

    link_type: int
    snaplen: int = 0  # 0: no limit
    tsresol: int = 6
    tsoffset: int = 0

    @property
    def units_per_s(self) -> int:
        exponent = self.tsresol & 0x7F
        return 2**exponent if self.tsresol & 0x80 else 10**exponent

    def ts_units(self, ts_ns: int) -> int:
        return (ts_ns - self.tsoffset * _NS_PER_S) * self.units_per_s // _NS_PER_S


def pcap_bytes(
    frames: Iterable[Frame],
    *,
    link_type: int,
    snaplen: int = DEFAULT_SNAPLEN,
    nanosecond: bool = False,
    byteorder: ByteOrder = "little",
) -> bytes:
    """A classic pcap file; frames longer than ``snaplen`` are cut (wire length kept)."""
    fmt = _fmt(byteorder)
    magic = PCAP_MAGIC_NS if nanosecond else PCAP_MAGIC_US
    unit = 1 if nanosecond else 1000
    parts = [struct.pack(fmt + "IHHiIII", magic, 2, 4, 0, 0, snaplen, link_type)]
    for frame in frames:
        seconds, rest = divmod(frame.ts_ns, _NS_PER_S)
        captured = frame.data[:snaplen]
        parts.append(struct.pack(fmt + "IIII", seconds, rest // unit, len(captured), len(frame.data)))
        parts.append(captured)
    return b"".join(parts)


def _pad4(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 4)


def pcapng_block(block_type: int, body: bytes, byteorder: ByteOrder = "little") -> bytes:
    """Any pcapng block: type, lengths and ``body`` padded to 4 bytes."""
    fmt = _fmt(byteorder)
    body = _pad4(body)
    length = 12 + len(body)
    return struct.pack(fmt + "II", block_type, length) + body + struct.pack(fmt + "I", length)


def pcapng_option(code: int, value: bytes, byteorder: ByteOrder = "little") -> bytes:
    return struct.pack(_fmt(byteorder) + "HH", code, len(value)) + _pad4(value)


def shb_block(byteorder: ByteOrder = "little", version: tuple[int, int] = (1, 0)) -> bytes:
    body = struct.pack(_fmt(byteorder) + "IHHq", BYTE_ORDER_MAGIC, *version, -1)
    return pcapng_block(SHB_TYPE, body, byteorder)


def idb_block(interface: Interface, byteorder: ByteOrder = "little") -> bytes:
    options = b""
    if interface.tsresol != 6:
        options += pcapng_option(OPT_TSRESOL, bytes([interface.tsresol]), byteorder)
    if interface.tsoffset:
        options += pcapng_option(OPT_TSOFFSET, struct.pack(_fmt(byteorder) + "q", interface.tsoffset), byteorder)
    if options:
        options += pcapng_option(0, b"", byteorder)
    body = struct.pack(_fmt(byteorder) + "HHI", interface.link_type, 0, interface.snaplen) + options
    return pcapng_block(IDB_TYPE, body, byteorder)


def packet_block(frame: Frame, interface: Interface, kind: BlockKind = "epb", byteorder: ByteOrder = "little") -> bytes:
    """An enhanced, simple or obsolete packet block, cut at the interface's snap length."""
    fmt = _fmt(byteorder)
    captured = frame.data[: interface.snaplen] if interface.snaplen else frame.data
    if kind == "spb":
        return pcapng_block(SPB_TYPE, struct.pack(fmt + "I", len(frame.data)) + captured, byteorder)
    units = interface.ts_units(frame.ts_ns)
    high, low = units >> 32, units & 0xFFFFFFFF
    if kind == "pb":
        head = struct.pack(fmt + "HHIIII", frame.interface, 0, high, low, len(captured), len(frame.data))
        return pcapng_block(PB_TYPE, head + captured, byteorder)
    head = struct.pack(fmt + "IIIII", frame.interface, high, low, len(captured), len(frame.data))
    return pcapng_block(EPB_TYPE, head + captured, byteorder)


def pcapng_section(
    frames: Iterable[Frame],
    interfaces: Sequence[Interface],
    *,
    byteorder: ByteOrder = "little",
    block: BlockKind = "epb",
) -> bytes:
    """One section: header, interface descriptions, then a packet block per frame. A
    file of several sections is the concatenation of several of these."""
    parts = [shb_block(byteorder), *(idb_block(iface, byteorder) for iface in interfaces)]
    parts.extend(packet_block(frame, interfaces[frame.interface], block, byteorder) for frame in frames)
    return b"".join(parts)


def segment_frame_list(segments: Iterable[TcpSegment], encap: Encapsulation = ETHERNET) -> list[Frame]:
    """Frames for ``segments`` (fragments share their segment's timestamp); IP ids count up."""
    return [
        Frame(seg.ts_ns, data)
        for ident, seg in enumerate(segments, start=1)
        for data in segment_frames(seg, encap, ident & 0xFFFF)
    ]


def write_capture(
    segments: Iterable[TcpSegment],
    *,
    encap: Encapsulation = ETHERNET,
    fmt: Literal["pcap", "pcapng"] = "pcap",
    snaplen: int = DEFAULT_SNAPLEN,
    nanosecond: bool = False,
    byteorder: ByteOrder = "little",
    block: BlockKind = "epb",
) -> bytes:
    """TCP segments as a whole capture file in one call (pcapng: one interface whose
    resolution is ns when ``nanosecond``, else µs)."""
    frames = segment_frame_list(segments, encap)
    if fmt == "pcap":
        return pcap_bytes(
            frames, link_type=encap.link_type, snaplen=snaplen, nanosecond=nanosecond, byteorder=byteorder
        )
    interface = Interface(encap.link_type, snaplen, 9 if nanosecond else 6)
    return pcapng_section(frames, [interface], byteorder=byteorder, block=block)
