"""The sources stage's native path (``sources/_native.c`` and its walks) against its Python reference.

Every capture is decoded twice, once with the native path and once with it switched off, and the
events (segments and anomalies, in order) and the counters must be equal: on the corpus of real
captures, on every encapsulation the Python path knows (including what the native path declines:
fragments, extension headers, cut frames), on the hostile generators and on damaged captures fed
in random chunks; pcapng files of several interfaces, link types, timestamp units and sections,
with the blocks the native walk leaves to Python between its packets; and the live engine's batches
of records (``PacketDecoder.decode_all``). Other tests check that the native path really takes the
common records.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.sources import native_records
from kdissect.sources.link import (
    LINKTYPE_ETHERNET,
    LINKTYPE_IPV4,
    LINKTYPE_IPV6,
    LINKTYPE_LINUX_SLL,
    LINKTYPE_LINUX_SLL2,
    LINKTYPE_LOOP,
    LINKTYPE_NULL,
    LINKTYPE_RAW,
)
from kdissect.sources.segment import ACK, FIN, PSH, SYN, TcpSegment
from kdissect.testing.hostile import BUILDERS
from kdissect.testing.packets import Encapsulation
from kdissect.testing.pcapwrite import Frame, pcap_bytes, segment_frame_list, write_capture
from tests.sources.native_helpers import assert_damaged_decodes_the_same, both

pytestmark = pytest.mark.skipif(native_records._native is None, reason="the sources extension is not built")

CORPUS = sorted(p for p in (Path(__file__).resolve().parents[2] / "captures").iterdir()
                if p.suffix in (".pcap", ".pcapng"))
T0 = 1_700_000_000_000_000_000
V4 = TcpSegment(T0, "10.1.2.3", 50123, "10.9.8.7", 9092, 1000, 2000, ACK | PSH, 512, b"kafka" * 100, 500)
V6 = dataclasses.replace(V4, src_ip="fd00::1:2", dst_ip="2001:db8::7")


def segments(base: TcpSegment, n: int) -> list[TcpSegment]:
    flags = [SYN, SYN | ACK, *[ACK | PSH] * (n - 3), FIN | ACK]
    return [dataclasses.replace(base, ts_ns=T0 + i * 1_001_000, seq=base.seq + i * 500, flags=f)
            for i, f in enumerate(flags)]


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_every_corpus_capture_decodes_the_same(path: Path) -> None:
    data = path.read_bytes()
    native, reference, taken = both(data)
    assert native == reference
    assert both(data, chunk=4093)[:2] == (native, reference)
    assert taken == native[1].tcp_segments > 0  # every packet of a real loopback capture is common


ENCAPSULATIONS = {
    "ethernet": Encapsulation(),
    "vlan": Encapsulation(vlans=(7,)),
    "qinq": Encapsulation(vlans=(7, 9)),
    "sll": Encapsulation(link_type=LINKTYPE_LINUX_SLL),
    "sll2": Encapsulation(link_type=LINKTYPE_LINUX_SLL2),
    "null": Encapsulation(link_type=LINKTYPE_NULL),
    "null-big": Encapsulation(link_type=LINKTYPE_NULL, loopback_order="big"),
    "loop": Encapsulation(link_type=LINKTYPE_LOOP),
    "raw": Encapsulation(link_type=LINKTYPE_RAW),
    "ipv4-options": Encapsulation(ipv4_options=b"\x01" * 4),
    "tcp-options": Encapsulation(tcp_options=b"\x01\x01\x08\x0a" + bytes(8)),
}
DECLINED = {
    "ipv4-fragments": Encapsulation(fragment_size=128, fragment_order=(3, 0, 2, 1)),
    "ipv6-extensions": Encapsulation(ipv6_extensions=(0, 60)),
    "ipv6-fragments": Encapsulation(fragment_size=128),
}


@pytest.mark.parametrize("name", ENCAPSULATIONS)
@pytest.mark.parametrize("base", [V4, V6], ids=["ipv4", "ipv6"])
def test_common_encapsulations_are_taken_natively(name: str, base: TcpSegment) -> None:
    segs = segments(base, 8)
    native, reference, taken = both(write_capture(segs, encap=ENCAPSULATIONS[name], nanosecond=True,
                                                  byteorder="big"))
    assert native == reference and native[0] == segs
    assert taken == len(segs)


@pytest.mark.parametrize("link_type", [LINKTYPE_IPV4, LINKTYPE_IPV6])
def test_raw_ip_link_types(link_type: int) -> None:
    segs = segments(V4 if link_type == LINKTYPE_IPV4 else V6, 5)
    native, reference, taken = both(write_capture(segs, encap=Encapsulation(link_type=link_type)))
    assert native == reference and native[0] == segs and taken == len(segs)


@pytest.mark.parametrize("name", DECLINED)
def test_fragments_and_extension_headers_go_to_the_reference(name: str) -> None:
    base = V6 if name.startswith("ipv6") else V4
    plain = segment_frame_list(segments(base, 6))
    odd = segment_frame_list(segments(dataclasses.replace(base, src_port=50124), 6), DECLINED[name])
    # plain and declined packets interleaved: the native path must stop, and resume when it may
    frames = [f for pair in zip(plain, odd, strict=False) for f in pair] + odd[len(plain):]
    frames = [Frame(T0 + i, f.data) for i, f in enumerate(frames)]
    native, reference, taken = both(pcap_bytes(frames, link_type=LINKTYPE_ETHERNET))
    assert native == reference
    assert native[1].tcp_segments == 12 and 0 < taken < len(frames)


def test_snap_length_cut_and_padded_frames() -> None:
    segs = segments(V4, 6)
    cut = write_capture(segs, snaplen=80)
    padded = pcap_bytes([Frame(f.ts_ns, f.data + bytes(18)) for f in segment_frame_list(segs)],
                        link_type=LINKTYPE_ETHERNET)
    for data in (cut, padded):
        native, reference, _taken = both(data)
        assert native == reference


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_hostile_generators_decode_the_same(name: str) -> None:
    native, reference, _taken = both(BUILDERS[name](50))
    assert native == reference


_SAMPLE = write_capture(segments(V4, 4) + segments(V6, 4))
_HEADER = 24  # the file header: damaged, the stream is no capture (both paths raise the same)


@settings(max_examples=300, deadline=None)
@given(
    damage=st.lists(st.tuples(st.integers(_HEADER, len(_SAMPLE) - 1), st.integers(0, 255)), max_size=6),
    cut=st.integers(_HEADER, len(_SAMPLE)),
    chunk=st.integers(1, 700),
)
def test_damaged_captures_in_any_chunking_decode_the_same(damage: list[tuple[int, int]], cut: int,
                                                         chunk: int) -> None:
    assert_damaged_decodes_the_same(_SAMPLE, damage, cut, chunk)


def _walk(segment_type: type, segs: list[TcpSegment]) -> list:
    """The native pcap walk over a capture of ``segs``, making each segment with ``segment_type``."""
    data = pcap_bytes(segment_frame_list(segs), link_type=LINKTYPE_ETHERNET, nanosecond=True)
    out: list = []
    native_records._native.pcap_segments(data, 24, False, 1, 16, 1 << 18, LINKTYPE_ETHERNET, segment_type, out, 0, None)
    return out


def test_segments_are_stored_into_their_slots_as_init_would() -> None:
    segs = segments(V4, 5)
    made = _walk(TcpSegment, segs)
    assert made == segs and all(type(s) is TcpSegment for s in made)
    assert [dataclasses.astuple(s) for s in made] == [dataclasses.astuple(s) for s in segs]
    made[0].payload = b"x"  # an ordinary instance: its slots writable as ever
    assert made[0].payload == b"x" and made[1:] == segs[1:]


def test_a_segment_class_that_does_more_than_store_is_called() -> None:
    calls: list[int] = []

    @dataclasses.dataclass(slots=True)
    class Checked(TcpSegment):
        def __post_init__(self) -> None:
            calls.append(self.seq)

    segs = segments(V4, 4)
    made = _walk(Checked, segs)
    assert calls == [s.seq for s in segs] and all(type(s) is Checked for s in made)
    assert _walk(TcpSegment, segs) == segs  # and the plain class is stored into again
