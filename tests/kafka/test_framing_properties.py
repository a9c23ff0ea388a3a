"""Properties of the frame splitter with the real request validator, on hostile streams.

Whatever the bytes, chunking and gaps: no exception, every byte is framed, skipped, lost or
still pending; garbage before valid frames costs only the garbage; chunking never changes
which frames a hunting splitter proves.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fuzz.targets import framing
from kdissect.kafka.framing import Frame, FrameSplitter, Skipped
from kdissect.kafka.validators import RequestValidator
from kdissect.testing.kafka_frames import metadata_request, produce_request

VALID = [metadata_request(7), produce_request(8, records=b"r" * 300), metadata_request(9, ["a", "b"])]
garbage = st.binary(min_size=1, max_size=200)
cuts = st.lists(st.integers(0, 5000), max_size=12)


def feed_chunked(s: FrameSplitter, stream: bytes, points: list[int]) -> list:
    events, last = [], 0
    for p in sorted({p % (len(stream) + 1) for p in points} | {len(stream)}):
        events += s.feed(last, stream[last:p], p)
        last = p
    return events


def frames(events: list) -> list[tuple[int, bytes]]:
    return [(e.offset, e.data) for e in events if isinstance(e, Frame)]


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=600), step=st.integers(0, 255), lost=st.integers(0, 255))
def test_random_streams_chunks_and_gaps_account_for_every_byte(data: bytes, step: int, lost: int) -> None:
    framing(bytes([step, lost]) + data)  # the fuzz target asserts the accounting


@settings(max_examples=150, deadline=None)
@given(junk=garbage, valid=st.lists(st.sampled_from(VALID), min_size=1, max_size=4), points=cuts)
def test_hunting_after_garbage_finds_every_valid_frame(junk: bytes, valid: list[bytes], points: list[int]) -> None:
    stream = junk + b"".join(valid)
    s = FrameSplitter(RequestValidator())
    s.start_hunting()
    events = feed_chunked(s, stream, points) + s.finish()
    got = [data for _, data in frames(events)]
    assert got[-len(valid) :] == [v[4:] for v in valid]
    assert frames(events)[-len(valid)][0] == len(junk) or len(got) > len(valid)


@settings(max_examples=150, deadline=None)
@given(junk=garbage, valid=st.lists(st.sampled_from(VALID), min_size=2, max_size=4), points=cuts)
def test_in_sync_garbage_between_frames_costs_only_what_it_touches(
    junk: bytes, valid: list[bytes], points: list[int]
) -> None:
    """Garbage after a good frame: the frames after it come back by the end of the stream."""
    stream = valid[0] + junk + b"".join(valid[1:])
    s = FrameSplitter(RequestValidator())
    events = feed_chunked(s, stream, points) + s.finish()
    got = [data for _, data in frames(events)]
    assert got[0] == valid[0][4:]
    assert got[-(len(valid) - 2) :] == [v[4:] for v in valid[2:]] or len(valid) == 2
    skipped = sum(e.length for e in events if isinstance(e, Skipped))
    assert skipped + sum(4 + len(d) for d in got) + s.pending()[1] == len(stream)


@settings(max_examples=100, deadline=None)
@given(junk=garbage, valid=st.lists(st.sampled_from(VALID), min_size=1, max_size=3), a=cuts, b=cuts)
def test_chunking_never_changes_what_hunting_proves(
    junk: bytes, valid: list[bytes], a: list[int], b: list[int]
) -> None:
    stream = junk + b"".join(valid) + junk
    runs = []
    for points in (a, b):
        s = FrameSplitter(RequestValidator())
        s.start_hunting()
        runs.append(frames(feed_chunked(s, stream, points) + s.finish()))
    assert runs[0] == runs[1]
