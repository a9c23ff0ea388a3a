"""OutOfOrderBuffer (first copy wins, exact cost accounting, taking from the front) and seq_delta."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.reassembly.ooo_buffer import CHUNK_OVERHEAD, OutOfOrderBuffer
from kdissect.reassembly.seqnum import seq_delta


def test_insert_fills_only_the_holes_between_held_chunks():
    buf = OutOfOrderBuffer()
    assert buf.insert(10, 14, b"bbbb", 1) == 4
    assert buf.insert(20, 22, b"dd", 2) == 2
    assert buf.insert(5, 25, b"x" * 20, 3) == 20 - 6  # 5..10, 14..20, 22..25 are new
    assert buf.insert(12, 21, b"y" * 9, 4) == 0
    assert (buf.first_start, len(buf)) == (5, 5)
    assert buf.take_contiguous(5) == [
        (5, 10, b"xxxxx", 3),
        (10, 14, b"bbbb", 1),
        (14, 20, b"xxxxxx", 3),
        (20, 22, b"dd", 2),
        (22, 25, b"xxx", 3),
    ]
    assert not buf and buf.cost == 0


def test_snaplen_missing_tail_counts_as_held_but_costs_no_bytes():
    buf = OutOfOrderBuffer()
    assert buf.insert(0, 100, b"abc", 0) == 100
    assert buf.cost == 3 + CHUNK_OVERHEAD
    assert buf.insert(50, 150, b"z" * 100, 1) == 50
    assert buf.take_contiguous(0) == [(0, 100, b"abc", 0), (100, 150, b"z" * 50, 1)]


def test_take_contiguous_stops_at_a_hole_and_needs_the_exact_start():
    buf = OutOfOrderBuffer()
    buf.insert(0, 2, b"ab", 0)
    buf.insert(3, 4, b"d", 0)
    assert buf.take_contiguous(1) == []
    assert buf.take_contiguous(0) == [(0, 2, b"ab", 0)]
    assert buf.first_start == 3 and buf.cost == 1 + CHUNK_OVERHEAD


ops = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), st.integers(0, 300), st.integers(1, 40), st.integers(0, 40)),
        st.tuples(st.just("take")),
    ),
    max_size=200,
)


@settings(max_examples=200, deadline=None)
@given(ops)
def test_buffer_matches_a_per_offset_model(operations):
    """Against a dict of offset -> (byte or None for snaplen-missing, ts): same content, same cost."""
    buf = OutOfOrderBuffer()
    model: dict[int, tuple[int | None, int]] = {}
    front = 0  # everything below has been taken
    for ts, op in enumerate(operations):
        if op[0] == "insert":
            _, start, length, captured = op
            start += front
            data = bytes((start + i) % 251 for i in range(min(captured, length)))
            new = [o for o in range(start, start + length) if o not in model]
            assert buf.insert(start, start + length, data, ts) == len(new)
            for o in new:
                model[o] = (data[o - start] if o - start < len(data) else None, ts)
        else:
            taken = buf.take_contiguous(front)
            for s, e, data, ts_ in taken:
                assert s == front
                for o in range(s, e):
                    assert model.pop(o) == (data[o - s] if o - s < len(data) else None, ts_)
                front = e
            assert front not in model
    cost = buf.cost
    drained = []
    while buf:
        drained += buf.take_contiguous(buf.first_start)
    assert cost == sum(len(data) + CHUNK_OVERHEAD for _, _, data, _ in drained)
    assert all(a[1] <= b[0] for a, b in pairwise(drained))  # sorted, disjoint
    rebuilt = {o: (d[o - s] if o - s < len(d) else None, ts) for s, e, d, ts in drained for o in range(s, e)}
    assert rebuilt == model
    assert buf.cost == 0


def test_seq_delta_is_signed_distance_modulo_2_32():
    assert seq_delta(5, 3) == 2 and seq_delta(3, 5) == -2
    assert seq_delta(0, 0xFFFFFFFF) == 1 and seq_delta(0xFFFFFFFF, 0) == -1
    assert seq_delta(0x7FFFFFFF, 0) == 2**31 - 1 and seq_delta(0x80000000, 0) == -(2**31)
