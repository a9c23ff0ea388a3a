"""The live engine's batches (``PacketDecoder.decode_all``, ``sources/_batch.c``) against the reference.

A live engine gets a poll's ``CaptureRecord`` objects (and the anomalies of a followed stream) at
a time. Each list is decoded with the native walk and with it switched off, in polls of several
sizes, and the events (segments and passed-on anomalies, in order) and counters must be equal: on
the corpus, on fragments and extension headers interleaved with plain packets (the defragmenter's
clock needs every record), on records no reader makes, on the hostile generators and on damaged
captures.
"""

from __future__ import annotations

import dataclasses
import gzip
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.sources import native_records
from kdissect.sources.packets import PacketDecoder
from kdissect.sources.reader import CaptureParser
from kdissect.sources.segment import TcpSegment
from kdissect.sources.shapes import CaptureRecord
from kdissect.testing.hostile import BUILDERS
from kdissect.testing.packets import Encapsulation
from kdissect.testing.pcapwrite import Frame, pcap_bytes, segment_frame_list
from tests.sources.native_helpers import Spy, extension
from tests.sources.test_native_sources import CORPUS, V4, V6, segments

pytestmark = pytest.mark.skipif(native_records._native is None, reason="the sources extension is not built")


def records_of(data: bytes) -> list:
    """What a followed capture hands the live engine: records and anomalies, in order."""
    if data.startswith(b"\x1f\x8b"):
        data = gzip.decompress(data)
    parser = CaptureParser()
    return parser.feed(data) + parser.close()


def decode_in_polls(events: list, poll: int) -> tuple[list, object]:
    decoder = PacketDecoder()
    out: list = []
    for at in range(0, len(events), poll):
        decoder.decode_all(events[at : at + poll], out)
    decoder.flush(out)
    return out, decoder.stats


def both(events: list, poll: int = 4096) -> tuple[tuple, tuple, int]:
    spy = Spy(native_records._native)
    with extension(spy):
        native = decode_in_polls(events, poll)
    with extension(None):
        reference = decode_in_polls(events, poll)
    return native, reference, spy.taken


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_every_corpus_capture_decodes_the_same(path: Path) -> None:
    events = records_of(path.read_bytes())
    native, reference, taken = both(events)
    assert native == reference
    assert both(events, poll=7)[:2] == (native, reference)
    assert taken == native[1].tcp_segments > 0


@pytest.mark.parametrize(("base", "declined"), [
    (V4, Encapsulation(fragment_size=128, fragment_order=(3, 0, 2, 1))),
    (V6, Encapsulation(ipv6_extensions=(0, 60))),
    (V6, Encapsulation(fragment_size=128)),
], ids=["ipv4-fragments", "ipv6-extensions", "ipv6-fragments"])
def test_fragments_interleaved_with_plain_packets(base: TcpSegment, declined: Encapsulation) -> None:
    plain = segment_frame_list(segments(base, 6))
    odd = segment_frame_list(segments(dataclasses.replace(base, src_port=50124), 6), declined)
    frames = [Frame(1 + i, f.data) for i, f in enumerate(f for pair in zip(plain, odd, strict=False) for f in pair)]
    events = records_of(pcap_bytes(frames + odd[len(plain):], link_type=1))
    for poll in (1, 3, 4096):
        native, reference, taken = both(events, poll)
        assert native == reference
        assert native[1].tcp_segments == 12 and 0 < taken < len(events)


def test_records_no_reader_makes_go_to_python() -> None:
    (frame,) = segment_frame_list([V4])
    good = CaptureRecord(1, V4.ts_ns, frame.data, len(frame.data), 0)
    odd = [
        dataclasses.replace(good, orig_len=len(frame.data) - 1),  # wire length below captured length
        dataclasses.replace(good, ts_ns=2**70),  # a timestamp past 64 bits
        dataclasses.replace(good, data=bytearray(frame.data)),  # not bytes
        dataclasses.replace(good, link_type=70_000),
        dataclasses.replace(good, orig_len=2**64),
    ]
    events = [good, *(e for o in odd for e in (o, good))]
    native, reference, taken = both(events)
    assert native == reference and taken == len(odd) + 1


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_hostile_generators_decode_the_same(name: str) -> None:
    events = records_of(BUILDERS[name](50))
    native, reference, _taken = both(events)
    assert native == reference
    assert both(events, poll=5)[:2] == (native, reference)


_SAMPLE = pcap_bytes(segment_frame_list(segments(V4, 4) + segments(V6, 4)), link_type=1)
_HEADER = 24


@settings(max_examples=200, deadline=None)
@given(
    damage=st.lists(st.tuples(st.integers(_HEADER, len(_SAMPLE) - 1), st.integers(0, 255)), max_size=6),
    poll=st.integers(1, 12),
)
def test_damaged_captures_decode_the_same(damage: list[tuple[int, int]], poll: int) -> None:
    data = bytearray(_SAMPLE)
    for at, value in damage:
        data[at] = value
    native, reference, _taken = both(records_of(bytes(data)), poll)
    assert native == reference


def test_a_poll_the_walk_made_whole_passes_on_unchanged() -> None:
    """A followed capture's poll of segments and anomalies only (its records already walked): passed on as
    they are, in order, nothing counted again; one record among them is decoded in its place."""
    events = [e for e in records_of(CORPUS[0].read_bytes()) if type(e) is not CaptureRecord][:3]
    walked = [*segments(V4, 4), *events]
    decoder, out = PacketDecoder(), []
    decoder.decode_all(walked, out)
    assert out == walked and decoder.stats.packets == 0
    records = records_of(pcap_bytes(segment_frame_list(segments(V6, 1)), link_type=1))
    decoded, _ = decode_in_polls(records, len(records))
    out = []
    decoder.decode_all([walked[0], *records, walked[1]], out)
    assert out == [walked[0], *decoded, walked[1]] and decoder.stats.packets == len(records) > 0
