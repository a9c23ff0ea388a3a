"""IPv4 and IPv6 headers: addresses, where the upper-layer payload is, fragment info.

Pure functions over ``(data, pos)`` so no byte is copied until a segment is built.
Packets that cannot carry TCP return None (the caller counts them as non-TCP).
"""

from __future__ import annotations

from struct import Struct
from typing import NamedTuple

from kdissect.lazy import lazy_module
from kdissect.sources.packet_error import MalformedPacket

socket = lazy_module("socket")  # IPv6 addresses only: ``socket`` loads ``selectors`` and more (~3 ms a process)

IPPROTO_TCP = 6
IPPROTO_FRAGMENT = 44
IPPROTO_AH = 51
# Extension headers sized in 8-octet units after the first 8 (AH counts 4-octet units, less 2).
# Hop-by-hop, routing, destination options, mobility, HIP, shim6; plus AH and fragment.
_IPV6_EXTENSIONS = frozenset({0, 43, 60, 135, 139, 140, IPPROTO_AH, IPPROTO_FRAGMENT})
IPV6_HEADER_LEN = 40
_V4_FIELDS = Struct("!HHH")  # total length, identification, flags + fragment offset
_V6_FRAGMENT = Struct("!HI")  # offset + M flag, identification
_V4_MORE_FRAGMENTS = 0x2000
_V4_OFFSET_MASK = 0x1FFF


class Fragment(NamedTuple):
    """Where a fragment's payload belongs in its datagram."""

    key: tuple[int, str, str, int]  # (IP version, src, dst, identification)
    offset: int
    more: bool


class IpPacket(NamedTuple):
    """An IP packet located in a captured frame.

    ``data[start:end]`` is the captured part of the upper-layer payload; ``length`` is
    the payload length the IP header(s) claim. For a fragment, ``proto`` is the
    protocol (IPv6: first header) of the reassembled datagram's payload.
    """

    src: str
    dst: str
    proto: int
    start: int
    end: int
    length: int
    fragment: Fragment | None


def ipv4_text(raw: bytes) -> str:
    """Four address bytes as dotted decimal (what ``socket.inet_ntoa`` gives, without loading ``socket``)."""
    return f"{raw[0]}.{raw[1]}.{raw[2]}.{raw[3]}"


def parse_ipv4(data: bytes, pos: int, wire_len: int) -> IpPacket | None:
    """The IPv4 packet at ``pos``; ``wire_len`` is its length on the wire, which stands in
    for a total length of 0 (segmentation offload and BIG TCP write 0 there)."""
    if len(data) - pos < 20:
        raise MalformedPacket.truncated(f"IPv4 header cut at {len(data) - pos} bytes")
    first = data[pos]
    ihl = (first & 0x0F) * 4
    if first >> 4 != 4 or ihl < 20:
        raise MalformedPacket.bad(f"IPv4 header starts with {first:#04x}")
    if data[pos + 9] != IPPROTO_TCP:
        return None
    total, ident, frag = _V4_FIELDS.unpack_from(data, pos + 2)
    if total == 0:
        total = wire_len
    if total < ihl:
        raise MalformedPacket.bad(f"IPv4 total length {total} is below its header length {ihl}")
    start = pos + ihl
    if start > len(data):
        raise MalformedPacket.truncated("IPv4 options cut by the snap length")
    src = ipv4_text(data[pos + 12 : pos + 16])
    dst = ipv4_text(data[pos + 16 : pos + 20])
    fragment = None
    if frag & (_V4_MORE_FRAGMENTS | _V4_OFFSET_MASK):
        fragment = Fragment((4, src, dst, ident), (frag & _V4_OFFSET_MASK) * 8, bool(frag & _V4_MORE_FRAGMENTS))
    return IpPacket(src, dst, IPPROTO_TCP, start, min(len(data), pos + total), total - ihl, fragment)


def parse_ipv6(data: bytes, pos: int, wire_len: int) -> IpPacket | None:
    """The IPv6 packet at ``pos``, its extension headers walked up to TCP or a fragment
    header. A payload length of 0 (jumbogram, BIG TCP) means ``wire_len`` tells."""
    if len(data) - pos < IPV6_HEADER_LEN:
        raise MalformedPacket.truncated(f"IPv6 header cut at {len(data) - pos} bytes")
    if data[pos] >> 4 != 6:
        raise MalformedPacket.bad(f"IPv6 header starts with {data[pos]:#04x}")
    payload_len = data[pos + 4] << 8 | data[pos + 5]
    if payload_len == 0:
        payload_len = max(0, wire_len - IPV6_HEADER_LEN)
    src = socket.inet_ntop(socket.AF_INET6, data[pos + 8 : pos + 24])
    dst = socket.inet_ntop(socket.AF_INET6, data[pos + 24 : pos + 40])
    limit = pos + IPV6_HEADER_LEN + payload_len
    proto, start, frag = walk_ipv6_extensions(data, data[pos + 6], pos + IPV6_HEADER_LEN, limit)
    if proto != IPPROTO_TCP and (frag is None or proto not in _IPV6_EXTENSIONS):
        return None
    fragment = None if frag is None else Fragment((6, src, dst, frag[2]), frag[0], frag[1])
    return IpPacket(src, dst, proto, start, min(len(data), limit), limit - start, fragment)


def walk_ipv6_extensions(
    data: bytes, next_header: int, pos: int, limit: int
) -> tuple[int, int, tuple[int, bool, int] | None]:
    """Skip extension headers from ``pos`` (``limit``: end of the claimed payload).

    Returns the upper-layer protocol, where it starts, and (offset, more, id) when a
    fragment header was met; the walk stops there since what follows is fragmented.
    """
    while next_header in _IPV6_EXTENSIONS:
        if len(data) - pos < 8:
            raise MalformedPacket.truncated(f"IPv6 extension header {next_header} cut by the snap length")
        if next_header == IPPROTO_FRAGMENT:
            offset_flags, ident = _V6_FRAGMENT.unpack_from(data, pos + 2)
            if pos + 8 > limit:
                raise MalformedPacket.bad("IPv6 fragment header overruns the payload length")
            return data[pos], pos + 8, (offset_flags & 0xFFF8, bool(offset_flags & 1), ident)
        size = (data[pos + 1] + 2) * 4 if next_header == IPPROTO_AH else (data[pos + 1] + 1) * 8
        next_header = data[pos]
        pos += size
        if pos > limit:
            raise MalformedPacket.bad("IPv6 extension headers overrun the payload length")
    return next_header, pos, None
