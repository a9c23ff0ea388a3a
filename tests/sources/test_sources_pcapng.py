"""pcapng reading: byte orders, interfaces and resolutions, block kinds, sections, corruption."""

from __future__ import annotations

import struct

import pytest

from kdissect.sources import (
    AnomalyKind,
    CaptureFormatError,
    CaptureRecord,
    ReaderLimits,
    decode_capture,
)
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.packets import Encapsulation
from kdissect.testing.pcapwrite import (
    EPB_TYPE,
    IDB_TYPE,
    Frame,
    Interface,
    idb_block,
    packet_block,
    pcapng_block,
    pcapng_option,
    pcapng_section,
    segment_frame_list,
    shb_block,
    write_capture,
)
from tests.sources.source_helpers import kinds, records

T0 = 1_700_000_000_000_000_000
SEGMENTS = tcp_conversation([(0, b"produce!" * 300, T0 + 1_000_000), (1, b"ok" * 10, T0 + 3_000_000)])


@pytest.mark.parametrize("byteorder", ["little", "big"])
@pytest.mark.parametrize("block", ["epb", "pb"])
def test_sections_of_either_byte_order_round_trip(byteorder: str, block: str) -> None:
    events, stats = decode_capture(write_capture(SEGMENTS, fmt="pcapng", byteorder=byteorder, block=block))
    assert events == SEGMENTS
    assert stats.anomalies == 0


@pytest.mark.parametrize("byteorder", ["little", "big"])
def test_simple_packet_blocks_take_the_previous_timestamp_and_the_snap_length(byteorder: str) -> None:
    iface = Interface(1, snaplen=30)
    frames = [Frame(T0 + 5000, b"e" * 50), Frame(T0 + 9000, b"s" * 50), Frame(T0 + 9999, b"t" * 10)]
    data = (
        shb_block(byteorder)
        + idb_block(iface, byteorder)
        + packet_block(frames[0], iface, "epb", byteorder)
        + packet_block(frames[1], iface, "spb", byteorder)
        + packet_block(frames[2], iface, "spb", byteorder)
    )
    recs = records(data)
    assert [(r.ts_ns, r.data, r.orig_len) for r in recs] == [
        (T0 + 5000, b"e" * 30, 50),
        (T0 + 5000, b"s" * 30, 50),
        (T0 + 5000, b"t" * 10, 10),
    ]


def test_interfaces_with_different_link_types_and_resolutions() -> None:
    interfaces = [
        Interface(1),  # Ethernet, microseconds (default)
        Interface(228, tsresol=9),  # raw IPv4, nanoseconds
        Interface(113, tsresol=0x80 | 20),  # Linux cooked, 2**-20 s
        Interface(0, tsresol=3, tsoffset=1_000),  # BSD loopback, milliseconds, 1000 s offset
    ]
    ts = [T0 + 123_456_789 + i * 1_000_000_000 for i in range(8)]
    frames = [Frame(t, bytes([i]) * 40, i % 4) for i, t in enumerate(ts)]
    recs = records(pcapng_section(frames, interfaces))
    assert [(r.link_type, r.interface, r.data) for r in recs] == [
        (interfaces[f.interface].link_type, f.interface, f.data) for f in frames
    ]
    expected = []
    for t, f in zip(ts, frames, strict=True):
        if f.interface == 0:
            expected.append(t // 1000 * 1000)
        elif f.interface == 1:
            expected.append(t)
        elif f.interface == 2:
            expected.append((t * 2**20 // 10**9) * 10**9 // 2**20)
        else:
            expected.append(t // 10**6 * 10**6)
    assert [r.ts_ns for r in recs] == expected


def test_segments_from_several_interfaces_decode_by_their_own_link_type() -> None:
    eth = segment_frame_list(SEGMENTS[:4])
    sll2 = segment_frame_list(SEGMENTS[4:], Encapsulation(link_type=276))
    frames = [Frame(f.ts_ns, f.data, 0) for f in eth] + [Frame(f.ts_ns, f.data, 1) for f in sll2]
    events, _ = decode_capture(pcapng_section(frames, [Interface(1, tsresol=9), Interface(276, tsresol=9)]))
    assert events == SEGMENTS


def test_a_new_section_replaces_byte_order_and_interfaces() -> None:
    first = segment_frame_list(SEGMENTS[:5])
    second = segment_frame_list(SEGMENTS[5:], Encapsulation(link_type=101))
    data = pcapng_section(first, [Interface(1, tsresol=9)]) + pcapng_section(
        second, [Interface(101, tsresol=9)], byteorder="big"
    )
    events, stats = decode_capture(data)
    assert events == SEGMENTS
    assert stats.anomalies == 0


def test_unknown_and_uninteresting_blocks_are_skipped() -> None:
    iface = Interface(1, tsresol=9)
    frames = segment_frame_list(SEGMENTS)
    blocks = [shb_block(), pcapng_block(4, b"\0" * 8), idb_block(iface), pcapng_block(0xBAD, b"vend" * 3)]
    for frame in frames:
        blocks += [packet_block(frame, iface), pcapng_block(0x1234_5678, b"?" * 13), pcapng_block(5, b"\0" * 12)]
    events, stats = decode_capture(b"".join(blocks))
    assert events == SEGMENTS
    assert stats.anomalies == 0


def _good_file() -> tuple[bytes, list[CaptureRecord]]:
    data = write_capture(SEGMENTS, fmt="pcapng", nanosecond=True)
    return data, [r for r in records(data) if isinstance(r, CaptureRecord)]


@pytest.mark.parametrize(
    "patch",
    [
        lambda off: (off + 4, struct.pack("<I", 0x8000_0000)),  # 2 GiB block
        lambda off: (off + 4, struct.pack("<I", 14)),  # not a multiple of 4
        lambda off: (off + 4, struct.pack("<I", 8)),  # shorter than any block
        lambda off: (off + 4, struct.pack("<I", 64)),  # plausible, but the trailer disagrees
    ],
)
def test_corrupt_block_is_skipped_and_the_next_ones_read(patch) -> None:
    data, good = _good_file()
    k = 4
    at, value = patch(good[k].offset)
    corrupt = bytearray(data)
    corrupt[at : at + len(value)] = value
    events, _ = decode_capture(bytes(corrupt))
    assert events[:k] == SEGMENTS[:k]
    assert kinds(events[k : k + 2]) == [AnomalyKind.CORRUPT_RECORD, AnomalyKind.RESYNC]
    assert events[k].offset == events[k + 1].offset == good[k].offset
    assert events[k + 1].message == f"skipped {good[k + 1].offset - good[k].offset} bytes"
    assert events[k + 2 :] == SEGMENTS[k + 1 :]


def test_garbage_between_blocks_is_skipped() -> None:
    data, good = _good_file()
    k = 3
    junk = b"\x06\x00\x00\x00" + b"\xff" * 37  # starts like an EPB
    spliced = data[: good[k].offset] + junk + data[good[k].offset :]
    events, _ = decode_capture(spliced)
    assert events[:k] == SEGMENTS[:k]
    assert kinds(events[k : k + 2]) == [AnomalyKind.CORRUPT_RECORD, AnomalyKind.RESYNC]
    assert events[k + 1].message == f"skipped {len(junk)} bytes"
    assert events[k + 2 :] == SEGMENTS[k:]


def test_resync_finds_a_following_section_header() -> None:
    data, good = _good_file()
    corrupt = bytearray(data)
    corrupt[good[2].offset + 4 : good[2].offset + 8] = b"\xff\xff\xff\x7f"
    second = write_capture(SEGMENTS, fmt="pcapng", byteorder="big", nanosecond=True)
    events, _ = decode_capture(bytes(corrupt[: good[3].offset]) + second)
    assert events[:2] == SEGMENTS[:2]
    assert kinds(events[2:4]) == [AnomalyKind.CORRUPT_RECORD, AnomalyKind.RESYNC]
    assert events[4:] == SEGMENTS


def test_first_section_header_without_byte_order_magic_is_not_a_capture() -> None:
    data = bytearray(write_capture(SEGMENTS, fmt="pcapng"))
    data[8:12] = b"\0\0\0\0"
    with pytest.raises(CaptureFormatError, match="byte-order magic"):
        records(bytes(data))


def test_later_section_header_without_byte_order_magic_is_corruption() -> None:
    one = write_capture(SEGMENTS[:2], fmt="pcapng", nanosecond=True)
    two = bytearray(write_capture(SEGMENTS[2:], fmt="pcapng", nanosecond=True))
    two[8:12] = b"\0\0\0\0"
    events, _ = decode_capture(one + bytes(two))
    # Resync lands on the second section's interface block; its packets name interface 0,
    # which the first section declared alike, so they are still read.
    assert events[:2] == SEGMENTS[:2]
    assert kinds(events[2:4]) == [AnomalyKind.CORRUPT_RECORD, AnomalyKind.RESYNC]
    assert events[4:] == SEGMENTS[2:]


@pytest.mark.parametrize("cut", [3, 8, 11, 12, 40])
def test_truncated_last_block(cut: int) -> None:
    data, good = _good_file()
    events, _ = decode_capture(data[: good[-1].offset + cut])
    assert events[:-1] == SEGMENTS[:-1]
    assert (events[-1].kind, events[-1].offset) == (AnomalyKind.TRUNCATED_FILE, good[-1].offset)


def test_packet_on_an_undeclared_interface_is_reported() -> None:
    iface = Interface(1)
    data = shb_block() + idb_block(iface) + packet_block(Frame(T0, b"x" * 20, interface=3), iface)
    recs = records(data)
    assert kinds(recs) == [AnomalyKind.BAD_RECORD]
    assert "interface 3" in recs[0].message


def test_captured_length_overrunning_its_block_keeps_what_is_there() -> None:
    body = struct.pack("<IIIII", 0, 0, 1000, 200, 200) + b"p" * 40
    recs = records(shb_block() + idb_block(Interface(1)) + pcapng_block(EPB_TYPE, body))
    assert kinds(recs) == [AnomalyKind.BAD_RECORD, "CaptureRecord"]
    assert recs[1].data == b"p" * 40 and recs[1].ts_ns == 1000 * 1000


def test_block_bodies_too_short_for_their_type() -> None:
    blocks = [shb_block(), pcapng_block(IDB_TYPE, b"\0" * 4), pcapng_block(3, b"")]
    blocks += [idb_block(Interface(1)), pcapng_block(EPB_TYPE, b"\0" * 8), pcapng_block(2, b"\0" * 4)]
    recs = records(b"".join(blocks))
    assert kinds(recs) == [AnomalyKind.BAD_RECORD] * 4


def test_simple_packet_before_any_interface() -> None:
    recs = records(shb_block() + packet_block(Frame(T0, b"q" * 8), Interface(1), "spb"))
    assert kinds(recs) == [AnomalyKind.BAD_RECORD]


def test_interface_option_overrunning_its_block_is_reported() -> None:
    body = struct.pack("<HHI", 1, 0, 0) + struct.pack("<HH", 9, 200) + b"\x09\0\0\0"
    recs = records(shb_block() + pcapng_block(IDB_TYPE, body) + packet_block(Frame(T0, b"x"), Interface(1)))
    assert kinds(recs) == [AnomalyKind.BAD_RECORD, "CaptureRecord"]
    assert recs[1].ts_ns == T0  # resolution stayed at the microsecond default


def test_tsresol_option_after_other_options() -> None:
    options = pcapng_option(2, b"eth0") + pcapng_option(9, b"\x09") + pcapng_option(0, b"")
    idb = pcapng_block(IDB_TYPE, struct.pack("<HHI", 1, 0, 0) + options)
    recs = records(shb_block() + idb + packet_block(Frame(T0 + 7, b"x"), Interface(1, tsresol=9)))
    assert recs[0].ts_ns == T0 + 7


def test_unknown_version_is_reported_and_read() -> None:
    data = shb_block(version=(2, 0)) + write_capture(SEGMENTS, fmt="pcapng", nanosecond=True)[28:]
    events, _ = decode_capture(data)
    assert kinds(events[:1]) == [AnomalyKind.BAD_RECORD]
    assert events[1:] == SEGMENTS


def test_block_limit_is_configurable() -> None:
    frames = [Frame(T0 + i, bytes([i]) * size) for i, size in enumerate([100, 3000, 100])]
    data = pcapng_section(frames, [Interface(1, tsresol=9)])
    recs = records(data, ReaderLimits(max_block_len=1024))
    assert kinds(recs) == ["CaptureRecord", AnomalyKind.CORRUPT_RECORD, AnomalyKind.RESYNC, "CaptureRecord"]
