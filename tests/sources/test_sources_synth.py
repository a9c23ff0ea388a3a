"""The synthetic-capture library: conversations, frame builders, writers."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.sources import CaptureParser, decode_capture
from kdissect.sources.segment import ACK, FIN, PSH, SYN
from kdissect.testing.conversation import CLIENT_TO_SERVER, MSS_LOOPBACK, SERVER_TO_CLIENT, tcp_conversation
from kdissect.testing.packets import Encapsulation, internet_checksum, link_header, segment_frames
from kdissect.testing.pcapwrite import Frame, Interface, packet_block, pcap_bytes, write_capture

T0 = 1_000_000_000_000_000_000


def test_conversation_shape() -> None:
    segs = tcp_conversation(
        [(CLIENT_TO_SERVER, b"a" * 3000, T0), (SERVER_TO_CLIENT, b"b" * 10, T0 + 500)], isn=(100, 900), step_ns=7
    )
    assert [(s.flags, len(s.payload)) for s in segs] == [
        (SYN, 0),
        (SYN | ACK, 0),
        (ACK, 0),
        (ACK, 1448),
        (ACK, 1448),
        (ACK | PSH, 104),
        (ACK | PSH, 10),
        (FIN | ACK, 0),
        (FIN | ACK, 0),
        (ACK, 0),
    ]
    assert [(s.seq, s.ack) for s in segs] == [
        (100, 0),
        (900, 101),
        (101, 901),
        (101, 901),
        (1549, 901),
        (2997, 901),
        (901, 3101),
        (3101, 911),
        (911, 3102),
        (3102, 912),
    ]
    assert [s.ts_ns for s in segs] == [T0 - 21, T0 - 14, T0 - 7, T0, T0, T0, T0 + 500, T0 + 507, T0 + 514, T0 + 521]
    assert {(s.src_port, s.dst_port) for s in segs} == {(40000, 9092), (9092, 40000)}
    assert all(s.payload_len == len(s.payload) for s in segs)


def test_loopback_mss_and_options() -> None:
    segs = tcp_conversation([(0, b"x" * 200_000, T0)], mss=MSS_LOOPBACK, handshake=False, close=False)
    assert [len(s.payload) for s in segs] == [65483, 65483, 65483, 200_000 - 3 * 65483]


def test_sequence_numbers_wrap() -> None:
    segs = tcp_conversation([(0, b"w" * 100, T0)], isn=(2**32 - 10, 5), close=False)
    assert [s.seq for s in segs if s.src_port == 40000] == [2**32 - 10, 2**32 - 9, 2**32 - 9]
    assert segs[1].ack == 2**32 - 9


def test_empty_message_still_sends_a_segment() -> None:
    segs = tcp_conversation([(1, b"", T0)], handshake=False, close=False)
    assert [(s.flags, s.payload) for s in segs] == [(ACK | PSH, b"")]


@settings(max_examples=30, deadline=None)
@given(
    messages=st.lists(st.tuples(st.integers(0, 1), st.binary(max_size=4000), st.integers(0, 10**12)), max_size=6),
    mss=st.integers(1, 3000),
)
def test_conversation_bytes_survive_the_writer_and_reader(messages: list, mss: int) -> None:
    segs = tcp_conversation(messages, mss=mss)
    for direction in (0, 1):
        sent = b"".join(p for d, p, _ in messages if d == direction)
        port = 40000 if direction == 0 else 9092
        assert b"".join(s.payload for s in segs if s.src_port == port) == sent
    assert decode_capture(write_capture(segs, nanosecond=True))[0] == segs


def test_internet_checksum_known_value() -> None:
    # RFC 1071's example words sum to 0xddf2; the checksum is its complement.
    assert internet_checksum(bytes.fromhex("0001f203f4f5f6f7")) == 0x220D
    assert internet_checksum(b"\x01") == 0xFEFF


def test_snaplen_applies_in_both_formats() -> None:
    seg = tcp_conversation([(0, b"s" * 500, T0)], handshake=False, close=False)[0]
    for fmt in ("pcap", "pcapng"):
        parser = CaptureParser()
        recs = parser.feed(write_capture([seg], fmt=fmt, snaplen=100)) + parser.close()
        assert [(len(r.data), r.orig_len) for r in recs] == [(100, 554)]


def test_pcapng_timestamp_units() -> None:
    iface = Interface(1, tsresol=0x80 | 10, tsoffset=5)
    block = packet_block(Frame(6 * 10**9 + 500_000_000, b"\0" * 4), iface)
    high, low = struct.unpack_from("<II", block, 12)
    assert high << 32 | low == 1536  # (6.5 s - the 5 s offset) in units of 2**-10 s


def test_pcap_bytes_header() -> None:
    data = pcap_bytes([], link_type=276, snaplen=1234, byteorder="big")
    assert struct.unpack(">IHHiIII", data) == (0xA1B2C3D4, 2, 4, 0, 0, 1234, 276)


@pytest.mark.parametrize(
    ("encap", "error"),
    [
        (Encapsulation(fragment_size=100), "multiple of 8"),
        (Encapsulation(link_type=105), "link type 105"),
        (Encapsulation(tcp_options=b"\x01" * 41), "do not fit"),
        (Encapsulation(ipv6_extensions=(17,)), "extension header 17"),
    ],
)
def test_impossible_encapsulations_are_refused(encap: Encapsulation, error: str) -> None:
    seg = tcp_conversation([(0, b"e", T0)], client=("fd00::1", 1), server=("fd00::2", 2), handshake=False)[0]
    with pytest.raises(ValueError, match=error):
        segment_frames(seg, encap)


def test_sll2_header_layout() -> None:
    header = link_header(Encapsulation(link_type=276, vlans=(3,)), 6)
    assert header[:2] == b"\x81\x00" and len(header) == 20 + 4 and header[-2:] == b"\x86\xdd"
