"""IP and TCP headers: options, extension headers, snap length, offload lengths, bad headers."""

from __future__ import annotations

import dataclasses
import struct

import pytest

from kdissect.sources import AnomalyKind, decode_capture
from kdissect.sources.segment import ACK, PSH, TcpSegment
from kdissect.testing.packets import (
    Encapsulation,
    chain_ipv6_extensions,
    ipv4_packet,
    ipv6_packet,
    link_header,
    segment_frames,
    tcp_bytes,
)
from kdissect.testing.pcapwrite import Frame, pcap_bytes, write_capture

T0 = 1_600_000_000_000_000_000
PAYLOAD = bytes(range(256)) * 6
SEG4 = TcpSegment(T0, "192.0.2.1", 45678, "198.51.100.7", 9092, 4_000_000_000, 123, ACK | PSH, 502, PAYLOAD, 1536)
SEG6 = dataclasses.replace(SEG4, src_ip="2001:db8::a", dst_ip="2001:db8::b")
MSS_OPTION = b"\x02\x04\x05\xb4"
TS_OPTION = b"\x01\x01\x08\x0a" + struct.pack("!II", 1, 2)


def decode_frames(*frames: bytes, snaplen: int = 262_144, link_type: int = 1) -> tuple[list, object]:
    data = pcap_bytes([Frame(T0, f) for f in frames], link_type=link_type, snaplen=snaplen, nanosecond=True)
    return decode_capture(data)


@pytest.mark.parametrize(
    "tcp_options", [b"", MSS_OPTION, TS_OPTION, TS_OPTION * 3 + b"\x01" * 4], ids=["none", "mss", "ts", "max"]
)
@pytest.mark.parametrize("ip_options", [b"", b"\x94\x04\x00\x00", b"\x01" * 40], ids=["none", "ra", "max"])
def test_ipv4_and_tcp_options_are_skipped(ip_options: bytes, tcp_options: bytes) -> None:
    encap = Encapsulation(ipv4_options=ip_options, tcp_options=tcp_options)
    events, _ = decode_capture(write_capture([SEG4], encap=encap, nanosecond=True))
    assert events == [SEG4]


@pytest.mark.parametrize("exts", [(0,), (43,), (60,), (51,), (0, 43, 60), (0, 60, 43, 51, 60)])
def test_ipv6_extension_headers_are_walked(exts: tuple[int, ...]) -> None:
    encap = Encapsulation(ipv6_extensions=exts, tcp_options=TS_OPTION)
    events, _ = decode_capture(write_capture([SEG6], encap=encap, nanosecond=True))
    assert events == [SEG6]


@pytest.mark.parametrize("seg", [SEG4, SEG6], ids=["ipv4", "ipv6"])
@pytest.mark.parametrize("keep", [1500, 600, 1])
def test_snap_length_cuts_the_payload_not_the_claimed_length(seg: TcpSegment, keep: int) -> None:
    frame = segment_frames(seg, Encapsulation(tcp_options=TS_OPTION))[0]
    headers = len(frame) - len(PAYLOAD)
    events, _ = decode_frames(frame, snaplen=headers + keep)
    assert events == [dataclasses.replace(seg, payload=PAYLOAD[:keep])]


@pytest.mark.parametrize("seg", [SEG4, SEG6], ids=["ipv4", "ipv6"])
def test_snap_length_inside_tcp_options_still_gives_the_segment(seg: TcpSegment) -> None:
    frame = segment_frames(seg, Encapsulation(tcp_options=TS_OPTION))[0]
    tcp_start = len(frame) - len(PAYLOAD) - 32
    events, _ = decode_frames(frame, snaplen=tcp_start + 24)
    assert events == [dataclasses.replace(seg, payload=b"")]


@pytest.mark.parametrize("seg", [SEG4, SEG6], ids=["ipv4", "ipv6"])
@pytest.mark.parametrize("into_tcp", [0, 19])
def test_snap_length_inside_the_fixed_tcp_header_is_an_anomaly(seg: TcpSegment, into_tcp: int) -> None:
    frame = segment_frames(seg)[0]
    events, stats = decode_frames(frame, snaplen=len(frame) - len(PAYLOAD) - 20 + into_tcp)
    assert [e.kind for e in events] == [AnomalyKind.TRUNCATED_PACKET]
    assert stats.tcp_segments == 0


@pytest.mark.parametrize("seg", [SEG4, SEG6], ids=["ipv4", "ipv6"])
def test_snap_length_inside_the_ip_header_is_an_anomaly(seg: TcpSegment) -> None:
    events, _ = decode_frames(segment_frames(seg)[0], snaplen=14 + 19)
    assert [e.kind for e in events] == [AnomalyKind.TRUNCATED_PACKET]


def test_snap_length_inside_ipv4_options() -> None:
    frame = segment_frames(SEG4, Encapsulation(ipv4_options=b"\x01" * 20))[0]
    events, _ = decode_frames(frame, snaplen=14 + 30)
    assert [e.kind for e in events] == [AnomalyKind.TRUNCATED_PACKET]


def test_ethernet_padding_is_not_payload() -> None:
    tiny = dataclasses.replace(SEG4, payload=b"hi", payload_len=2)
    frame = segment_frames(tiny)[0]
    assert len(frame) < 60
    events, _ = decode_frames(frame + b"\0" * (60 - len(frame)))
    assert events == [tiny]


def test_zero_ipv4_total_length_means_the_wire_length() -> None:
    tcp = tcp_bytes(SEG4)
    frame = link_header(Encapsulation(), 4) + ipv4_packet(SEG4.src_ip, SEG4.dst_ip, tcp, total_len=0)
    events, _ = decode_frames(frame, snaplen=200)
    assert events == [dataclasses.replace(SEG4, payload=PAYLOAD[: 200 - 54])]


def test_zero_ipv6_payload_length_means_the_wire_length() -> None:
    first, payload = chain_ipv6_extensions((0,), 6, tcp_bytes(SEG6))
    frame = link_header(Encapsulation(), 6) + ipv6_packet(SEG6.src_ip, SEG6.dst_ip, first, payload, payload_len=0)
    events, _ = decode_frames(frame)
    assert events == [SEG6]


def test_ip_length_beyond_the_frame_is_the_claimed_length() -> None:
    tcp = tcp_bytes(SEG4)
    packet = ipv4_packet(SEG4.src_ip, SEG4.dst_ip, tcp, total_len=20 + len(tcp) + 100)
    events, _ = decode_frames(packet, link_type=101)
    assert events == [dataclasses.replace(SEG4, payload_len=len(PAYLOAD) + 100)]


def _patched(packet: bytes, at: int, value: bytes) -> bytes:
    return packet[:at] + value + packet[at + len(value) :]


V4_PACKET = ipv4_packet(SEG4.src_ip, SEG4.dst_ip, tcp_bytes(SEG4))
V4_EMPTY = ipv4_packet(SEG4.src_ip, SEG4.dst_ip, tcp_bytes(dataclasses.replace(SEG4, payload=b"")))
V6_FIRST, V6_PAYLOAD = chain_ipv6_extensions((60,), 6, tcp_bytes(SEG6))
V6_PACKET = ipv6_packet(SEG6.src_ip, SEG6.dst_ip, V6_FIRST, V6_PAYLOAD)
BAD_PACKETS = {
    "ipv4-header-length-16": _patched(V4_PACKET, 0, b"\x44"),
    "ipv4-total-below-header": _patched(V4_PACKET, 2, struct.pack("!H", 19)),
    "ipv4-too-short-for-tcp": _patched(V4_PACKET, 2, struct.pack("!H", 35))[:35],
    "tcp-data-offset-16": _patched(V4_PACKET, 32, b"\x40"),
    "tcp-data-offset-beyond-segment": _patched(V4_EMPTY, 32, b"\xf0"),
    "ipv6-extension-beyond-payload": _patched(V6_PACKET, 41, b"\xff"),
    "ipv6-payload-shorter-than-extension": _patched(V6_PACKET, 4, struct.pack("!H", 4)),
}


@pytest.mark.parametrize("name", sorted(BAD_PACKETS))
def test_contradicting_headers_are_anomalies(name: str) -> None:
    events, stats = decode_frames(BAD_PACKETS[name], link_type=101)
    assert [e.kind for e in events] == [AnomalyKind.BAD_HEADER]
    assert stats.tcp_segments == 0


@pytest.mark.parametrize("next_header", [17, 50, 59, 58])
def test_ipv6_without_tcp_is_non_tcp(next_header: int) -> None:
    first, payload = chain_ipv6_extensions((0, 60), next_header, bytes(16))
    events, stats = decode_frames(ipv6_packet("::1", "::2", first, payload), link_type=101)
    assert events == []
    assert stats.non_tcp == 1


def test_ipv6_extension_header_cut_by_the_snap_length() -> None:
    first, payload = chain_ipv6_extensions((0, 60), 6, tcp_bytes(SEG6))
    events, _ = decode_frames(ipv6_packet(SEG6.src_ip, SEG6.dst_ip, first, payload), link_type=101, snaplen=44)
    assert [e.kind for e in events] == [AnomalyKind.TRUNCATED_PACKET]


def test_tcp_flags_window_and_addresses() -> None:
    seg = dataclasses.replace(SEG6, flags=0xFF, window=0, seq=0xFFFFFFFF, ack=0xFFFFFFFF, src_ip="::ffff:1.2.3.4")
    events, _ = decode_capture(write_capture([seg], nanosecond=True))
    assert events == [seg]
