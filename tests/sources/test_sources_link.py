"""Link layers: every supported link type, VLAN stacks, non-IP and unsupported links."""

from __future__ import annotations

import struct

import pytest

from kdissect.sources import AnomalyKind, SourceAnomaly, decode_capture
from kdissect.sources import link as lt
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.packets import Encapsulation, ipv4_packet, link_header, segment_ip_packets
from kdissect.testing.pcapwrite import Frame, pcap_bytes, write_capture

T0 = 1_650_000_000_000_000_000
MESSAGES = [(0, b"\x00\x00\x00\x10fetch-request...", T0), (1, b"\x00\x00\x00\x04resp" * 500, T0 + 40_000)]
V4 = tcp_conversation(MESSAGES)
V6 = tcp_conversation(MESSAGES, client=("2001:db8::1", 51000), server=("2001:db8::9", 9093))

ENCAPSULATIONS = {
    "ethernet": Encapsulation(),
    "vlan": Encapsulation(vlans=(100,)),
    "qinq": Encapsulation(vlans=(10, 20)),
    "qinq3": Encapsulation(vlans=(1, 2, 3)),
    "sll": Encapsulation(link_type=lt.LINKTYPE_LINUX_SLL),
    "sll-vlan": Encapsulation(link_type=lt.LINKTYPE_LINUX_SLL, vlans=(7,)),
    "sll2": Encapsulation(link_type=lt.LINKTYPE_LINUX_SLL2),
    "raw101": Encapsulation(link_type=lt.LINKTYPE_RAW),
    "raw12": Encapsulation(link_type=lt.LINKTYPE_RAW_12),
    "raw14": Encapsulation(link_type=lt.LINKTYPE_RAW_14),
    "null-le": Encapsulation(link_type=lt.LINKTYPE_NULL),
    "null-be": Encapsulation(link_type=lt.LINKTYPE_NULL, loopback_order="big"),
    "loop-be": Encapsulation(link_type=lt.LINKTYPE_LOOP),
    "loop-le": Encapsulation(link_type=lt.LINKTYPE_LOOP, loopback_order="little"),
}


@pytest.mark.parametrize("segments", [V4, V6], ids=["ipv4", "ipv6"])
@pytest.mark.parametrize("name", sorted(ENCAPSULATIONS))
def test_every_link_type_decodes_both_ip_versions(name: str, segments: list) -> None:
    events, stats = decode_capture(write_capture(segments, encap=ENCAPSULATIONS[name], nanosecond=True))
    assert events == segments
    assert stats.non_tcp == 0


@pytest.mark.parametrize(("link_type", "segments"), [(lt.LINKTYPE_IPV4, V4), (lt.LINKTYPE_IPV6, V6)])
def test_fixed_version_raw_links(link_type: int, segments: list) -> None:
    events, _ = decode_capture(write_capture(segments, encap=Encapsulation(link_type=link_type), nanosecond=True))
    assert events == segments


def test_vlan_header_bytes_are_what_802_1ad_says() -> None:
    header = link_header(Encapsulation(vlans=(10, 20)), 4)
    assert header[12:] == bytes.fromhex("88a8 000a 8100 0014 0800")


@pytest.mark.parametrize(
    ("family", "order"), [(2, "little"), (2, "big"), (24, "little"), (28, "big"), (30, "little"), (10, "big")]
)
def test_loopback_families_in_either_byte_order(family: int, order: str) -> None:
    segments = V4 if family == 2 else V6
    packets = [segment_ip_packets(seg)[0] for seg in segments]
    frames = [Frame(seg.ts_ns, family.to_bytes(4, order) + p) for seg, p in zip(segments, packets, strict=True)]
    for link_type in (lt.LINKTYPE_NULL, lt.LINKTYPE_LOOP):
        events, _ = decode_capture(pcap_bytes(frames, link_type=link_type, nanosecond=True))
        assert events == segments


def _single(frame: bytes, link_type: int) -> tuple[list, object]:
    return decode_capture(pcap_bytes([Frame(T0, frame)], link_type=link_type, nanosecond=True))


@pytest.mark.parametrize(
    ("frame", "link_type"),
    [
        (bytes(12) + b"\x08\x06" + bytes(28), lt.LINKTYPE_ETHERNET),  # ARP
        (bytes(12) + b"\x00\x2e" + bytes(46), lt.LINKTYPE_ETHERNET),  # 802.3 length field
        (bytes(12) + b"\x81\x00\x00\x05\x88\xcc" + bytes(30), lt.LINKTYPE_ETHERNET),  # LLDP in a VLAN
        (bytes(14) + b"\x00\x04" + bytes(20), lt.LINKTYPE_LINUX_SLL),  # 802.2 LLC
        ((7).to_bytes(4, "little") + bytes(20), lt.LINKTYPE_NULL),  # unknown address family
        (ipv4_packet("1.1.1.1", "2.2.2.2", bytes(8), proto=17), lt.LINKTYPE_RAW),  # UDP
        (ipv4_packet("1.1.1.1", "2.2.2.2", bytes(8), proto=1, more=True), lt.LINKTYPE_RAW),  # ICMP fragment
    ],
)
def test_non_tcp_packets_are_counted_and_skipped(frame: bytes, link_type: int) -> None:
    events, stats = _single(frame, link_type)
    assert events == []
    assert (stats.packets, stats.non_tcp, stats.tcp_segments, stats.anomalies) == (1, 1, 0, 0)


@pytest.mark.parametrize(
    ("frame", "link_type", "kind"),
    [
        (bytes(13), lt.LINKTYPE_ETHERNET, AnomalyKind.TRUNCATED_PACKET),
        (bytes(12) + b"\x81\x00\x00", lt.LINKTYPE_ETHERNET, AnomalyKind.TRUNCATED_PACKET),
        (bytes(15), lt.LINKTYPE_LINUX_SLL, AnomalyKind.TRUNCATED_PACKET),
        (bytes(19), lt.LINKTYPE_LINUX_SLL2, AnomalyKind.TRUNCATED_PACKET),
        (bytes(3), lt.LINKTYPE_NULL, AnomalyKind.TRUNCATED_PACKET),
        (b"", lt.LINKTYPE_RAW, AnomalyKind.TRUNCATED_PACKET),
        (b"\x50" + bytes(30), lt.LINKTYPE_RAW, AnomalyKind.BAD_HEADER),
        (b"\x60" + bytes(30), lt.LINKTYPE_IPV4, AnomalyKind.BAD_HEADER),
        (b"\x45" + bytes(50), lt.LINKTYPE_IPV6, AnomalyKind.BAD_HEADER),
    ],
)
def test_broken_link_headers_are_anomalies(frame: bytes, link_type: int, kind: str) -> None:
    events, stats = _single(frame, link_type)
    assert [e.kind for e in events] == [kind]
    assert events[0].offset == 24 and events[0].ts_ns == T0
    assert stats.anomalies == 1


def test_unsupported_link_type_is_reported_once_and_counted() -> None:
    frames = [Frame(T0 + i, bytes(40)) for i in range(5)]
    events, stats = decode_capture(pcap_bytes(frames, link_type=105, nanosecond=True))  # 802.11
    assert len(events) == 1 and isinstance(events[0], SourceAnomaly)
    assert events[0].kind == AnomalyKind.UNSUPPORTED_LINK and "105" in events[0].message
    assert (stats.packets, stats.non_tcp) == (5, 5)


def test_sll_protocol_field_is_read_at_its_offset() -> None:
    seg = V4[0]
    packet = segment_ip_packets(seg)[0]
    sll = struct.pack("!HHH8sH", 4, 772, 0, bytes(8), 0x0800)  # outgoing, loopback ARPHRD, no address
    events, _ = _single(sll + packet, lt.LINKTYPE_LINUX_SLL)
    assert [e.seq for e in events] == [seg.seq]
