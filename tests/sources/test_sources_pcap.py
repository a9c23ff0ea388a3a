"""Classic pcap reading: variants, truncation, corruption and resync."""

from __future__ import annotations

import struct

import pytest

from kdissect.sources import (
    AnomalyKind,
    CaptureFormatError,
    CaptureParser,
    CaptureRecord,
    ReaderLimits,
    decode_capture,
)
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.pcapwrite import Frame, pcap_bytes, write_capture
from tests.sources.source_helpers import kinds, records

T0 = 1_700_000_000_123_456_000  # microsecond-aligned
SEGMENTS = tcp_conversation([(0, b"request!" * 400, T0), (1, b"response" * 30, T0 + 2_000_000)])


@pytest.mark.parametrize("byteorder", ["little", "big"])
@pytest.mark.parametrize("nanosecond", [False, True])
def test_every_pcap_variant_round_trips(byteorder: str, nanosecond: bool) -> None:
    data = write_capture(SEGMENTS, byteorder=byteorder, nanosecond=nanosecond)
    events, stats = decode_capture(data)
    assert events == SEGMENTS
    assert (stats.packets, stats.tcp_segments, stats.anomalies, stats.non_tcp) == (len(SEGMENTS),) * 2 + (0, 0)
    assert stats.bytes_read == len(data)


def test_magic_byte_order_is_what_the_file_says() -> None:
    assert write_capture(SEGMENTS, byteorder="big")[:4] == bytes.fromhex("a1b2c3d4")
    assert write_capture(SEGMENTS, byteorder="little", nanosecond=True)[:4] == bytes.fromhex("4d3cb2a1")


def test_timestamp_resolution_follows_the_magic() -> None:
    frame = Frame(T0 + 789, b"\0" * 20)
    micro = records(pcap_bytes([frame], link_type=1))
    nano = records(pcap_bytes([frame], link_type=1, nanosecond=True))
    assert micro[0].ts_ns == T0  # the file only had microseconds
    assert nano[0].ts_ns == T0 + 789


def test_record_fields_and_offsets() -> None:
    frames = [Frame(T0, b"a" * 10), Frame(T0 + 1000, b"b" * 300)]
    recs = records(pcap_bytes(frames, link_type=228, snaplen=100))
    assert recs == [
        CaptureRecord(228, T0, b"a" * 10, 10, 24),
        CaptureRecord(228, T0 + 1000, b"b" * 100, 300, 24 + 16 + 10),
    ]


def test_modified_pcap_has_longer_record_headers() -> None:
    header = struct.pack("<IHHiIII", 0xA1B2CD34, 2, 4, 0, 0, 65535, 1)
    body = b"x" * 14
    rec = struct.pack("<IIII", 100, 5, len(body), len(body)) + struct.pack("<IHBx", 3, 0x0800, 0) + body
    assert records(header + rec + rec) == [CaptureRecord(1, 100 * 10**9 + 5000, body, 14, off) for off in (24, 62)]


def test_fcs_bits_of_the_link_type_field_are_ignored() -> None:
    data = bytearray(write_capture(SEGMENTS))
    data[20:24] = struct.pack("<I", 1 | 0x04000000 | 2 << 28)  # "FCS present, 4 bytes"
    assert decode_capture(bytes(data))[0] == SEGMENTS


def test_unknown_version_is_reported_and_read() -> None:
    data = bytearray(write_capture(SEGMENTS))
    data[4:6] = struct.pack("<H", 3)
    events, _ = decode_capture(bytes(data))
    assert kinds(events[:1]) == [AnomalyKind.BAD_RECORD]
    assert events[1:] == SEGMENTS


def test_wire_length_below_captured_length_is_reported() -> None:
    data = bytearray(pcap_bytes([Frame(T0, b"z" * 40)], link_type=1))
    data[24 + 12 : 24 + 16] = struct.pack("<I", 20)
    recs = records(bytes(data))
    assert kinds(recs) == [AnomalyKind.BAD_RECORD, "CaptureRecord"]
    assert recs[1].orig_len == 40 and recs[1].data == b"z" * 40


@pytest.mark.parametrize("cut", [1, 10, 16, 17, 60])
def test_truncated_last_record_delivers_everything_before(cut: int) -> None:
    data = write_capture(SEGMENTS)
    last = records(data)[-1]
    events, stats = decode_capture(data[: last.offset + cut])
    assert events[:-1] == SEGMENTS[:-1]
    assert events[-1].kind == AnomalyKind.TRUNCATED_FILE and events[-1].offset == last.offset
    assert stats.anomalies == 1


def test_file_cut_inside_the_global_header() -> None:
    assert kinds(records(write_capture(SEGMENTS)[:10])) == [AnomalyKind.TRUNCATED_FILE]


def test_header_only_file_is_empty_not_an_error() -> None:
    assert records(write_capture([])) == []


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", "empty"),
        (b"\xd4\xc3", "only 2 bytes"),
        (b"GET / HTTP/1.1\r\n\r\n", "47 45 54 20"),
        (b"\x28\xb5\x2f\xfd" + b"\0" * 20, "zstd"),
    ],
)
def test_not_a_capture_is_a_one_line_error(data: bytes, words: str) -> None:
    with pytest.raises(CaptureFormatError) as info:
        records(data)
    assert words in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("bad_len", [0x7FFFFFFF, 0xFFFFFFFF, 262_145])
def test_absurd_record_length_resyncs_on_the_next_record(bad_len: int) -> None:
    data = bytearray(write_capture(SEGMENTS))
    good = records(bytes(data))
    k = 5
    data[good[k].offset + 8 : good[k].offset + 12] = struct.pack("<I", bad_len)
    events, _ = decode_capture(bytes(data))
    assert events[:k] == SEGMENTS[:k]
    corrupt, resync = events[k], events[k + 1]
    assert (corrupt.kind, corrupt.offset) == (AnomalyKind.CORRUPT_RECORD, good[k].offset)
    assert str(bad_len) in corrupt.message
    assert (resync.kind, resync.offset) == (AnomalyKind.RESYNC, good[k].offset)
    assert resync.message == f"skipped {good[k + 1].offset - good[k].offset} bytes"
    assert events[k + 2 :] == SEGMENTS[k + 1 :]


def test_resync_keeps_the_buffer_bounded() -> None:
    data = bytearray(write_capture(SEGMENTS))
    data[24 + 8 : 24 + 12] = struct.pack("<I", 0x7FFFFFFF)  # the very first record
    limits = ReaderLimits(max_caplen=4096)
    parser = CaptureParser(limits)
    seen = []
    for i in range(0, len(data), 7):
        seen += parser.feed(bytes(data[i : i + 7]))
        assert parser.buffered <= 2 * 16 + limits.max_caplen + 7
    seen += parser.close()
    assert kinds(seen)[:2] == [AnomalyKind.CORRUPT_RECORD, AnomalyKind.RESYNC]
    assert len([r for r in seen if isinstance(r, CaptureRecord)]) == len(SEGMENTS) - 1


def test_corruption_in_the_last_record_ends_in_a_failed_resync() -> None:
    data = bytearray(write_capture(SEGMENTS))
    last = records(bytes(data))[-1]
    data[last.offset + 8 : last.offset + 12] = b"\xff\xff\xff\xff"
    events, _ = decode_capture(bytes(data))
    assert events[:-2] == SEGMENTS[:-1]
    assert kinds(events[-2:]) == [AnomalyKind.CORRUPT_RECORD, AnomalyKind.RESYNC]
    assert "stream ended while resyncing" in events[-1].message


def test_configured_limit_marks_big_records_corrupt() -> None:
    frames = [Frame(T0 + i * 1000, bytes([i]) * size) for i, size in enumerate([100, 5000, 100, 100])]
    recs = records(pcap_bytes(frames, link_type=1), ReaderLimits(max_caplen=1000))
    assert kinds(recs) == ["CaptureRecord", AnomalyKind.CORRUPT_RECORD, AnomalyKind.RESYNC] + ["CaptureRecord"] * 2
    assert [r.data[0] for r in recs if isinstance(r, CaptureRecord)] == [0, 2, 3]
