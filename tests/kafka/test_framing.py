"""The frame splitter: size prefixes across chunks, gaps, desync and proven resync."""

from __future__ import annotations

import struct
import tracemalloc

from kdissect.kafka.framing import Frame, FrameSplitter, Lost, Skipped, Validator
from kdissect.testing.kafka_frames import metadata_request


class Magic(Validator):
    """Accepts frames whose payload starts with b"KF" (a stand-in for 'decodes exactly')."""

    def plausible(self, head: bytes, size: int) -> bool:
        return head[:2] == b"KF"[: len(head)]

    def accept(
        self, buf: bytearray, start: int, end: int, at_chunk_edges: bool, budget: int
    ) -> tuple[bool | None, int]:
        return buf.startswith(b"KF", start, end), budget


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def frames_of(events: list) -> list[bytes]:
    return [e.data for e in events if isinstance(e, Frame)]


def test_frames_split_over_many_chunks_and_many_in_one_chunk() -> None:
    stream = frame(b"KF" + b"a" * 5000) + frame(b"KF-1") + frame(b"KF-2")
    s = FrameSplitter(Magic())
    out = []
    for i in range(0, len(stream), 7):
        out += s.feed(i, stream[i : i + 7], ts_ns=i)
    assert frames_of(out) == [b"KF" + b"a" * 5000, b"KF-1", b"KF-2"]
    first = out[0]
    last_byte = 4 + 5002 - 1
    assert first.offset == 0 and first.ts_first == 0 and first.ts_last == last_byte - last_byte % 7


def test_timestamps_are_first_and_last_packet_of_the_frame() -> None:
    a, b = frame(b"KF" + b"x" * 10), frame(b"KFyy")
    s = FrameSplitter(Magic())
    out = s.feed(0, a[:5], 100) + s.feed(5, a[5:] + b, 200)
    f1, f2 = [e for e in out if isinstance(e, Frame)]
    assert (f1.ts_first, f1.ts_last) == (100, 200)
    assert (f2.ts_first, f2.ts_last) == (200, 200)


def test_gap_then_resync_at_the_next_proven_frame() -> None:
    good = [frame(b"KF%d" % i + b"z" * 30) for i in range(4)]
    stream = b"".join(good)
    s = FrameSplitter(Magic())
    out = s.feed(0, stream[:10], 1)
    lost_at = 10
    lost_len = len(good[0]) - 10 + 5  # the rest of frame 0 and the start of frame 1
    out += s.gap(lost_at, lost_len, 2, "lost")
    out += s.feed(lost_at + lost_len, stream[lost_at + lost_len :], 3)
    assert frames_of(out) == [g[4:] for g in good[2:]]
    assert any(isinstance(e, Lost) for e in out)
    skipped = [e for e in out if isinstance(e, Skipped)]
    assert sum(e.length for e in skipped) == 10 + (len(good[1]) - 5)  # partial frame + the cut frame


def test_absurd_size_is_a_desync_not_an_allocation() -> None:
    tracemalloc.start()
    s = FrameSplitter(Magic())
    out = s.feed(0, struct.pack(">i", 2**31 - 1) + b"garbage!" + frame(b"KFokay"), 1)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert frames_of(out) == [b"KFokay"]
    assert peak < 1 << 20
    assert any(isinstance(e, Skipped) and e.reason.startswith("desync") for e in out)


def test_garbage_alternating_with_valid_frames_recovers_every_frame() -> None:
    good = [frame(b"KF" + bytes([i]) * 20) for i in range(20)]
    stream = b"".join(g + b"\x7f\xff\xff\xffjunk\xff\x01\x02" for g in good)
    s = FrameSplitter(Magic())
    out = []
    for i in range(0, len(stream), 13):
        out += s.feed(i, stream[i : i + 13], i)
    assert frames_of(out) == [g[4:] for g in good]


def test_every_byte_is_framed_skipped_or_lost() -> None:
    good = [frame(b"KF" + b"q" * n) for n in range(1, 30)]
    stream = b"".join(good)
    s = FrameSplitter(Magic())
    out = s.feed(0, stream[:100], 1) + s.gap(100, 50, 2, "lost") + s.feed(150, stream[150:], 3)
    accounted = sum(len(e.data) + 4 for e in out if isinstance(e, Frame))
    accounted += sum(e.length for e in out if isinstance(e, Skipped | Lost))
    _at, left = s.pending()
    assert accounted + left == len(stream)


def test_hunting_memory_is_bounded() -> None:
    s = FrameSplitter(Magic(), max_hunt=64 * 1024)
    s.start_hunting()
    junk = bytes(range(256)) * 16
    for i in range(200):
        s.feed(i * len(junk), junk, i)
    assert s.pending()[1] <= 64 * 1024


def test_real_request_frames_resync_with_the_decoding_validator() -> None:
    from kdissect.kafka.validators import RequestValidator

    reqs = [metadata_request(i) for i in range(5)]
    stream = b"".join(reqs)
    s = FrameSplitter(RequestValidator())
    s.start_hunting()  # picked up mid-stream: starts 3 bytes into the first frame
    out = s.feed(3, stream[3:], 1)
    assert frames_of(out) == [r[4:] for r in reqs[1:]]


def test_known_length_gaps_inside_a_frame_keep_the_splitter_in_sync() -> None:
    """Snap-length cuts: the size field was captured, so the next boundary is known."""
    big, after = frame(b"KF" + b"b" * 300), frame(b"KF-after")
    s = FrameSplitter(Magic())
    out = s.feed(0, big[:50], 1)
    out += s.gap(50, 100, 1, "snaplen")
    out += s.feed(150, big[150:200], 2)
    out += s.gap(200, len(big) - 200, 2, "snaplen")  # ends exactly at the frame's end
    out += s.feed(len(big), after, 3)
    frames = [e for e in out if isinstance(e, Frame)]
    assert [f.data for f in frames] == [big[4:50], after[4:]]
    assert frames[0].wire_size == len(big) - 4 and not frames[0].complete
    assert (frames[0].ts_first, frames[0].ts_last) == (1, 2) and frames[1].complete
    assert not any(isinstance(e, Skipped) for e in out) and not s.hunting


def test_a_gap_past_the_end_of_a_cut_frame_falls_back_to_hunting() -> None:
    big, nxt = frame(b"KF" + b"c" * 100), frame(b"KF-next" + b"z" * 20)
    stream = big + nxt + frame(b"KF-last")
    s = FrameSplitter(Magic())
    out = s.feed(0, stream[:20], 1) + s.gap(20, 10, 1, "snaplen")
    out += s.gap(30, len(big) + 5 - 30, 2, "lost")  # swallows the start of the next frame
    out += s.feed(len(big) + 5, stream[len(big) + 5 :], 3)
    assert frames_of(out) == [b"KF-last"]
    assert next(e.reason for e in out if isinstance(e, Skipped)) == "partial_frame: cut by a gap"


class SaneMagic(Magic):
    """Magic, and a frame's first bytes must already look like one while in sync."""

    def sane(self, head: bytes, size: int) -> bool:
        return head.startswith(b"KF")


def test_a_known_length_gap_after_a_garbage_size_field_hunts_instead_of_skipping_to_its_end() -> None:
    """A stray byte turned the size field into 16 MiB: a gap right after it must not make the
    splitter trust that size and drop everything up to its supposed end."""
    first, nxt = frame(b"KF-first"), frame(b"KF-next")
    garbage = b"\x01" + frame(b"xx" + b"z" * 20)[1:]  # size field now claims 16 MiB
    stream = first + garbage + b"?" * 30 + nxt
    s = FrameSplitter(SaneMagic())
    at = len(first) + 20  # the garbage head is only 16 bytes in when the gap comes
    out = s.feed(0, stream[:at], 1) + s.gap(at, 30, 2, "lost") + s.feed(at + 30, stream[at + 30 :], 3)
    assert frames_of(out) == [b"KF-first", b"KF-next"] and not s.hunting
    assert not any(isinstance(e, Frame) and e.wire_size for e in out)
