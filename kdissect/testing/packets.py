"""Build wire frames for TCP segments: TCP, IPv4/IPv6 (fragments, options, extension
headers) and link headers, as plain bytes with valid checksums.

Test and synthetic-capture tooling: every function is pure and returns bytes, so tests
can also take the pieces apart to build shapes the high-level helpers do not.
"""

from __future__ import annotations

import struct
import sys
from array import array
from ipaddress import IPv4Address, IPv6Address, ip_address
from typing import Literal

from kdissect.dataclass import dataclass
from kdissect.sources.ip import IPPROTO_AH, IPPROTO_FRAGMENT, IPPROTO_TCP
from kdissect.sources.link import (
    AF_INET,
    ETHERTYPE_IPV4,
    ETHERTYPE_IPV6,
    ETHERTYPE_QINQ,
    ETHERTYPE_VLAN,
    LINKTYPE_ETHERNET,
    LINKTYPE_IPV4,
    LINKTYPE_IPV6,
    LINKTYPE_LINUX_SLL,
    LINKTYPE_LINUX_SLL2,
    LINKTYPE_LOOP,
    LINKTYPE_NULL,
    LINKTYPE_RAW,
    LINKTYPE_RAW_12,
    LINKTYPE_RAW_14,
)
from kdissect.sources.segment import TcpSegment

IPPROTO_HOPOPTS = 0
IPPROTO_ROUTING = 43
IPPROTO_DSTOPTS = 60
AF_INET6_BSD = 24  # what NetBSD/OpenBSD loopback captures store for IPv6
_SRC_MAC = bytes.fromhex("020000000001")
_DST_MAC = bytes.fromhex("020000000002")
_RAW_LINKS = frozenset({LINKTYPE_RAW, LINKTYPE_RAW_12, LINKTYPE_RAW_14, LINKTYPE_IPV4, LINKTYPE_IPV6})
_UNFRAGMENTABLE = frozenset({IPPROTO_HOPOPTS, IPPROTO_ROUTING})


def internet_checksum(data: bytes) -> int:
    """RFC 1071 ones'-complement sum, as the value to store big-endian."""
    if len(data) % 2:
        data += b"\0"
    total = sum(array("H", data))  # native-order words: the sum is byte-order independent
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    checksum = ~total & 0xFFFF
    return checksum if sys.byteorder == "big" else int.from_bytes(checksum.to_bytes(2, "little"), "big")


def _pseudo_header(src: IPv4Address | IPv6Address, dst: IPv4Address | IPv6Address, length: int) -> bytes:
    if src.version == 4:
        return src.packed + dst.packed + struct.pack("!BBH", 0, IPPROTO_TCP, length)
    return src.packed + dst.packed + struct.pack("!IxxxB", length, IPPROTO_TCP)


_MAX_OPTIONS = 40  # IPv4 and TCP header lengths are 4-bit counts of 4 bytes


def _padded_options(options: bytes) -> bytes:
    if len(options) > _MAX_OPTIONS:
        raise ValueError(f"{len(options)} option bytes do not fit in a header (max {_MAX_OPTIONS})")
    return options + b"\0" * (-len(options) % 4)


def tcp_bytes(seg: TcpSegment, options: bytes = b"") -> bytes:
    """TCP header (with ``options``, padded to 4 bytes) and payload, checksummed."""
    options = _padded_options(options)
    header_len = 20 + len(options)
    header = struct.pack(
        "!HHIIBBHHH",
        seg.src_port,
        seg.dst_port,
        seg.seq,
        seg.ack,
        header_len // 4 << 4,
        seg.flags,
        seg.window,
        0,
        0,
    )
    segment = header + options + seg.payload
    pseudo = _pseudo_header(ip_address(seg.src_ip), ip_address(seg.dst_ip), len(segment))
    checksum = internet_checksum(pseudo + segment)
    return segment[:16] + checksum.to_bytes(2, "big") + segment[18:]


def ipv4_packet(
    src: str,
    dst: str,
    payload: bytes,
    *,
    proto: int = IPPROTO_TCP,
    ident: int = 0,
    frag_offset: int = 0,
    more: bool = False,
    options: bytes = b"",
    total_len: int | None = None,
    ttl: int = 64,
) -> bytes:
    """An IPv4 header (options padded to 4 bytes) followed by ``payload``.

    ``frag_offset`` is in bytes (a multiple of 8); ``total_len`` overrides the length
    field (e.g. 0 as segmentation offload writes it).
    """
    options = _padded_options(options)
    header_len = 20 + len(options)
    length = header_len + len(payload) if total_len is None else total_len
    flags = (0x2000 if more else 0) | frag_offset // 8
    header = struct.pack(
        "!BBHHHBBH4s4s",
        0x40 | header_len // 4,
        0,
        length,
        ident,
        flags,
        ttl,
        proto,
        0,
        IPv4Address(src).packed,
        IPv4Address(dst).packed,
    )
    header += options
    checksum = internet_checksum(header)
    return header[:10] + checksum.to_bytes(2, "big") + header[12:] + payload


def ipv6_extension(ext_type: int, next_header: int) -> bytes:
    """A minimal valid extension header of type ``ext_type`` (hop-by-hop, routing with no
    segments left, destination options, or AH), 8 or 16 bytes."""
    if ext_type in (IPPROTO_HOPOPTS, IPPROTO_DSTOPTS):
        return bytes([next_header, 0, 1, 4, 0, 0, 0, 0])  # one PadN option
    if ext_type == IPPROTO_ROUTING:
        return bytes([next_header, 0, 253, 0, 0, 0, 0, 0])  # experimental type (RFC 4727), none left
    if ext_type == IPPROTO_AH:
        return bytes([next_header, 2, 0, 0]) + b"\0" * 12  # SPI, sequence, 4-byte ICV
    raise ValueError(f"no builder for IPv6 extension header {ext_type}")


def ipv6_fragment_header(next_header: int, frag_offset: int, more: bool, ident: int) -> bytes:
    return struct.pack("!BBHI", next_header, 0, frag_offset | int(more), ident)


def ipv6_packet(src: str, dst: str, next_header: int, payload: bytes, *, payload_len: int | None = None) -> bytes:
    """A fixed IPv6 header followed by ``payload`` (which holds any extension headers)."""
    length = len(payload) if payload_len is None else payload_len
    header = struct.pack(
        "!IHBB16s16s", 6 << 28, length, next_header, 64, IPv6Address(src).packed, IPv6Address(dst).packed
    )
    return header + payload


def chain_ipv6_extensions(ext_types: tuple[int, ...], upper: int, upper_bytes: bytes) -> tuple[int, bytes]:
    """Extension headers ``ext_types`` in order, then the upper-layer bytes: returns the
    first header's type (for the IPv6 next-header field) and the bytes."""
    data, next_header = upper_bytes, upper
    for ext_type in reversed(ext_types):
        data = ipv6_extension(ext_type, next_header) + data
        next_header = ext_type
    return next_header, data


@dataclass(frozen=True, slots=True)
class Encapsulation:
    """How a TCP segment is wrapped on the wire.

    ``vlans``: 802.1Q ids, outermost first; two or more make QinQ (802.1ad outer tags).
    ``fragment_size``: split the IP payload into fragments of this many bytes (a
    multiple of 8); ``fragment_order`` permutes them (indices in sending order).
    ``ipv6_extensions``: extension header types before TCP; with fragmentation,
    hop-by-hop and routing headers stay unfragmentable, the others are fragmented.
    ``loopback_order``: byte order of the NULL/LOOP family (default: little for NULL,
    big for LOOP).
    """

    link_type: int = LINKTYPE_ETHERNET
    vlans: tuple[int, ...] = ()
    ipv4_options: bytes = b""
    ipv6_extensions: tuple[int, ...] = ()
    tcp_options: bytes = b""
    fragment_size: int | None = None
    fragment_order: tuple[int, ...] | None = None
    loopback_order: Literal["little", "big"] | None = None


ETHERNET = Encapsulation()  # the default: plain Ethernet, IPv4 or IPv6 by address


def _ethertype_chain(vlans: tuple[int, ...], ethertype: int) -> tuple[int, bytes]:
    """First ethertype and the tags after it, for ``vlans`` outermost first."""
    tpids = [ETHERTYPE_QINQ] * (len(vlans) - 1) + [ETHERTYPE_VLAN] if vlans else []
    types = [*tpids, ethertype]
    rest = b"".join(struct.pack("!HH", vlan & 0x0FFF, types[i + 1]) for i, vlan in enumerate(vlans))
    return types[0], rest


def link_header(encap: Encapsulation, ip_version: int) -> bytes:
    """The link-layer header (and VLAN tags) in front of an IP packet."""
    link = encap.link_type
    if link in _RAW_LINKS:
        return b""
    if link in (LINKTYPE_NULL, LINKTYPE_LOOP):
        order = encap.loopback_order or ("little" if link == LINKTYPE_NULL else "big")
        return (AF_INET if ip_version == 4 else AF_INET6_BSD).to_bytes(4, order)
    first, tags = _ethertype_chain(encap.vlans, ETHERTYPE_IPV4 if ip_version == 4 else ETHERTYPE_IPV6)
    if link == LINKTYPE_ETHERNET:
        return _DST_MAC + _SRC_MAC + struct.pack("!H", first) + tags
    if link == LINKTYPE_LINUX_SLL:
        return struct.pack("!HHH8sH", 0, 1, 6, _SRC_MAC, first) + tags
    if link == LINKTYPE_LINUX_SLL2:
        return struct.pack("!HHIHBB8s", first, 0, 1, 1, 0, 6, _SRC_MAC) + tags
    raise ValueError(f"no builder for link type {link}")


def _pieces(data: bytes, size: int, order: tuple[int, ...] | None) -> list[tuple[int, bytes, bool]]:
    if size <= 0 or size % 8:
        raise ValueError("fragment_size must be a positive multiple of 8")
    pieces = [(start, data[start : start + size], start + size < len(data)) for start in range(0, len(data), size)]
    return pieces if order is None else [pieces[i] for i in order]


def segment_ip_packets(seg: TcpSegment, encap: Encapsulation = ETHERNET, ident: int = 1) -> list[bytes]:
    """The IP packet(s) carrying ``seg``: one, or its fragments in ``fragment_order``."""
    tcp = tcp_bytes(seg, encap.tcp_options)
    if ip_address(seg.src_ip).version == 4:
        if encap.fragment_size is None:
            return [ipv4_packet(seg.src_ip, seg.dst_ip, tcp, ident=ident, options=encap.ipv4_options)]
        return [
            ipv4_packet(
                seg.src_ip, seg.dst_ip, part, ident=ident, frag_offset=start, more=more, options=encap.ipv4_options
            )
            for start, part, more in _pieces(tcp, encap.fragment_size, encap.fragment_order)
        ]
    exts = encap.ipv6_extensions
    if encap.fragment_size is None:
        first, payload = chain_ipv6_extensions(exts, IPPROTO_TCP, tcp)
        return [ipv6_packet(seg.src_ip, seg.dst_ip, first, payload)]
    split = next((i for i, ext in enumerate(exts) if ext not in _UNFRAGMENTABLE), len(exts))
    inner_first, fragmentable = chain_ipv6_extensions(exts[split:], IPPROTO_TCP, tcp)
    packets = []
    for start, part, more in _pieces(fragmentable, encap.fragment_size, encap.fragment_order):
        frag = ipv6_fragment_header(inner_first, start, more, ident) + part
        first, payload = chain_ipv6_extensions(exts[:split], IPPROTO_FRAGMENT, frag)
        packets.append(ipv6_packet(seg.src_ip, seg.dst_ip, first, payload))
    return packets


def segment_frames(seg: TcpSegment, encap: Encapsulation = ETHERNET, ident: int = 1) -> list[bytes]:
    """The link-layer frame(s) carrying ``seg``."""
    header = link_header(encap, ip_address(seg.src_ip).version)
    return [header + packet for packet in segment_ip_packets(seg, encap, ident)]
