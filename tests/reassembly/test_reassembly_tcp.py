"""Scenario tests for TcpReassembler: one behaviour per test, exact offsets and counters."""

from __future__ import annotations

from kdissect.reassembly.reassembler import TcpReassembler
from kdissect.reassembly.streams import StreamData, StreamEnd, StreamGap, StreamStart
from kdissect.testing.tcp_helpers import (
    ACK,
    CLIENT,
    FIN,
    PSH,
    RST,
    SERVER,
    SYN,
    ends,
    handshake,
    run,
    seg,
    starts,
    stream,
)

C_ISN = 1000
S_ISN = 70000
C0 = C_ISN + 1  # sequence number of client offset 0
S0 = S_ISN + 1


def c(off: int, payload: bytes = b"", **kw):
    """Client segment at client stream offset ``off`` (acknowledging nothing new by default)."""
    kw.setdefault("ack", S0)
    return seg(CLIENT, SERVER, seq=C0 + off, payload=payload, **kw)


def s(off: int, payload: bytes = b"", **kw):
    kw.setdefault("ack", C0)
    return seg(SERVER, CLIENT, seq=S0 + off, payload=payload, **kw)


def test_handshake_data_and_fin_close_promptly():
    r = TcpReassembler()
    events = []
    for x in [
        *handshake(C_ISN, S_ISN),
        c(0, b"hello ", ts=10, flags=ACK | PSH),
        s(0, b"world", ts=11, ack=C0 + 6),
        c(6, b"bye", ts=12, ack=S0 + 5),
        c(9, ts=13, flags=FIN | ACK, ack=S0 + 5),
        s(5, ts=14, flags=FIN | ACK, ack=C0 + 10),
    ]:
        events += r.feed(x)
    assert events[0] == StreamStart(0, CLIENT, SERVER, 0, syn_seen=True)
    assert [e for e in events if isinstance(e, StreamData)] == [
        StreamData(0, 0, 0, b"hello ", 10),
        StreamData(0, 1, 0, b"world", 11),
        StreamData(0, 0, 6, b"bye", 12),
    ]
    (end,) = ends(events)
    assert events[-1] is end and (end.reason, end.ts_ns) == ("fin", 14)
    c_stats, s_stats = end.stats
    assert (c_stats.segments, c_stats.bytes, c_stats.gaps) == (5, 9, 0)
    assert (s_stats.segments, s_stats.bytes, s_stats.retransmissions) == (3, 5, 0)
    assert r.open_connections == 0
    assert r.flush() == []


def test_reordered_segments_are_delivered_in_order_with_their_own_timestamps():
    events = run([*handshake(C_ISN, S_ISN), c(8, b"CCCC", ts=30), c(0, b"AAAA", ts=31), c(4, b"BBBB", ts=32)])
    st = stream(events, 0, 0)
    assert bytes(st.data) == b"AAAABBBBCCCC" and st.gaps() == []
    assert st.timestamps == [(0, 31), (4, 32), (8, 30)]
    assert ends(events)[0].stats[0].out_of_order == 1


def test_duplicates_are_delivered_once_and_counted():
    events = run([*handshake(C_ISN, S_ISN), c(0, b"abcd"), c(0, b"abcd"), c(8, b"ijkl"), c(8, b"ijkl"), c(4, b"efgh")])
    assert bytes(stream(events, 0, 0).data) == b"abcdefghijkl"
    stats = ends(events)[0].stats[0]
    assert (stats.retransmissions, stats.overlap_bytes, stats.bytes) == (2, 8, 12)


def test_overlaps_with_different_content_keep_the_first_copy():
    events = run(
        [
            *handshake(C_ISN, S_ISN),
            c(0, b"0123"),
            c(2, b"XXXX"),  # overlaps delivered bytes 2..3, brings 4..5
            c(10, b"abcd"),  # held out of order
            c(8, b"YYYYYYYY"),  # overlaps the held chunk on both sides: 8..9 and 14..15 are new
            c(6, b"67"),
        ]
    )
    st = stream(events, 0, 0)
    assert bytes(st.data) == b"0123XX67YYabcdYY"
    stats = ends(events)[0].stats[0]
    assert stats.overlap_bytes == 2 + 4 and stats.retransmissions == 0 and stats.bytes == 16


def test_dropped_segments_become_lost_gaps_with_exact_offsets_at_flush():
    events = run([*handshake(C_ISN, S_ISN), c(0, b"aaaa"), c(10, b"cccc", ts=5), c(20, b"eeee", ts=6)])
    st = stream(events, 0, 0)
    assert st.runs == [(0, 4, "data"), (4, 10, "lost"), (10, 14, "data"), (14, 20, "lost"), (20, 24, "data")]
    end = ends(events)[0]
    assert (end.reason, end.stats[0].gaps, end.stats[0].gap_bytes) == ("eof", 2, 12)


def test_ack_beyond_a_hole_turns_it_into_a_lost_gap_immediately():
    r = TcpReassembler()
    for x in [*handshake(C_ISN, S_ISN), c(0, b"aaaa"), c(8, b"cccc", ts=7)]:
        r.feed(x)
    events = r.feed(s(0, ack=C0 + 12, ts=9))  # the server got everything up to 12
    assert events == [StreamGap(0, 0, 4, 4, 9, "lost"), StreamData(0, 0, 8, b"cccc", 7)]
    # The lost bytes arriving late are old news, not delivered twice.
    assert r.feed(c(4, b"bbbb")) == []
    # An ACK past everything seen proves a trailing loss too.
    assert r.feed(s(0, ack=C0 + 20, ts=11)) == [StreamGap(0, 0, 12, 8, 11, "lost")]


def test_ack_of_an_unseen_fin_is_not_a_lost_byte():
    r = TcpReassembler()
    for x in [*handshake(C_ISN, S_ISN), c(0, b"data")]:
        r.feed(x)
    assert r.feed(s(0, ack=C0 + 5)) == []
    end = ends(r.flush())[0]
    assert end.stats[0].gaps == 0


def test_sequence_wrap_around_2_32():
    isn = 0xFFFFFFF8
    payloads = [bytes([i]) * 5 for i in range(6)]
    segs = [seg(CLIENT, SERVER, seq=isn, flags=SYN)]
    segs += [seg(CLIENT, SERVER, seq=isn + 1 + 5 * i, payload=p) for i, p in enumerate(payloads)]
    segs[2], segs[4] = segs[4], segs[2]  # reorder across the wrap
    events = run(segs)
    st = stream(events, 0, 0)
    assert bytes(st.data) == b"".join(payloads) and st.gaps() == []


def test_offsets_are_64_bit_beyond_4_gib():
    """Snap-length-cut segments let a test move 5 GiB through cheaply; offsets keep counting."""
    seg_len = 1 << 24
    n = 5 * (1 << 30) // seg_len
    segs = [seg(CLIENT, SERVER, seq=C_ISN, flags=SYN)]
    segs += [seg(CLIENT, SERVER, seq=C0 + i * seg_len, payload=b"x", payload_len=seg_len) for i in range(n)]
    segs.append(seg(CLIENT, SERVER, seq=C0 + n * seg_len, payload=b"tail"))
    events = run(segs)
    st = stream(events, 0, 0)
    assert st.end == n * seg_len + 4 > 1 << 32
    assert [e for e in events if isinstance(e, StreamData)][-1] == StreamData(0, 0, n * seg_len, b"tail", 0)


def test_keepalives_are_counted_not_delivered():
    r = TcpReassembler()
    events = []
    for x in [*handshake(C_ISN, S_ISN), c(0, b"abc"), c(2), c(2, b"\x00"), c(3, b"def")]:
        events += r.feed(x)
    events += r.flush()
    assert bytes(stream(events, 0, 0).data) == b"abcdef"
    stats = ends(events)[0].stats[0]
    assert (stats.keepalives, stats.retransmissions, stats.overlap_bytes) == (2, 0, 0)


def test_zero_window_probes_are_counted_and_their_byte_delivered_once():
    events = run(
        [
            *handshake(C_ISN, S_ISN),
            c(0, b"abc"),
            s(0, ack=C0 + 3, window=0),  # receiver full
            c(3, b"d"),  # probe carrying the next byte
            c(2),  # Linux-style probe: no data, one byte back
            s(0, ack=C0 + 3, window=0),  # probe refused
            s(0, ack=C0 + 3, window=4096),
            c(3, b"defg"),  # the refused byte comes again with more
        ]
    )
    assert bytes(stream(events, 0, 0).data) == b"abcdefg"
    stats = ends(events)[0].stats[0]
    assert (stats.zero_window_probes, stats.keepalives, stats.overlap_bytes) == (2, 0, 1)


def test_rst_ends_the_connection_at_once_after_flushing_held_data():
    r = TcpReassembler()
    for x in [*handshake(C_ISN, S_ISN), c(0, b"aa"), c(4, b"cc")]:
        r.feed(x)
    events = r.feed(s(0, flags=RST | ACK, ts=50, payload=b"why"))
    assert events == [
        StreamGap(0, 0, 2, 2, 50, "lost"),
        StreamData(0, 0, 4, b"cc", 0),
        StreamEnd(0, 50, "rst", events[-1].stats),
    ]
    assert (events[-1].stats[1].anomalies, events[-1].stats[1].ignored_bytes) == (1, 3)
    assert r.open_connections == 0
    # Late segments of the reset connection do not resurrect it.
    assert r.feed(c(6, b"late")) == [] and r.feed(s(0, flags=RST)) == []
    assert r.ignored_segments == 2 and r.flush() == []


def test_new_syn_after_fin_close_starts_a_new_connection():
    first = [*handshake(C_ISN, S_ISN), c(0, b"one", flags=FIN | ACK), s(0, flags=FIN | ACK, ack=C0 + 4)]
    second = [*handshake(9_000_000, 8_000_000, ts=100)]
    second.append(seg(CLIENT, SERVER, seq=9_000_001, ack=8_000_001, payload=b"two", ts=103))
    r = TcpReassembler()
    events = [e for x in first for e in r.feed(x)]
    events += r.feed(c(0, b"one"))  # straggling retransmission of the closed connection
    events += r.feed(c(4))  # its last ACK
    events += [e for x in second for e in r.feed(x)] + r.flush()
    assert [(e.conn_id, e.reason) for e in ends(events)] == [(0, "fin"), (1, "eof")]
    assert [e.conn_id for e in starts(events)] == [0, 1]
    assert bytes(stream(events, 0, 0).data) == b"one"
    assert bytes(stream(events, 1, 0).data) == b"two"


def test_new_syn_on_an_open_connection_ends_it_with_reuse():
    r = TcpReassembler()
    events = [e for x in [*handshake(C_ISN, S_ISN), c(0, b"old")] for e in r.feed(x)]
    events += r.feed(seg(CLIENT, SERVER, seq=C_ISN, flags=SYN))  # retransmitted SYN: same connection
    assert ends(events) == []
    events += r.feed(seg(SERVER, CLIENT, seq=5, flags=SYN, ts=40))  # server now initiates
    end = ends(events)[0]
    assert (end.conn_id, end.reason, end.ts_ns) == (0, "reuse", 40)
    assert end.stats[0].retransmissions == 1
    assert starts(events)[-1] == StreamStart(1, SERVER, CLIENT, 40, syn_seen=True)


def test_syn_ack_seen_first_names_the_initiator_and_fixes_its_offsets():
    events = run(
        [
            seg(SERVER, CLIENT, seq=S_ISN, ack=C0, flags=SYN | ACK),
            c(4, b"late"),  # client bytes 0..3 were missed: a hole, not a mid-stream start
            c(0, b"earl"),
        ]
    )
    assert starts(events) == [StreamStart(0, CLIENT, SERVER, 0, syn_seen=True)]
    st = stream(events, 0, 0)
    assert not st.midstream and bytes(st.data) == b"earllate"


def test_midstream_start_emits_an_unknown_length_gap_then_data():
    events = run([s(100, b"resp", ts=3), c(500, b"req", ts=4)])
    assert starts(events) == [StreamStart(0, SERVER, CLIENT, 3, syn_seen=False)]
    for direction, data, ts in [(0, b"resp", 3), (1, b"req", 4)]:
        assert [e for e in events if getattr(e, "direction", None) == direction] == [
            StreamGap(0, direction, 0, None, ts, "midstream"),
            StreamData(0, direction, 0, data, ts),
        ]


def test_midstream_settles_on_the_lowest_of_the_first_segments():
    """Segments 2 and 3 arrive before 1: offset 0 is segment 1, nothing is reported lost."""
    events = run([c(10, b"cc"), c(20, b"ee"), c(0, b"aaaaaaaaaa"), c(12, b"dddddddd"), c(22, b"f")])
    st = stream(events, 0, 0)
    assert st.midstream and bytes(st.data) == b"aaaaaaaaaaccddddddddeef" and st.gaps() == []


def test_midstream_settles_early_when_the_peer_acks_a_held_segment():
    r = TcpReassembler()
    assert [type(e) for e in r.feed(c(0, b"req"))] == [StreamStart]
    assert r.feed(s(0, b"resp", ack=C0 + 3, ts=5)) == [
        StreamGap(0, 0, 0, None, 0, "midstream"),
        StreamData(0, 0, 0, b"req", 0),
    ]


def test_midstream_keepalive_before_any_data_is_not_taken_as_data():
    """The server's ACK says where the client's next byte goes; a byte before it is a keep-alive."""
    events = run([s(0, b"hi", ack=C0), c(-1, b"\x00"), c(0, b"real")])
    assert bytes(stream(events, 0, 1).data) == b"real"
    assert ends(events)[0].stats[1].keepalives == 1


def test_snaplen_cut_segments_deliver_captured_bytes_then_a_gap():
    events = run(
        [
            *handshake(C_ISN, S_ISN),
            c(0, b"head", payload_len=10, ts=1),
            c(20, b"xy", payload_len=5, ts=2),  # out of order and cut
            c(10, b"0123456789", ts=3),
            c(25, b"next", ts=4),
        ]
    )
    st = stream(events, 0, 0)
    assert st.runs == [
        (0, 4, "data"),
        (4, 10, "snaplen"),
        (10, 20, "data"),
        (20, 22, "data"),
        (22, 25, "snaplen"),
        (25, 29, "data"),
    ]
    assert ends(events)[0].stats[0].gap_bytes == 9


def test_padding_beyond_payload_len_is_ignored():
    events = run([*handshake(C_ISN, S_ISN), c(0, b"ab\x00\x00\x00\x00", payload_len=2), c(2, b"cd")])
    assert bytes(stream(events, 0, 0).data) == b"abcd"


def test_data_past_the_fin_is_an_anomaly_not_stream_data():
    events = run([*handshake(C_ISN, S_ISN), c(0, b"abc", flags=FIN | ACK), c(3, b"zzz"), c(1, b"bcd")])
    assert bytes(stream(events, 0, 0).data) == b"abc"
    stats = ends(events)[0].stats[0]
    assert (stats.anomalies, stats.ignored_bytes, stats.overlap_bytes) == (2, 4, 2)


def test_fin_after_a_hole_waits_for_the_data_or_the_final_ack():
    r = TcpReassembler()
    for x in [*handshake(C_ISN, S_ISN), c(0, b"aa"), c(4, b"cc", flags=FIN | ACK), s(0, flags=FIN | ACK)]:
        assert ends(r.feed(x)) == []
    events = r.feed(c(2, b"bb", ts=9))
    assert [type(e) for e in events] == [StreamData, StreamData, StreamEnd]
    assert events[-1].reason == "fin"
    # Same again, but the hole is never filled: the client's ACK of the server's FIN
    # does not settle it, the server's ACK of the client's FIN does.
    r = TcpReassembler()
    for x in [*handshake(C_ISN, S_ISN), c(0, b"aa"), c(4, b"cc", flags=FIN | ACK), s(0, flags=FIN | ACK)]:
        r.feed(x)
    assert ends(r.feed(c(7, ack=S0 + 1))) == []
    events = r.feed(s(1, ack=C0 + 7, ts=12))
    assert events[0] == StreamGap(0, 0, 2, 2, 12, "lost") and events[-1].reason == "fin"


def test_bare_acks_of_unknown_connections_open_nothing():
    r = TcpReassembler()
    assert r.feed(c(0)) == [] and r.feed(s(0, flags=FIN | ACK)) == []
    assert r.ignored_segments == 2 and r.open_connections == 0


def test_connections_are_numbered_in_order_of_appearance_and_flushed_in_that_order():
    other = ("10.0.0.3", 40000)
    events = run([c(0, b"x"), seg(other, SERVER, seq=1, payload=b"y"), s(0, b"z")])
    assert [e.conn_id for e in starts(events)] == [0, 1]
    assert [(e.conn_id, e.reason) for e in ends(events)] == [(0, "eof"), (1, "eof")]
    assert bytes(stream(events, 0, 1).data) == b"z"
