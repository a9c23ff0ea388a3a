"""Properties of the whole source: chunking never matters, damage never raises."""

from __future__ import annotations

import gzip
import io

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdissect.sources import (
    AnomalyKind,
    CaptureDecoder,
    CaptureFormatError,
    ReaderLimits,
    SourceAnomaly,
    decode_capture,
    iter_capture,
)
from kdissect.sources.segment import TcpSegment
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.packets import Encapsulation
from kdissect.testing.pcapwrite import (
    Frame,
    Interface,
    pcapng_block,
    pcapng_section,
    segment_frame_list,
    write_capture,
)

T0 = 1_700_000_000_000_000_000
V4 = tcp_conversation([(i % 2, bytes([i]) * (300 * i + 5), T0 + i * 100_000) for i in range(8)])
V6 = tcp_conversation(
    [(i % 2, bytes([i]) * (900 * i + 5), T0 + i * 100_000 + 7) for i in range(6)],
    client=("fd00::5", 1111),
    server=("fd00::6", 9092),
)
PCAP = write_capture(V4, encap=Encapsulation(vlans=(3,), fragment_size=512), nanosecond=True)
_ETH = [Frame(f.ts_ns, f.data, 0) for f in segment_frame_list(V4, Encapsulation(vlans=(10, 20)))]
_RAW6 = [
    Frame(f.ts_ns, f.data, 1)
    for f in segment_frame_list(V6, Encapsulation(link_type=229, ipv6_extensions=(0, 60), fragment_size=1000))
]
PCAPNG = (
    pcapng_section(sorted(_ETH + _RAW6, key=lambda f: f.ts_ns), [Interface(1, tsresol=9), Interface(229, tsresol=9)])
    + pcapng_block(0x4242, b"unknown block")
    + write_capture(V4[:5], fmt="pcapng", byteorder="big", block="pb", nanosecond=True)
)
CAPTURES = st.sampled_from([PCAP, PCAPNG])
# Small limits so corrupt lengths trigger resync quickly and the examples stay fast.
LIMITS = ReaderLimits(max_caplen=4096, max_block_len=8192)


def chunked(data: bytes, cuts: list[int]) -> list:
    decoder = CaptureDecoder(LIMITS)
    events, last = [], 0
    for cut in sorted(c % (len(data) + 1) for c in cuts):
        events += decoder.feed(data[last:cut])
        last = cut
    events += decoder.feed(data[last:])
    return events + decoder.close()


def flipped(data: bytes, flips: list[tuple[int, int]], start: int) -> bytes:
    damaged = bytearray(data)
    for pos, value in flips:
        damaged[start + pos % (len(data) - start)] ^= value
    return bytes(damaged)


def check_events(events: list) -> None:
    for event in events:
        assert type(event) in (TcpSegment, SourceAnomaly)
        if isinstance(event, TcpSegment):
            assert event.payload_len >= len(event.payload) >= 0
            assert 0 <= event.src_port < 65536 and 0 <= event.dst_port < 65536


def test_reference_captures_decode_cleanly() -> None:
    for data, expected in ((PCAP, V4), (PCAPNG, sorted(V4 + V6, key=lambda s: s.ts_ns) + V4[:5])):
        events, stats = decode_capture(data, LIMITS)
        assert sorted(events, key=lambda s: s.ts_ns) == sorted(expected, key=lambda s: s.ts_ns)
        assert stats.anomalies == 0


@settings(max_examples=60, deadline=None)
@given(data=CAPTURES, cuts=st.lists(st.integers(0, 1 << 20), max_size=40))
def test_chunking_never_changes_the_events(data: bytes, cuts: list[int]) -> None:
    assert chunked(data, cuts) == decode_capture(data, LIMITS)[0]


@settings(max_examples=60, deadline=None)
@given(
    data=CAPTURES,
    flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), min_size=1, max_size=8),
    cuts=st.lists(st.integers(0, 1 << 20), max_size=12),
)
def test_chunking_never_changes_the_events_of_damaged_captures(data: bytes, flips: list, cuts: list[int]) -> None:
    damaged = flipped(data, flips, 12)
    assert chunked(damaged, cuts) == decode_capture(damaged, LIMITS)[0]


@settings(max_examples=150, deadline=None)
@given(data=CAPTURES, flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), min_size=1, max_size=20))
def test_byte_flips_after_the_file_header_never_raise(data: bytes, flips: list) -> None:
    events, stats = decode_capture(flipped(data, flips, 12), LIMITS)
    check_events(events)
    assert stats.anomalies == sum(isinstance(e, SourceAnomaly) for e in events)


@settings(max_examples=100, deadline=None)
@given(data=CAPTURES, flips=st.lists(st.tuples(st.integers(0, 40), st.integers(1, 255)), min_size=1, max_size=4))
def test_byte_flips_in_the_file_header_raise_only_the_format_error(data: bytes, flips: list) -> None:
    try:
        events, _ = decode_capture(flipped(data, flips, 0), LIMITS)
    except CaptureFormatError:
        return
    check_events(events)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=CAPTURES, tail=st.binary(min_size=1, max_size=3000))
def test_random_bytes_after_a_capture_never_raise(data: bytes, tail: bytes) -> None:
    events, _ = decode_capture(data + tail, LIMITS)
    check_events(events)


@settings(max_examples=80, deadline=None)
@given(cut=st.integers(0, len(PCAP)))
def test_truncation_anywhere_keeps_every_complete_record(cut: int) -> None:
    plain = write_capture(V4, nanosecond=True)
    cut = cut % (len(plain) + 1)
    if cut < 4:
        return
    events, _ = decode_capture(plain[:cut], LIMITS)
    segments = [e for e in events if isinstance(e, TcpSegment)]
    anomalies = [e for e in events if isinstance(e, SourceAnomaly)]
    assert segments == V4[: len(segments)]
    assert [a.kind for a in anomalies] in ([], [AnomalyKind.TRUNCATED_FILE])
    assert events[len(segments) :] == anomalies  # the anomaly, if any, comes last


@settings(max_examples=25, deadline=None)
@given(data=CAPTURES, step=st.integers(1, 5000))
def test_gzip_chunking_never_changes_the_events(data: bytes, step: int) -> None:
    compressed = gzip.compress(data)
    chunks = [compressed[i : i + step] for i in range(0, len(compressed), step)]

    class Chunks(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def read(self, size: int = -1) -> bytes:
            return chunks.pop(0) if chunks else b""

    assert list(iter_capture(Chunks(), chunk_size=step, limits=LIMITS)) == decode_capture(data, LIMITS)[0]
