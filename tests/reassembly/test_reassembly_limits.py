"""Resource bounds: buffer memory under adversarial input, the connection table, ended 4-tuples."""

from __future__ import annotations

import gc
import tracemalloc
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.reassembly.reassembler import TcpReassembler
from kdissect.reassembly.streams import StreamData, StreamGap
from kdissect.sources.segment import TcpSegment
from kdissect.testing.tcp_helpers import ACK, CLIENT, FIN, SERVER, SYN, ends, handshake, seg, starts, stream


def _peak_growth(r: TcpReassembler, segments) -> tuple[int, Counter]:
    """Feed segments; return the peak traced memory growth and a count of gaps by (reason, length)."""
    gaps: Counter = Counter()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for x in segments:
            for e in r.feed(x):
                if isinstance(e, StreamGap):
                    gaps[e.reason, e.length] += 1
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - base, gaps


def test_holes_everywhere_cannot_grow_the_buffer_past_its_bound():
    """Every other 8-byte block, never the ones between: without the bound this holds 2.5 MB."""
    bound = 32 << 10
    r = TcpReassembler(max_buffer_bytes=bound)
    for x in handshake(0, 0):
        r.feed(x)
    blocks = (seg(seq=1 + 16 * i, payload=i.to_bytes(8, "big")) for i in range(1, 15_000))
    growth, gaps = _peak_growth(r, blocks)
    assert growth < 2 * bound
    # Each skip gives up exactly one 8-byte hole; the first hole is 16 bytes (block 0 never sent).
    assert set(gaps) == {("window", 8), ("window", 16)} and gaps["window", 8] > 12_000


def test_a_flood_of_midstream_segments_settles_instead_of_piling_up():
    bound = 32 << 10
    r = TcpReassembler(max_buffer_bytes=bound, settle_segments=10**9)
    blocks = (seg(seq=10**6 - 100 * i, payload=bytes(100)) for i in range(5_000))  # descending seqs
    growth, gaps = _peak_growth(r, blocks)
    assert growth < 2 * bound
    assert gaps["midstream", None] == 1


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 3000)), min_size=1, max_size=300))
def test_held_bytes_never_exceed_the_bound_whatever_the_offsets(blocks):
    bound = 10_000
    r = TcpReassembler(max_buffer_bytes=bound)
    events = r.feed(seg(seq=0, flags=SYN))
    for off, length in blocks:
        events += r.feed(seg(seq=1 + off, payload=bytes(length)))
        conn, _ = r._flows[(*CLIENT, *SERVER)]  # white-box: the bound is about held state
        assert conn.halves[0]._buf.cost <= bound
    events += r.flush()
    st_ = stream(events, 0, 0)  # still contiguous and exact
    assert ends(events)[0].stats[0].bytes == sum(len(c) for _, c in st_.chunks)


def _short_connection(port: int, ts: int) -> list[TcpSegment]:
    client = ("10.1.0.1", port)
    segs = handshake(1000, 5000, client=client, ts=ts)
    segs.append(seg(client, SERVER, seq=1001, ack=5001, payload=b"request", ts=ts + 3))
    segs.append(seg(SERVER, client, seq=5001, ack=1008, payload=b"response", ts=ts + 4, flags=ACK | FIN))
    segs.append(seg(client, SERVER, seq=1008, ack=5010, flags=ACK | FIN, ts=ts + 5))
    return segs


def test_finished_connections_are_freed():
    r = TcpReassembler(max_closed=100)

    def run_connections(ports: range) -> int:
        count = 0
        for port in ports:
            for x in _short_connection(port, port * 10):
                count += sum(e.reason == "fin" for e in ends(r.feed(x)))
        return count

    tracemalloc.start()
    try:
        assert run_connections(range(1000, 3000)) == 2000  # warm up: allocator and tables reach steady state
        gc.collect()  # cyclic garbage awaiting the collector is not growth: measure what is really kept
        before = tracemalloc.get_traced_memory()[0]
        assert run_connections(range(3000, 6000)) == 3000
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert r.open_connections == 0
    assert after - before < 2_000  # 3000 more connections, no lasting growth


def test_a_full_table_evicts_connections_that_never_carried_data_first():
    r = TcpReassembler(max_connections=3)
    ports = [("10.2.0.1", p) for p in range(4)]
    events = r.feed(seg(ports[0], SERVER, seq=1, payload=b"a", ts=1))
    events += r.feed(seg(ports[1], SERVER, seq=1, flags=SYN, ts=2))  # half-open
    events += r.feed(seg(ports[2], SERVER, seq=1, payload=b"c", ts=3))
    events += r.feed(seg(ports[3], SERVER, seq=1, payload=b"d", ts=4))
    assert [(e.conn_id, e.reason, e.ts_ns) for e in ends(events)] == [(1, "evicted", 2)]
    events = r.feed(seg(ports[1], SERVER, seq=1, payload=b"b", ts=5))
    assert [(e.conn_id, e.reason) for e in ends(events)] == [(0, "evicted")]
    assert starts(events)[0].conn_id == 4 and r.open_connections == 3


def test_idle_connections_end_after_the_timeout_in_capture_time():
    r = TcpReassembler(idle_timeout_ns=1_000)
    other = ("10.3.0.1", 1)
    r.feed(seg(seq=1, payload=b"x", ts=0))
    assert ends(r.feed(seg(other, SERVER, seq=1, payload=b"y", ts=900))) == []
    events = r.feed(seg(other, SERVER, seq=2, payload=b"z", ts=1_500))
    assert [(e.conn_id, e.reason, e.ts_ns) for e in ends(events)] == [(0, "idle", 0)]
    assert r.open_connections == 1


def test_ended_4_tuples_are_remembered_only_up_to_max_closed():
    r = TcpReassembler(max_closed=1)
    first, second = _short_connection(1, 0), _short_connection(2, 100)
    for x in first + second:
        r.feed(x)
    late_first = seg(("10.1.0.1", 1), SERVER, seq=1001, payload=b"request", ts=200)
    late_second = seg(("10.1.0.1", 2), SERVER, seq=1001, payload=b"request", ts=201)
    assert r.feed(late_second) == []  # still remembered: a straggler
    assert [type(e).__name__ for e in r.feed(late_first)] == ["StreamStart"]  # forgotten: new connection


def test_invalid_limits_are_rejected():
    for kwargs in ({"max_buffer_bytes": -1}, {"settle_segments": 0}, {"max_connections": 0}, {"idle_timeout_ns": 0}):
        with pytest.raises(ValueError):
            TcpReassembler(**kwargs)


garbage = st.builds(
    TcpSegment,
    ts_ns=st.integers(-(2**63), 2**63),
    src_ip=st.sampled_from(["a", "b"]),
    src_port=st.integers(0, 2),
    dst_ip=st.sampled_from(["a", "b"]),
    dst_port=st.integers(0, 2),
    seq=st.one_of(st.integers(0, 40), st.integers(-(2**40), 2**40)),
    ack=st.one_of(st.integers(0, 40), st.integers(-(2**40), 2**40)),
    flags=st.integers(0, 255),
    window=st.integers(-1, 70000),
    payload=st.binary(max_size=30),
    payload_len=st.integers(-5, 60),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(garbage, max_size=60), st.integers(0, 500))
def test_garbage_segments_never_raise_and_every_stream_stays_consistent(segments, max_buffer):
    r = TcpReassembler(max_buffer_bytes=max_buffer, settle_segments=2, max_connections=3, idle_timeout_ns=50)
    events = [e for x in segments for e in r.feed(x)] + r.flush()
    opened = {e.conn_id for e in starts(events)}
    assert opened == {e.conn_id for e in ends(events)}  # every connection ends exactly once
    assert len(ends(events)) == len(opened)
    for cid in opened:
        for direction in (0, 1):
            stream(events, cid, direction)
    assert all(e.conn_id in opened for e in events if isinstance(e, StreamData | StreamGap))
