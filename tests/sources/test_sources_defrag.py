"""IP fragment reassembly: order, overlaps, losses, timeouts, memory bounds."""

from __future__ import annotations

import dataclasses
import random

import pytest

from kdissect.sources import AnomalyKind, DefragLimits, decode_capture
from kdissect.sources.defrag import Defragmenter
from kdissect.sources.segment import ACK, PSH, TcpSegment
from kdissect.testing.packets import (
    Encapsulation,
    chain_ipv6_extensions,
    ipv4_packet,
    ipv6_fragment_header,
    ipv6_packet,
    segment_ip_packets,
    tcp_bytes,
)
from kdissect.testing.pcapwrite import Frame, pcap_bytes
from tests.sources.source_helpers import kinds

T0 = 1_700_000_000_000_000_000
PAYLOAD = bytes(i * 7 % 256 for i in range(3000))
SEG4 = TcpSegment(T0, "10.1.1.1", 50000, "10.2.2.2", 9092, 77, 88, ACK | PSH, 1000, PAYLOAD, len(PAYLOAD))
SEG6 = dataclasses.replace(SEG4, src_ip="fd00::1", dst_ip="fd00::2")
TCP4 = tcp_bytes(SEG4)
RAW = 101


def decode(packets: list[bytes], limits: DefragLimits | None = None, step_ns: int = 1000) -> tuple[list, object]:
    frames = [Frame(T0 + i * step_ns, p) for i, p in enumerate(packets)]
    return decode_capture(pcap_bytes(frames, link_type=RAW, nanosecond=True), defrag=limits)


def at(ts_ns: int, seg: TcpSegment = SEG4) -> TcpSegment:
    return dataclasses.replace(seg, ts_ns=ts_ns)


def fragment4(start: int, data: bytes, more: bool, ident: int = 9, src: str = SEG4.src_ip) -> bytes:
    return ipv4_packet(src, SEG4.dst_ip, data, ident=ident, frag_offset=start, more=more)


@pytest.mark.parametrize("seg", [SEG4, SEG6], ids=["ipv4", "ipv6"])
@pytest.mark.parametrize("order", ["forward", "reverse", "shuffled"])
@pytest.mark.parametrize("size", [8, 512, 1480])
def test_fragments_in_any_order_give_the_original_segment(seg: TcpSegment, order: str, size: int) -> None:
    count = -(-(len(PAYLOAD) + 20) // size)
    indices = list(range(count))
    if order == "reverse":
        indices.reverse()
    elif order == "shuffled":
        random.Random(size).shuffle(indices)
    packets = segment_ip_packets(seg, Encapsulation(fragment_size=size, fragment_order=tuple(indices)))
    events, stats = decode(packets)
    assert events == [at(T0 + (count - 1) * 1000, seg)]  # the segment is complete at its last fragment
    assert (stats.ip_fragments, stats.tcp_segments, stats.anomalies) == (count, 1, 0)


@pytest.mark.parametrize("exts", [(), (0,), (0, 43), (60,), (0, 43, 60, 51)])
def test_ipv6_fragments_with_unfragmentable_and_fragmentable_extension_headers(exts: tuple[int, ...]) -> None:
    encap = Encapsulation(ipv6_extensions=exts, fragment_size=1024, fragment_order=(2, 0, 1))
    packets = segment_ip_packets(SEG6, encap)
    events, _ = decode(packets)
    assert events == [at(T0 + 2000, SEG6)]


def test_interleaved_datagrams_are_kept_apart() -> None:
    other = dataclasses.replace(SEG4, src_ip="10.9.9.9", payload=PAYLOAD[::-1])
    a = segment_ip_packets(SEG4, Encapsulation(fragment_size=1024), ident=5)
    b = segment_ip_packets(other, Encapsulation(fragment_size=1024), ident=5)  # same id, other source
    events, _ = decode([a[0], b[0], a[1], b[1], b[2], a[2]])
    assert events == [at(T0 + 4000, other), at(T0 + 5000)]


def test_identical_overlap_is_reported_and_harmless() -> None:
    packets = [
        fragment4(0, TCP4[:1600], True),
        fragment4(800, TCP4[800:2400], True),
        fragment4(2400, TCP4[2400:], False),
    ]
    events, _ = decode(packets)
    assert kinds(events) == [AnomalyKind.FRAGMENT_OVERLAP, "TcpSegment"]
    assert "identical" in events[0].message
    assert events[1] == at(T0 + 2000)


def test_conflicting_overlap_keeps_the_first_copy() -> None:
    forged = b"X" * 800
    packets = [
        fragment4(800, TCP4[800:1600], True),
        fragment4(0, TCP4[:800] + forged, True),  # claims 0-1600, its second half conflicts
        fragment4(1600, TCP4[1600:], False),
    ]
    events, _ = decode(packets)
    assert kinds(events) == [AnomalyKind.FRAGMENT_OVERLAP, "TcpSegment"]
    assert "conflicting" in events[0].message
    assert events[1] == at(T0 + 2000)


def test_later_fragment_fills_bytes_an_earlier_one_did_not_capture() -> None:
    # The first copy of 0-1600 was cut by the snap length after 1000 bytes; a duplicate
    # of the range that was fully captured supplies the rest.
    frames = [
        pcap_bytes([Frame(T0, fragment4(0, TCP4[:1600], True))], link_type=RAW, snaplen=1020, nanosecond=True),
        pcap_bytes([Frame(T0 + 1, fragment4(0, TCP4[:1600], True))], link_type=RAW, nanosecond=True)[24:],
        pcap_bytes([Frame(T0 + 2, fragment4(1600, TCP4[1600:], False))], link_type=RAW, nanosecond=True)[24:],
    ]
    events, _ = decode_capture(b"".join(frames))
    assert kinds(events) == [AnomalyKind.FRAGMENT_OVERLAP, "TcpSegment"]
    assert events[1] == at(T0 + 2)


def test_lost_middle_fragment_yields_the_captured_prefix_at_the_end() -> None:
    packets = segment_ip_packets(SEG4, Encapsulation(fragment_size=1024))
    events, stats = decode([packets[0], packets[2]])
    assert kinds(events) == [AnomalyKind.FRAGMENT_INCOMPLETE, "TcpSegment"]
    assert "capture ended" in events[0].message
    assert events[1] == dataclasses.replace(at(T0 + 1000), payload=PAYLOAD[: 1024 - 20])
    assert stats.tcp_segments == 1


def test_lost_first_fragment_yields_nothing_but_the_report() -> None:
    packets = segment_ip_packets(SEG4, Encapsulation(fragment_size=1024))
    events, _ = decode(packets[1:])
    assert kinds(events) == [AnomalyKind.FRAGMENT_INCOMPLETE]


def test_lost_last_fragment_claims_what_was_seen() -> None:
    packets = segment_ip_packets(SEG4, Encapsulation(fragment_size=1024))
    events, _ = decode(packets[:2])
    assert kinds(events) == [AnomalyKind.FRAGMENT_INCOMPLETE, "TcpSegment"]
    assert events[1].payload == PAYLOAD[: 2048 - 20] and events[1].payload_len == 2048 - 20


def test_snap_length_cut_fragment_leaves_a_hole() -> None:
    packets = segment_ip_packets(SEG4, Encapsulation(fragment_size=1024))
    frames = [Frame(T0 + i, p) for i, p in enumerate(packets)]
    events, _ = decode_capture(pcap_bytes(frames, link_type=RAW, snaplen=20 + 500, nanosecond=True))
    assert events == [dataclasses.replace(at(T0 + 2), payload=PAYLOAD[:480])]


def test_timeout_by_capture_time() -> None:
    first = segment_ip_packets(SEG4, Encapsulation(fragment_size=1024))[0]
    whole = segment_ip_packets(dataclasses.replace(SEG4, seq=999))[0]
    limits = DefragLimits(timeout_ns=5_000_000_000)
    events, _ = decode([first, whole, whole], limits, step_ns=3_000_000_000)
    assert kinds(events) == ["TcpSegment", AnomalyKind.FRAGMENT_INCOMPLETE, "TcpSegment", "TcpSegment"]
    assert "timed out" in events[1].message
    assert events[2].seq == SEG4.seq and events[2].payload == PAYLOAD[:1004]  # the given-up partial segment
    assert events[3].seq == 999


def test_timeout_by_packet_count() -> None:
    first = segment_ip_packets(SEG4, Encapsulation(fragment_size=1024))[0]
    whole = segment_ip_packets(dataclasses.replace(SEG4, seq=999))[0]
    events, _ = decode([first] + [whole] * 4, DefragLimits(max_age_packets=2))
    # Given up when the fourth record arrives, before that record's own segment.
    assert kinds(events) == ["TcpSegment", "TcpSegment", AnomalyKind.FRAGMENT_INCOMPLETE] + ["TcpSegment"] * 3
    assert [e.seq for e in events if isinstance(e, TcpSegment)] == [999, 999, SEG4.seq, 999, 999]


def test_memory_bounds_give_up_the_oldest_datagram() -> None:
    encap = Encapsulation(fragment_size=2048)
    datagrams = [segment_ip_packets(dataclasses.replace(SEG4, seq=i), encap, ident=i) for i in range(3)]
    packets = [d[0] for d in datagrams] + datagrams[2][1:]
    # Three first fragments exceed either bound; one first fragment plus a whole datagram do not.
    for limits in (DefragLimits(max_datagrams=2), DefragLimits(max_bytes=6000)):
        events, _ = decode(packets, limits)
        incomplete = AnomalyKind.FRAGMENT_INCOMPLETE
        assert kinds(events) == [incomplete, "TcpSegment", "TcpSegment", incomplete, "TcpSegment"]
        assert "memory bound" in events[0].message and "capture ended" in events[3].message
        assert [e.seq for e in events if isinstance(e, TcpSegment)] == [0, 2, 1]
        assert events[2].payload == PAYLOAD


@pytest.mark.parametrize(
    "packets",
    [
        [fragment4(65528, TCP4[:16], True)],  # ends beyond 65535
        [fragment4(0, TCP4[:1001], True)],  # non-final fragment not a multiple of 8
        [fragment4(1000, TCP4[1000:2000], False), fragment4(2000, TCP4[2000:2800], True)],  # past the known end
        [fragment4(1000, TCP4[1000:2000], True), fragment4(400, TCP4[400:800], False)],  # last, but data beyond
        [fragment4(1000, TCP4[1000:2000], False), fragment4(8, TCP4[8:1016], False)],  # two different lasts
    ],
    ids=["beyond-64k", "odd-length", "past-end", "last-before-data", "two-lasts"],
)
def test_fragments_that_cannot_belong_are_reported(packets: list[bytes]) -> None:
    events, _ = decode(packets)
    assert AnomalyKind.FRAGMENT_INVALID in kinds(events)


def test_non_tcp_fragments_are_not_held() -> None:
    udp = ipv4_packet("1.1.1.1", "2.2.2.2", bytes(64), proto=17, ident=3, more=True)
    nxt = ipv6_fragment_header(17, 0, True, 4) + bytes(64)
    udp6 = ipv6_packet("::1", "::2", 44, nxt)
    events, stats = decode([udp, udp6])
    assert events == []
    assert (stats.non_tcp, stats.ip_fragments) == (2, 0)


def test_ipv6_fragmented_udp_behind_destination_options_is_non_tcp() -> None:
    inner_first, fragmentable = chain_ipv6_extensions((60,), 17, bytes(40))
    packet = ipv6_packet("::1", "::2", 44, ipv6_fragment_header(inner_first, 0, False, 8) + fragmentable)
    events, stats = decode([packet])
    assert events == []
    assert (stats.non_tcp, stats.ip_fragments) == (1, 1)


def test_defragmenter_releases_its_memory() -> None:
    defrag = Defragmenter(DefragLimits(max_bytes=10_000))
    out: list = []
    key = (4, "a", "b", 1)
    for i in range(1000):
        defrag.add((4, "a", "b", i), 6, 0, True, 1000, b"x" * 1000, i, i, i, out)
    assert len(defrag) <= 10 and defrag._held <= 10_000
    done = defrag.add(key, 6, 8, False, 8, b"y" * 8, 0, 0, 0, out)
    assert done == [] or all(not d.complete for d in done)
    remaining = defrag.flush(out)
    assert len(defrag) == 0 and defrag._held == 0
    assert all(not d.complete for d in remaining)
