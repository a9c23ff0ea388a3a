"""Hand-written fast path for the commonest packet: Ethernet, IPv4 without options or
fragmentation, TCP.

Why it exists: ``bench/bench_pipeline.py`` on a NIC-shaped capture (1,448-byte segments)
spends most of its source time in the general link -> IP -> TCP walk, which costs several
calls and two intermediate objects per packet. Here the three headers are read with one
``struct`` call and the address strings come from a small cache. Anything else (VLAN tags,
IP options, fragments, IPv6, a zero IP length, cut or odd headers) returns None and takes
the general path, which alone reports anomalies; for the packets it accepts, the result is
exactly what the general path gives (``tests/sources/test_sources_fastpath.py``).
"""

from __future__ import annotations

from struct import Struct

from kdissect.sources.ip import ipv4_text
from kdissect.sources.segment import TcpSegment

# From byte 12 of the frame: ethertype, IPv4 version+IHL, total length, flags+fragment
# offset, protocol, source+destination addresses, TCP ports, seq, ack, offset+flags, window.
_HEADERS = Struct("!HBxH2xHxB2x8sHHIIHH")
_MIN_LEN = 12 + _HEADERS.size + 4  # the TCP header's checksum and urgent pointer too
_TCP_AT = 34  # Ethernet 14 + IPv4 20
_MAX_ADDRESSES = 4096  # address-pair cache entries before it is cleared (hostile captures)


class EthernetIpv4Tcp:
    """Decodes the common case; keeps the address-pair cache between packets."""

    __slots__ = ("_addresses",)

    def __init__(self) -> None:
        self._addresses: dict[bytes, tuple[str, str]] = {}

    def segment(self, ts_ns: int, data: bytes) -> TcpSegment | None:
        """The segment in an Ethernet frame, or None when the general path must decide."""
        if len(data) < _MIN_LEN:
            return None
        ethertype, ver_ihl, total, frag, proto, pair, sport, dport, seq, ack, off_flags, window = (
            _HEADERS.unpack_from(data, 12))
        header_len = (off_flags >> 12) * 4
        if (ethertype != 0x0800 or ver_ihl != 0x45 or proto != 6 or frag & 0x3FFF or header_len < 20
                or total < 20 + header_len):
            return None
        addresses = self._addresses.get(pair)
        if addresses is None:
            if len(self._addresses) >= _MAX_ADDRESSES:
                self._addresses.clear()
            addresses = self._addresses[pair] = (ipv4_text(pair[:4]), ipv4_text(pair[4:]))
        payload = data[_TCP_AT + header_len : 14 + total]
        return TcpSegment(ts_ns, addresses[0], sport, addresses[1], dport, seq, ack, off_flags & 0xFF, window,
                          payload, total - 20 - header_len)
