"""The TCP header: the last step from captured bytes to a ``TcpSegment``."""

from __future__ import annotations

from struct import Struct

from kdissect.sources.packet_error import MalformedPacket
from kdissect.sources.segment import TcpSegment

_TCP = Struct("!HHIIHH")  # ports, seq, ack, data offset + flags, window
TCP_MIN_HEADER = 20


def tcp_segment(ts_ns: int, src: str, dst: str, data: bytes, start: int, end: int, length: int) -> TcpSegment:
    """Decode the TCP segment whose captured bytes are ``data[start:end]`` and whose
    length per the IP header(s) is ``length``.

    Only the fixed 20 bytes are required: options cut by the snap length still give a
    segment, with an empty captured payload and the claimed ``payload_len``.
    """
    if length < TCP_MIN_HEADER:
        raise MalformedPacket.bad(f"IP payload of {length} bytes is too short for a TCP header")
    if end - start < TCP_MIN_HEADER:
        raise MalformedPacket.truncated(f"TCP header cut at {max(0, end - start)} bytes")
    src_port, dst_port, seq, ack, offset_flags, window = _TCP.unpack_from(data, start)
    header_len = (offset_flags >> 12) * 4
    if header_len < TCP_MIN_HEADER or header_len > length:
        raise MalformedPacket.bad(f"TCP data offset {header_len} in a {length}-byte segment")
    payload = data[start + header_len : end]
    return TcpSegment(
        ts_ns, src, src_port, dst, dst_port, seq, ack, offset_flags & 0xFF, window, payload, length - header_len
    )
