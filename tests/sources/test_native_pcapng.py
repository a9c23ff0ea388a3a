"""The native pcapng walk (``sources/_pcapng.c``) against the Python reader (``pcapng.py``).

Each file is decoded with the native path and with it switched off, whole and in chunks, and the
events and counters must be equal: several interfaces of different link types and timestamp units
(µs, ns, binary fractions, an offset), both byte orders, simple packet blocks, a second section
header in the middle, the blocks the walk leaves to Python between its packets, units too fine for
64 bits, the hostile generators rewritten as pcapng and hypothesis-damaged files.
"""

from __future__ import annotations

import dataclasses
import gzip
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.sources import native_records
from kdissect.sources.link import LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_RAW
from kdissect.sources.pcapng import DSB_TYPE, EPB_TYPE
from kdissect.sources.reader import CaptureParser
from kdissect.sources.segment import ACK, PSH, TcpSegment
from kdissect.sources.shapes import CaptureRecord
from kdissect.testing.hostile import BUILDERS
from kdissect.testing.packets import Encapsulation
from kdissect.testing.pcapwrite import (
    Frame,
    Interface,
    idb_block,
    packet_block,
    pcapng_block,
    pcapng_section,
    segment_frame_list,
    shb_block,
)
from tests.sources.native_helpers import assert_damaged_decodes_the_same, both

pytestmark = pytest.mark.skipif(native_records._native is None, reason="the sources extension is not built")

T0 = 1_700_000_000_123_456_789
BASE = TcpSegment(T0, "10.1.2.3", 50123, "10.9.8.7", 9092, 1000, 2000, ACK | PSH, 512, b"kafka" * 40, 200)
V6 = dataclasses.replace(BASE, src_ip="fd00::1:2", dst_ip="2001:db8::7")
INTERFACES = [
    Interface(LINKTYPE_ETHERNET, tsresol=6),
    Interface(LINKTYPE_LINUX_SLL, tsresol=9),
    Interface(LINKTYPE_RAW, tsresol=0x80 | 20, tsoffset=-3600),
]
ENCAPS = [Encapsulation(), Encapsulation(link_type=LINKTYPE_LINUX_SLL), Encapsulation(link_type=LINKTYPE_RAW)]


def frames(n: int, interfaces: int = len(INTERFACES)) -> list[Frame]:
    """``n`` frames spread over the first ``interfaces`` interfaces, each in its link type."""
    out = []
    for i in range(n):
        iface = i % interfaces
        seg = dataclasses.replace(BASE if i % 2 else V6, ts_ns=T0 + i * 1_000_333, seq=1000 + 200 * i)
        (frame,) = segment_frame_list([seg], ENCAPS[iface])
        out.append(Frame(frame.ts_ns, frame.data, iface))
    return out


def check(data: bytes, taken_at_least: int = 1) -> None:
    native, reference, taken = both(data)
    assert native == reference
    for chunk in (1, 97, 4093):
        assert both(data, chunk)[:2] == (native, reference), chunk
    assert taken >= taken_at_least


@pytest.mark.parametrize("byteorder", ["little", "big"])
def test_several_interfaces_link_types_and_resolutions(byteorder) -> None:
    data = pcapng_section(frames(30), INTERFACES, byteorder=byteorder)
    native, _reference, taken = both(data)
    assert taken == 30 == native[1].tcp_segments
    check(data, 30)


@pytest.mark.parametrize("interface", [Interface(LINKTYPE_ETHERNET, tsresol=9), Interface(LINKTYPE_ETHERNET, 90)],
                         ids=["ns", "snaplen-90"])
def test_simple_packet_blocks_take_the_last_timestamp_and_the_snap_length(interface: Interface) -> None:
    epbs = pcapng_section(frames(4, 1), [interface])
    spbs = b"".join(packet_block(f, interface, "spb") for f in frames(6, 1))
    check(epbs + spbs + epbs[len(shb_block()) + len(idb_block(interface)):], 14)


def test_a_section_header_in_the_middle_forgets_the_interfaces() -> None:
    first = pcapng_section(frames(9), INTERFACES)
    swapped = [INTERFACES[2], INTERFACES[0], INTERFACES[1]]
    second = pcapng_section([dataclasses.replace(f, interface=(f.interface + 1) % 3) for f in frames(9)],
                            swapped, byteorder="big")
    check(first + second + first, 27)


def test_blocks_left_to_python_between_packets() -> None:
    iface = INTERFACES[0]
    packets = [packet_block(f, iface) for f in frames(6, 1)]
    others = [
        pcapng_block(DSB_TYPE, b"KLSK" + (8).to_bytes(4, "little") + b"secrets!"),  # decryption secrets
        pcapng_block(5, bytes(12)),  # interface statistics
        pcapng_block(0x7777, b"unknown"),
        packet_block(frames(1, 1)[0], iface, "pb"),  # obsolete packet block
        idb_block(INTERFACES[1]),  # a second interface, declared late
    ]
    body = b"".join(p for pair in zip(packets, others, strict=False) for p in pair) + packets[-1]
    check(shb_block() + idb_block(iface) + body, 6)


@pytest.mark.parametrize("interface", [
    Interface(LINKTYPE_ETHERNET, tsresol=20),  # 10**20 units a second: more than 64 bits
    Interface(LINKTYPE_ETHERNET, tsresol=0x80 | 64),
    Interface(LINKTYPE_ETHERNET, tsresol=6, tsoffset=2**62),  # nanoseconds past 64 bits
], ids=["decimal-20", "binary-64", "offset"])
def test_timestamps_beyond_64_bits_go_to_python(interface: Interface) -> None:
    blocks = []
    for units, frame in zip([0, 12_345, 2**64 - 1], frames(3, 1), strict=True):
        head = struct.pack("<IIIII", 0, units >> 32, units & 0xFFFFFFFF, len(frame.data), len(frame.data))
        blocks.append(pcapng_block(EPB_TYPE, head + frame.data))
    native, reference, taken = both(shb_block() + idb_block(interface) + b"".join(blocks))
    assert native == reference and taken == 0 and native[1].tcp_segments == 3


def test_damaged_blocks() -> None:
    iface = INTERFACES[0]
    good = [packet_block(f, iface) for f in frames(4, 1)]
    epb = bytearray(good[0])
    epb[20:24] = (10_000).to_bytes(4, "little")  # captured length overruns its block
    wire = bytearray(good[1])
    wire[24:28] = (10).to_bytes(4, "little")  # wire length below captured length
    undeclared = bytearray(good[2])
    undeclared[8:12] = (7).to_bytes(4, "little")
    trailer = bytearray(good[3])
    trailer[-4:] = (12).to_bytes(4, "little")
    short = pcapng_block(6, bytes(8))
    damaged = [bytes(epb), bytes(wire), bytes(undeclared), short, bytes(trailer)]
    body = b"".join(p for pair in zip(good, damaged, strict=False) for p in pair) + b"".join(good)
    check(shb_block() + idb_block(iface) + body, 8)


def _as_pcapng(pcap: bytes) -> bytes:
    """A capture's records rewritten as one pcapng section (one interface per link type, ns)."""
    if pcap.startswith(b"\x1f\x8b"):
        pcap = gzip.decompress(pcap)
    records = [e for e in CaptureParser().feed(pcap) if type(e) is CaptureRecord]
    links = sorted({r.link_type for r in records})
    interfaces = [Interface(link, tsresol=9) for link in links]
    return pcapng_section([Frame(r.ts_ns, r.data, links.index(r.link_type)) for r in records], interfaces)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_hostile_generators_as_pcapng(name: str) -> None:
    native, reference, _taken = both(_as_pcapng(BUILDERS[name](40)))
    assert native == reference


_SAMPLE = pcapng_section(frames(8), INTERFACES) + b"".join(packet_block(f, INTERFACES[0], "spb")
                                                          for f in frames(3, 1))
_HEADER = len(shb_block())  # a damaged first section header: no capture (both raise the same)


@settings(max_examples=300, deadline=None)
@given(
    damage=st.lists(st.tuples(st.integers(_HEADER, len(_SAMPLE) - 1), st.integers(0, 255)), max_size=6),
    cut=st.integers(_HEADER, len(_SAMPLE)),
    chunk=st.integers(1, 700),
)
def test_damaged_pcapng_in_any_chunking_decodes_the_same(damage: list[tuple[int, int]], cut: int,
                                                         chunk: int) -> None:
    assert_damaged_decodes_the_same(_SAMPLE, damage, cut, chunk)
