"""Property tests: whatever happens to the segments, the events rebuild the original stream."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.reassembly.streams import StreamEnd
from kdissect.testing.tcp_helpers import ACK, CLIENT, FIN, MASK, SERVER, SYN, ends, handshake, run, seg, stream

S_ISN = 7


@st.composite
def mangled_segments(draw) -> tuple[bytes, list[tuple[int, int]]]:
    """A byte stream and the ranges of it a capture saw.

    The stream is cut into segments; some are dropped, some sent again, and random ranges
    are retransmitted with other boundaries, all in random order.
    """
    payload = draw(st.binary(min_size=1, max_size=1500))
    n = len(payload)
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=40))) if n > 1 else []
    bounds = [0, *cuts, n]
    sent = list(pairwise(bounds))
    captured = [r for r in sent if draw(st.integers(0, 3))]  # about a quarter dropped
    starts = st.integers(0, n - 1)
    for start in draw(st.lists(starts, max_size=8)):
        captured.append((start, draw(st.integers(start + 1, n))))
    captured += draw(st.lists(st.sampled_from(sent), max_size=5))  # exact duplicates
    return payload, draw(st.permutations(captured))


isns = st.one_of(st.integers(0, MASK), st.integers(MASK - 2000, MASK))


def covered(ranges: list[tuple[int, int]], n: int) -> list[tuple[int, int, str]]:
    """Maximal runs of [0, n) that some range covers ("data") or none does ("lost")."""
    marks = bytearray(n)
    for a, b in ranges:
        marks[a:b] = b"\x01" * (b - a)
    runs: list[tuple[int, int, str]] = []
    for i, m in enumerate(marks):
        kind = "data" if m else "lost"
        if runs and runs[-1][2] == kind:
            runs[-1] = (runs[-1][0], i + 1, kind)
        else:
            runs.append((i, i + 1, kind))
    return runs


def merged(runs: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    for a, b, kind in runs:
        if out and out[-1][2] == kind and out[-1][1] == a:
            out[-1] = (out[-1][0], b, kind)
        else:
            out.append((a, b, kind))
    return out


@settings(max_examples=150, deadline=None)
@given(mangled_segments(), isns)
def test_captured_bytes_are_delivered_exactly_once_and_the_rest_are_gaps(case, isn):
    """With the handshake and the FIN seen and no ACKs, only flush turns holes into gaps, so
    the delivered offsets are exactly the union of what was captured and the gaps its complement."""
    payload, captured = case
    n = len(payload)
    c0 = isn + 1
    segs = handshake(isn, S_ISN)
    segs.append(seg(SERVER, CLIENT, seq=S_ISN + 1, ack=c0, flags=FIN | ACK))
    data = [seg(CLIENT, SERVER, seq=c0 + a, ack=S_ISN + 2, payload=payload[a:b]) for a, b in captured]
    data.insert(len(data) // 2, seg(CLIENT, SERVER, seq=c0 + n, ack=S_ISN + 2, flags=FIN | ACK))
    events = run(segs + data)

    st_ = stream(events, 0, 0)
    expected = covered(captured, n)
    assert (st_.start, st_.end) == (0, n)
    assert merged(st_.runs) == expected
    assert st_.data == b"".join(payload[a:b] if k == "data" else bytes(b - a) for a, b, k in expected)
    (end,) = ends(events)
    assert end.reason == ("fin" if all(k == "data" for *_, k in expected) else "eof")
    stats = end.stats[0]
    assert stats.bytes == sum(b - a for a, b, k in expected if k == "data")
    assert stats.gap_bytes == n - stats.bytes


@settings(max_examples=150, deadline=None)
@given(
    case=mangled_segments(),
    isn=isns,
    syn=st.booleans(),
    settle=st.integers(1, 5),
    max_buffer=st.integers(0, 3000),
    extras=st.data(),
)
def test_any_mangling_with_acks_snaplen_and_tiny_buffers_stays_consistent(case, isn, syn, settle, max_buffer, extras):
    """ACKs at random points, snap-length cuts and a small buffer force every gap path; the
    events must still be in order, contiguous, never repeat a byte and match the original
    at one fixed shift (0 with the handshake; the settled start without)."""
    payload, captured = case
    n = len(payload)
    c0 = isn + 1
    segs = [seg(CLIENT, SERVER, seq=isn, flags=SYN)] if syn else []
    for a, b in captured:
        kept = extras.draw(st.one_of(st.just(b - a), st.integers(0, b - a)))
        segs.append(seg(CLIENT, SERVER, seq=c0 + a, payload=payload[a : a + kept], payload_len=b - a))
        if extras.draw(st.integers(0, 3)) == 0:
            segs.append(seg(SERVER, CLIENT, seq=S_ISN, ack=c0 + extras.draw(st.integers(0, n))))
    events = run(segs, settle_segments=settle, max_buffer_bytes=max_buffer)
    if not captured:
        assert len(events) == (2 if syn else 0)  # the SYN alone opens and ends a connection
        return

    st_ = stream(events, 0, 0)
    assert st_.midstream != syn or not st_.runs
    shifts = range(1) if syn else range(n)
    shifts = [p for p in shifts if all(payload[p + off : p + off + len(c)] == c for off, c in st_.chunks)]
    assert shifts, "delivered bytes do not match the original at any single shift"
    assert min(shifts) + st_.end <= n
    (end,) = [e for e in events if isinstance(e, StreamEnd)]
    stats = end.stats[0]
    assert stats.bytes == sum(len(c) for _, c in st_.chunks)
    assert stats.gap_bytes == sum(b - a for a, b, _ in st_.gaps())
    assert stats.gaps == len(st_.gaps())  # a midstream start is not counted as a gap
