"""The Ethernet/IPv4/TCP fast path gives exactly what the general path gives, or steps aside."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.sources import decode_capture
from kdissect.sources.fastpath import EthernetIpv4Tcp
from kdissect.sources.packet_error import MalformedPacket
from kdissect.sources.packets import PacketDecoder
from kdissect.sources.segment import ACK, FIN, PSH, SYN, TcpSegment
from kdissect.sources.shapes import CaptureRecord
from kdissect.testing.packets import Encapsulation, segment_frames
from kdissect.testing.pcapwrite import write_capture

T0 = 1_700_000_000_000_000_000
SEG = TcpSegment(T0, "10.1.2.3", 50123, "10.9.8.7", 9092, 123_456, 654_321, ACK | PSH, 512, b"kafka" * 300, 1500)


def general(frame: bytes) -> TcpSegment | str | None:
    """What the general link -> IP -> TCP walk makes of an Ethernet frame."""
    out: list = []
    try:
        PacketDecoder()._decode(CaptureRecord(1, T0, frame, len(frame), 0), out)
    except MalformedPacket as exc:
        return f"malformed: {exc.kind}"
    return out[0] if out else None


def test_plain_packets_take_the_fast_path_and_match() -> None:
    frame = segment_frames(SEG)[0]
    assert EthernetIpv4Tcp().segment(T0, frame) == SEG == general(frame)


def test_a_capture_decodes_the_same_through_either_path() -> None:
    segs = [dataclasses.replace(SEG, seq=SEG.seq + i * 1500, flags=f) for i, f in enumerate((SYN, ACK, PSH | ACK, FIN))]
    plain, _ = decode_capture(write_capture(segs, nanosecond=True))
    vlan, _ = decode_capture(write_capture(segs, encap=Encapsulation(vlans=(7,)), nanosecond=True))
    assert plain == vlan == segs


def test_what_it_does_not_handle_goes_to_the_general_path() -> None:
    fast = EthernetIpv4Tcp()
    for encap in (Encapsulation(vlans=(5,)), Encapsulation(ipv4_options=b"\x01" * 4), Encapsulation(fragment_size=512)):
        assert fast.segment(T0, segment_frames(SEG, encap)[0]) is None
    assert fast.segment(T0, segment_frames(dataclasses.replace(SEG, src_ip="fd00::1", dst_ip="fd00::2"))[0]) is None


@settings(max_examples=400, deadline=None)
@given(
    damage=st.lists(st.tuples(st.integers(0, 59), st.integers(0, 255)), max_size=4),
    cut=st.integers(0, 1600),
    options=st.sampled_from([b"", b"\x01\x01\x08\x0a" + bytes(8)]),
)
def test_damaged_frames_match_the_general_path(damage: list[tuple[int, int]], cut: int, options: bytes) -> None:
    frame = bytearray(segment_frames(SEG, Encapsulation(tcp_options=options))[0])
    for at, value in damage:
        frame[at] = value
    data = bytes(frame[: max(cut, 14)])
    fast = EthernetIpv4Tcp().segment(T0, data)
    if fast is not None:
        assert fast == general(data)
