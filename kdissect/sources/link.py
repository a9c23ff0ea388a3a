"""Link-layer headers: where the IP packet starts in a captured frame, and which IP.

Pure functions keyed by LINKTYPE_* value (the numbers pcap and pcapng files store).
"""

from __future__ import annotations

from collections.abc import Callable

from kdissect.sources.packet_error import MalformedPacket

LINKTYPE_NULL = 0  # BSD loopback: 4-byte address family in the capturing host's byte order
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW_12 = 12  # DLT_RAW on most BSDs, stored as-is by old writers
LINKTYPE_RAW_14 = 14  # DLT_RAW on OpenBSD
LINKTYPE_RAW = 101
LINKTYPE_LOOP = 108  # OpenBSD loopback: address family in network byte order
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276

ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
ETHERTYPE_VLAN = 0x8100
ETHERTYPE_QINQ = 0x88A8
_VLAN_TAGS = frozenset({ETHERTYPE_VLAN, ETHERTYPE_QINQ, 0x9100, 0x9200})  # 0x9100/0x9200: pre-802.1ad QinQ
_IP_BY_ETHERTYPE = {ETHERTYPE_IPV4: 4, ETHERTYPE_IPV6: 6}
AF_INET = 2
_AF_INET6 = frozenset({10, 24, 28, 30})  # Linux, Net/OpenBSD, FreeBSD, Darwin
_SLL_LEN = 16
_SLL2_LEN = 20

# (ip version or 0 for "not IP", offset of the IP header)
IpLocation = tuple[int, int]


def _truncated(what: str, have: int) -> MalformedPacket:
    return MalformedPacket.truncated(f"{what} cut at {have} bytes")


def _after_ethertype(data: bytes, ethertype: int, pos: int) -> IpLocation:
    """Skip any 802.1Q / 802.1ad tags starting at ``pos``, where ``ethertype`` was read."""
    while ethertype in _VLAN_TAGS:
        if len(data) < pos + 4:
            raise _truncated("VLAN tag", len(data))
        ethertype = data[pos + 2] << 8 | data[pos + 3]
        pos += 4
    return _IP_BY_ETHERTYPE.get(ethertype, 0), pos


def _ethernet(data: bytes) -> IpLocation:
    if len(data) < 14:
        raise _truncated("Ethernet header", len(data))
    return _after_ethertype(data, data[12] << 8 | data[13], 14)


def _linux_sll(data: bytes) -> IpLocation:
    if len(data) < _SLL_LEN:
        raise _truncated("Linux cooked header", len(data))
    return _after_ethertype(data, data[14] << 8 | data[15], _SLL_LEN)


def _linux_sll2(data: bytes) -> IpLocation:
    if len(data) < _SLL2_LEN:
        raise _truncated("Linux cooked v2 header", len(data))
    return _after_ethertype(data, data[0] << 8 | data[1], _SLL2_LEN)


def _loopback(data: bytes) -> IpLocation:
    """NULL and LOOP headers: the writer's byte order is unknown, but address families
    are small, so a value with its high half set is the other byte order."""
    if len(data) < 4:
        raise _truncated("loopback header", len(data))
    family = int.from_bytes(data[:4], "big")
    if family & 0xFFFF0000:
        family = int.from_bytes(data[:4], "little")
    if family == AF_INET:
        return 4, 4
    return (6 if family in _AF_INET6 else 0), 4


def _raw(data: bytes) -> IpLocation:
    if not data:
        raise _truncated("raw IP packet", 0)
    version = data[0] >> 4
    if version not in (4, 6):
        raise MalformedPacket.bad(f"raw IP packet with IP version {version}")
    return version, 0


def _raw_ipv4(data: bytes) -> IpLocation:
    return 4, 0


def _raw_ipv6(data: bytes) -> IpLocation:
    return 6, 0


LINK_DECODERS: dict[int, Callable[[bytes], IpLocation]] = {
    LINKTYPE_NULL: _loopback,
    LINKTYPE_ETHERNET: _ethernet,
    LINKTYPE_RAW_12: _raw,
    LINKTYPE_RAW_14: _raw,
    LINKTYPE_RAW: _raw,
    LINKTYPE_LOOP: _loopback,
    LINKTYPE_LINUX_SLL: _linux_sll,
    LINKTYPE_IPV4: _raw_ipv4,
    LINKTYPE_IPV6: _raw_ipv6,
    LINKTYPE_LINUX_SLL2: _linux_sll2,
}
"""Link type -> function returning where the IP header starts; raises ``MalformedPacket``."""
