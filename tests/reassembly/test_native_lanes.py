"""The native lanes (kdissect/reassembly/_native.c) against the Python reference, segment by segment.

The same segments go through a pipeline with lanes (fed in batches of random sizes) and through one
without (``lanes = None``: the reference, one segment at a time); the events — exchanges, anomalies,
and the connection summaries that carry every TCP counter — must be equal, whatever happens to the
segments: retransmissions (some with other bytes), reordering, losses, keep-alives, zero windows,
padding, snap-length cuts, resets, and bounds reached (idle sweeps, a full connection table).
"""

from __future__ import annotations

import tracemalloc
import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.engines.live_exchanges import ExchangeReader
from kdissect.events import Exchange, ExchangeRows, KafkaMessage
from kdissect.kafka.pairing import Pairer
from kdissect.kafka.pipeline import KafkaPipeline
from kdissect.kafka.session import KafkaConnection
from kdissect.options import Options
from kdissect.reassembly.lanes import NativeLanes
from kdissect.sources.segment import ACK, RST, TcpSegment
from kdissect.tables.columns import TABLES, cells
from kdissect.tables.rows import typed_rows
from kdissect.tables.sink import ROW_TABLES, TableSink
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.encoder import encode_request, encode_response
from kdissect.testing.kafka_frames import metadata_request, metadata_response, produce_request, produce_response

pytestmark = pytest.mark.skipif(not NativeLanes.available(), reason="the native path is not built")
MS = 1_000_000


def _connection(index: int, exchanges: int, mss: int, close: bool) -> list[TcpSegment]:
    messages = []
    for cid in range(exchanges):
        ts = (index * 7 + cid * 50) * MS
        if cid % 2:
            messages += [(0, produce_request(cid, records=b"r" * (cid * 37 % 900)), ts),
                         (1, produce_response(cid), ts + MS)]
        else:
            messages += [(0, metadata_request(cid), ts), (1, metadata_response(cid), ts + MS)]
    return tcp_conversation(messages, client=("10.0.0.1", 40000 + index), mss=mss, close=close,
                            isn=(1000 * index + 5, 0xFFFFFF00 - index))


def _events(segments: list[TcpSegment], options: Options, batches: list[int] | None) -> list:
    pipeline = KafkaPipeline(options)
    if batches is None:
        pipeline.lanes = None
        out = [ev for seg in segments for ev in pipeline.feed(seg)]
    else:
        assert pipeline.lanes is not None
        out, i, k = [], 0, 0
        while i < len(segments):
            size = batches[k % len(batches)]
            out += pipeline.feed_many(segments[i : i + size])
            i, k = i + size, k + 1
    return out + pipeline.finish()


def _same(segments: list[TcpSegment], options: Options, batches: list[int]) -> None:
    assert _events(segments, options, batches) == _events(segments, options, None)
    _same_rows(segments, options, batches)


def _tables(events: list, options: Options) -> dict:
    """The tables a sink that takes exchanges as rows builds from ``events``."""
    sink = TableSink(ROW_TABLES, options, record_anomalies=False)
    sink.consume_all(events)
    return {name: {c: cells(v) for c, v in sink.columns(name).items()} for name in ROW_TABLES}


def _every_table(events: list, options: Options) -> dict:
    """Every table a sink builds from ``events``."""
    sink = TableSink(None, options)
    sink.consume_all(events)
    return {name: {c: cells(v) for c, v in sink.columns(name).items()} for name in TABLES}


def _same_rows(segments: list[TcpSegment], options: Options, batches: list[int]) -> tuple[list, list]:
    """With the native pairing on (``Options.exchange_rows``, and ``exchange_topics``): the same tables as
    the reference's events make, the same pieces for the live figures (each request's topics, every error
    name), and every other event the same, in the same order; the same with the detail rows made by the
    pairing too (``Options.exchange_details``, as live writing every table asks), every table compared.
    Returns both runs' native events."""
    rows = _events(segments, replace(options, exchange_rows=True, exchange_topics=True), batches)
    reference = _events(segments, options, None)
    assert _tables(rows, options) == _tables(reference, options)
    assert ExchangeReader().read(rows) == ExchangeReader().read(reference)
    others = [ev for ev in reference if not isinstance(ev, Exchange)]
    assert [ev for ev in rows if not isinstance(ev, Exchange | ExchangeRows)] == others
    details = TableSink(None, options).lane_details()
    assert details is not None
    detailed = _events(segments, replace(options, exchange_topics=True, exchange_details=details), batches)
    assert _every_table(detailed, options) == _every_table(reference, options)
    assert ExchangeReader().read(detailed) == ExchangeReader().read(reference)
    assert [ev for ev in detailed if not isinstance(ev, Exchange | ExchangeRows)] == others
    return rows, detailed


def _variant(seg: TcpSegment, **changes) -> TcpSegment:
    fields = {name: getattr(seg, name) for name in TcpSegment.__slots__}
    fields.update(changes)
    return TcpSegment(**fields)


KINDS = ("retransmit", "conflict", "swap", "drop", "keepalive", "zero_window", "probe", "pad", "cut", "rst",
         "one_byte", "late_ack")


def damage(merged: list[TcpSegment], i: int, kind: str, amount: int) -> None:
    """Damage ``merged`` at ``i`` the way real captures are (``amount``: how far, where one is asked)."""
    seg = merged[i]
    if kind == "retransmit":
        merged.insert(min(len(merged), i + 1 + amount % 5), seg)
    elif kind == "conflict" and seg.payload:
        merged.insert(i + 1, _variant(seg, payload=bytes(b ^ 1 for b in seg.payload)))
    elif kind == "swap" and i + 1 < len(merged):
        merged[i], merged[i + 1] = merged[i + 1], seg
    elif kind == "drop":
        del merged[i]
    elif kind == "keepalive":
        merged.insert(i + 1, _variant(seg, seq=(seg.seq + len(seg.payload) - 1) & 0xFFFFFFFF, payload=b"",
                                      payload_len=0, flags=ACK))
    elif kind == "zero_window":
        merged.insert(i + 1, _variant(seg, payload=b"", payload_len=0, flags=ACK, window=0,
                                      seq=(seg.seq + len(seg.payload)) & 0xFFFFFFFF))
    elif kind == "probe":  # the window closes, and the peer probes it (Linux: one byte before the ACK)
        closed = _variant(seg, payload=b"", payload_len=0, flags=ACK, window=0,
                          seq=(seg.seq + len(seg.payload)) & 0xFFFFFFFF)
        probe = _variant(seg, src_ip=seg.dst_ip, src_port=seg.dst_port, dst_ip=seg.src_ip, dst_port=seg.src_port,
                         seq=(seg.ack - 1) & 0xFFFFFFFF, ack=closed.seq, payload=b"", payload_len=0, flags=ACK)
        merged[i + 1 : i + 1] = [closed, probe, probe]
    elif kind == "pad" and seg.payload:
        merged[i] = _variant(seg, payload=seg.payload + b"\0\0", payload_len=len(seg.payload))
    elif kind == "cut" and len(seg.payload) > 2:
        merged[i] = _variant(seg, payload=seg.payload[:-2])
    elif kind == "rst":
        merged.insert(i + 1, _variant(seg, payload=b"", payload_len=0, flags=RST | ACK))
    elif kind == "one_byte" and len(seg.payload) > 1:
        merged[i : i + 1] = [_variant(seg, payload=seg.payload[:1], payload_len=1),
                             _variant(seg, payload=seg.payload[1:], payload_len=len(seg.payload) - 1,
                                      seq=(seg.seq + 1) & 0xFFFFFFFF)]
    elif kind == "late_ack":  # an ACK past what was seen: the bytes between were lost, or not
        ahead = (1, 2, 3000, 1 << 31)[amount % 4]  # 1: the ACK of an unseen FIN; 2**31: absurd
        merged.insert(i + 1, _variant(seg, payload=b"", payload_len=0, flags=ACK, ack=(seg.ack + ahead) & 0xFFFFFFFF))


@st.composite
def captures(draw) -> list[TcpSegment]:
    """Interleaved Kafka connections, then damaged the ways real captures are."""
    conns = [_connection(i, draw(st.integers(1, 6)), draw(st.sampled_from([1448, 200, 65483])), draw(st.booleans()))
             for i in range(draw(st.integers(1, 4)))]
    merged = sorted((s for c in conns for s in c), key=lambda s: s.ts_ns)  # stable: each connection in order
    for _ in range(draw(st.integers(0, 6))):
        if merged:
            damage(merged, draw(st.integers(0, len(merged) - 1)), draw(st.sampled_from(KINDS)), draw(st.integers(0, 9)))
    return merged


@pytest.mark.parametrize("kind", KINDS)
def test_each_damage_at_each_place(kind: str) -> None:
    clean = _connection(0, 8, 200, close=True)
    for i in range(len(clean)):
        for amount in range(4 if kind in ("late_ack", "retransmit") else 1):
            segments = list(clean)
            damage(segments, i, kind, amount)
            _same(segments, Options(), [7])


def _frames(kind: str, cid: int) -> list[tuple[int, bytes]]:
    """The frames (direction, bytes) of one exchange of ``kind``: common ones, and the ones that take a
    connection out of the common case at the Kafka layer."""
    if kind == "metadata":
        return [(0, metadata_request(cid)), (1, metadata_response(cid))]
    if kind == "produce":
        return [(0, produce_request(cid, records=b"r" * (cid * 37 % 900))), (1, produce_response(cid))]
    if kind == "big_answer":  # over 64 KiB: the response's head is vetted by the pairer
        return [(0, metadata_request(cid)), (1, metadata_response(cid, topics=[f"t{i:05}" * 40 for i in range(300)]))]
    if kind == "undecodable":  # a request head Kafka could send, a body that does not decode
        return [(0, metadata_request(cid)[:12] + b"\xff" * 30)]
    if kind == "orphan":  # an answer to no request seen
        return [(1, metadata_response(cid + 1000))]
    if kind == "bad_size":  # a size field no frame has: the direction hunts
        return [(0, b"\x7f\xff\xff\xff" + b"\0" * 8)]
    if kind == "insane":  # a size that fits, a head no request has: the direction hunts
        return [(0, b"\0\0\0\x14\x7f\x7f" + b"\0" * 18)]
    if kind == "pipelined":  # three requests in flight, answered out of order (the second overtakes)
        a, b, c = cid, cid + 2000, cid + 4000
        return [(0, metadata_request(a)), (0, produce_request(b)), (0, metadata_request(c, version=12)),
                (1, produce_response(b)), (1, metadata_response(a)), (1, metadata_response(c, version=12))]
    if kind == "acks0":  # a request no answer comes to
        return [(0, produce_request(cid, acks=0))]
    if kind == "errors":  # error codes nested in the answer, a throttle time, another client id, a null one
        return [(0, encode_request(0, 9, {"acks": -1, "timeout_ms": 5, "topic_data": []}, correlation_id=cid,
                                   client_id="other \xff")),
                (1, produce_response(cid, error=6)),
                (0, metadata_request(cid + 6000)), (1, metadata_response(cid + 6000, error=3)),
                (0, encode_request(3, 1, {"topics": None}, correlation_id=cid + 7000, client_id="")),
                (1, metadata_response(cid + 7000, version=1)),
                (0, encode_request(3, 1, {"topics": None}, correlation_id=cid + 7001, client_id=None)),
                (1, metadata_response(cid + 7001, version=1)),
                # (the walk lists a struct's own error code before its members': here after them on the wire)
                (0, metadata_request(cid + 8000, version=13)),
                (1, encode_response(3, 13, {"topics": [{"name": "t", "error_code": 3, "partitions": []}],
                                            "error_code": 5}, correlation_id=cid + 8000)),
                # two partitions' errors in an answer the pairing takes with its detail rows (not Metadata)
                (0, encode_request(0, 9, {"acks": -1, "timeout_ms": 5, "topic_data": [{"name": "t", "partition_data": [
                    {"index": 0, "records": None}, {"index": 1, "records": None}]}]}, correlation_id=cid + 9000)),
                (1, encode_response(0, 9, {"responses": [{"name": "t", "partition_responses": [
                    {"index": 0, "error_code": 6}, {"index": 1, "error_code": 7}]}], "throttle_time_ms": 3},
                    correlation_id=cid + 9000))]
    if kind == "reused":  # a correlation id used again before its answer
        return [(0, metadata_request(cid)), (0, metadata_request(cid)), (1, metadata_response(cid))]
    if kind == "api_versions":  # the session learns the client software from it
        return [(0, encode_request(18, 3, {"client_software_name": "kcat", "client_software_version": "1.7"},
                                   correlation_id=cid)),
                (1, encode_response(18, 3, {"error_code": 0, "api_keys": []}, correlation_id=cid))]
    if kind == "trailing":  # bytes after a body: a warning
        return [(0, metadata_request(cid)), (1, _grown(metadata_response(cid), b"\0\0"))]
    if kind == "sasl_v0":  # SaslHandshake v0, then bare tokens
        return [(0, encode_request(17, 0, {"mechanism": "PLAIN"}, correlation_id=cid)),
                (1, encode_response(17, 0, {"error_code": 0, "mechanisms": ["PLAIN"]}, correlation_id=cid)),
                (0, len(b"\0u\0p").to_bytes(4, "big") + b"\0u\0p"), (1, b"\0\0\0\0")]
    raise AssertionError(kind)


def _grown(frame: bytes, extra: bytes) -> bytes:
    """A size-prefixed frame with ``extra`` bytes after its body."""
    return (len(frame) - 4 + len(extra)).to_bytes(4, "big") + frame[4:] + extra


EXCHANGES = ("metadata", "produce", "big_answer", "undecodable", "orphan", "bad_size", "insane", "sasl_v0",
             "pipelined", "acks0", "errors", "reused", "api_versions", "trailing")


@st.composite
def kafka_streams(draw) -> list[TcpSegment]:
    """One Kafka connection whose byte streams are cut anywhere: frames split over segments, several in one."""
    kinds = ["metadata", "metadata", *draw(st.lists(st.sampled_from(EXCHANGES), min_size=1, max_size=12))]
    frames = [f for cid, kind in enumerate(kinds) for f in _frames(kind, cid)]
    pending, messages = [b"", b""], []
    for n, (direction, frame) in enumerate(frames):
        pending[direction] += frame
        # mostly what is pending (whole frames: how lanes start), else anywhere in it
        cut = draw(st.one_of(st.just(len(pending[direction])), st.integers(0, len(pending[direction]))))
        messages.append((direction, pending[direction][:cut], n * MS))
        pending[direction] = pending[direction][cut:]
    messages += [(d, pending[d], (len(frames) + d) * MS) for d in (0, 1) if pending[d]]
    return tcp_conversation(messages, mss=draw(st.sampled_from([1448, 65483])))


@settings(max_examples=300, deadline=None)
@given(kafka_streams(), st.lists(st.integers(1, 40), min_size=1, max_size=4))
def test_framing_lanes_give_the_reference_events(segments: list[TcpSegment], batches: list[int]) -> None:
    _same(segments, Options(), batches)


options_strategy = st.builds(
    Options,
    idle_ns=st.sampled_from([600_000_000_000, 20 * MS, 3 * MS]),
    max_connections=st.sampled_from([16_384, 2, 1]),
    ooo_bytes=st.sampled_from([8 << 20, 300]),
    pending_requests=st.sampled_from([4096, 2, 1]),
)


@settings(max_examples=300, deadline=None)
@given(captures(), options_strategy, st.lists(st.integers(1, 40), min_size=1, max_size=4))
def test_lanes_give_the_reference_events(segments: list[TcpSegment], options: Options, batches: list[int]) -> None:
    _same(segments, options, batches)


def test_lanes_take_the_common_segments() -> None:
    """Not vacuous: on clean traffic nearly every segment after the handshake is taken natively."""
    segments = [s for i in range(3) for s in _connection(i, 20, 1448, close=True)]
    pipeline = KafkaPipeline(Options())
    fed = []
    reference = pipeline._feed_one
    pipeline._feed_one = lambda seg: fed.append(seg) or reference(seg)  # type: ignore[method-assign]
    events = pipeline.feed_many(segments) + pipeline.finish()
    assert len(fed) < len(segments) // 4
    assert events == _events(segments, Options(), None)


class _Conn:
    last_ts = 0


def _lone_segment(port: int, seq: int) -> TcpSegment:
    return TcpSegment(5 * MS, "10.0.0.1", port, "10.0.0.2", 9092, seq, 2000, ACK, 100, b"ab", 2)


def test_a_four_tuple_used_again_is_looked_up_again() -> None:
    """The lanes remember the 4-tuples they found recently (by their address objects, as the sources' cache
    gives them): once a lane is handed back and its place taken by another connection, its 4-tuple must not
    lead there (a segment whose numbers happened to fit would join the other connection's bytes)."""
    from kdissect.reassembly import _native

    lanes, out = _native.Lanes(), []
    a, back_a = ("10.0.0.1", 40000, "10.0.0.2", 9092), ("10.0.0.2", 9092, "10.0.0.1", 40000)
    lanes.adopt(1, _Conn(), a, back_a, None, (1000, 0, 0, None, None), (2000, 0, 0, None, None), None)
    assert lanes.run([_lone_segment(40000, 1000)], 0, out, None, lambda _: None) == (1, None, True)
    lanes.release_all()
    b, back_b = ("10.0.0.1", 40001, "10.0.0.2", 9092), ("10.0.0.2", 9092, "10.0.0.1", 40001)
    lanes.adopt(2, _Conn(), b, back_b, None, (1002, 0, 0, None, None), (2000, 0, 0, None, None), None)
    assert lanes.run([_lone_segment(40000, 1002)], 0, out, None, lambda _: None) == (0, None, True)  # no lane
    assert lanes.run([_lone_segment(40001, 1002)], 0, out, None, lambda _: None) == (1, None, True)


@pytest.mark.parametrize("batch", [1, 5, 1000])
def test_a_full_table_ends_the_least_recently_active_connection(batch: int) -> None:
    """The lanes keep the reassembler's least-recently-active order as the reference does: A and B open and
    settle, then go on in their lanes, B first and B last, C opens, and D opens in a table of three, which
    ends A (its last segment came before B's last), though B was the first of the two to go on."""
    a, b, c, d = (_connection(i, 6, 1448, close=False) for i in range(4))
    half = len(a) // 2
    rest_a, rest_b = a[half:], b[half:]
    both = [seg for pair in zip(rest_b[:-1], rest_a[:-1], strict=True) for seg in pair] + rest_a[-1:] + rest_b[-1:]
    order = a[:half] + b[:half] + both + c[:half] + d
    merged = [replace(seg, ts_ns=i * MS) for i, seg in enumerate(order)]
    options = replace(Options(), max_connections=3)
    _same(merged, options, [batch])
    ended = [ev for ev in _events(merged, options, [batch]) if type(ev).__name__ == "ConnectionSummary"]
    assert ended[0].endpoints[0][1] == 40000  # A


def test_a_broken_hand_back_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison sees a lane whose state comes back wrong (what a broken C field would do)."""
    segments = _connection(0, 6, 200, close=True)
    hand_back = NativeLanes._hand_back

    def off_by_one(self: NativeLanes, conn_id: int, states: tuple, framing: tuple | None) -> None:
        state = list(states[0])
        state[4] += 1  # one segment too many counted in direction 0
        hand_back(self, conn_id, (tuple(state), states[1]), framing)

    monkeypatch.setattr(NativeLanes, "_hand_back", off_by_one)
    assert _events(segments, Options(), [64]) != _events(segments, Options(), None)


@settings(max_examples=200, deadline=None)
@given(kafka_streams(), st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(KINDS), st.integers(0, 9)),
                                 max_size=5), options_strategy, st.lists(st.integers(1, 40), min_size=1, max_size=4))
def test_damaged_framing_lanes_give_the_reference_events(segments: list[TcpSegment],
                                                         damages: list[tuple[int, str, int]], options: Options,
                                                         batches: list[int]) -> None:
    """Both at once: TCP damage in Kafka streams cut anywhere, while lanes frame them."""
    for where, kind, amount in damages:
        if segments:
            damage(segments, where % len(segments), kind, amount)
    _same(segments, options, batches)


def test_lanes_pair_the_common_exchanges_into_rows() -> None:
    """Not vacuous: on clean traffic (one exchange at a time, and pipelined answers out of order) nearly
    every exchange comes as a row of the native pairing, and the tables are the reference's."""
    clean = [s for i in range(3) for s in _connection(i, 20, 1448, close=True)]
    frames = [f for cid in range(0, 60, 3) for f in _frames("pipelined", cid)]
    pipelined = tcp_conversation([(d, f, n * MS) for n, (d, f) in enumerate(frames)], client=("10.0.0.9", 40999))
    for segments, exchanges, produces in ((clean, 60, 30), (pipelined, 60, 20)):
        native, detailed = _same_rows(segments, Options(), [64])
        rows = sum(len(ev) for ev in native if isinstance(ev, ExchangeRows))
        assert rows >= exchanges - 3
        assert sum(isinstance(ev, Exchange) for ev in native) + rows == exchanges
        # with the detail rows too: the Produce exchanges come as rows, with their partitions rows and
        # records (Metadata, whose rows read its whole answer, goes to the session)
        pieces = [ev for ev in detailed if isinstance(ev, ExchangeRows)]
        assert all(piece.details is not None and len(piece.topics) == len(piece.codes) == len(piece)
                   for piece in pieces)
        produced = sum(piece.listed("api_key").count(0) for piece in pieces)
        assert produced >= produces - 3
        assert sum(typed_rows(piece.details.partitions[0]) for piece in pieces) == produced
        assert sum(bool(left[7]) for piece in pieces for left in piece.details.left) >= produced - 3


def test_a_broken_pairing_hand_back_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison sees a pairing whose counts come back wrong (what a broken C field would do)."""
    frames = [f for cid in range(0, 12, 3) for f in _frames("pipelined", cid)] + _frames("orphan", 5)
    segments = tcp_conversation([(d, f, n * MS) for n, (d, f) in enumerate(frames)], close=True)
    resume = KafkaConnection.resume_pairing

    def one_byte_more(self: KafkaConnection, counts: tuple[int, ...], waiting: list) -> list:
        return resume(self, (counts[0], counts[1] + 1, *counts[2:]), waiting)

    monkeypatch.setattr(KafkaConnection, "resume_pairing", one_byte_more)
    with pytest.raises(AssertionError):
        _same_rows(segments, Options(), [64])


@pytest.mark.parametrize("bound", [4096, 100])
def test_more_requests_waiting_than_the_bound(bound: int) -> None:
    """150 requests in flight, past the session's bound or not: the tables are the reference's (a lost request
    would make orphans)."""
    requests = [(0, metadata_request(cid), cid * MS) for cid in range(150)]
    answers = [(1, metadata_response(cid), (150 + cid) * MS) for cid in range(150)]
    _same_rows(tcp_conversation(requests + answers, close=True), Options(pending_requests=bound), [64])


def test_live_pieces_name_the_topics_a_fetch_gives_by_id() -> None:
    """A Metadata answer names a topic id; later Fetches ask by that id, by one never named and by the nil
    one: live's pieces count the first by its name, the second by its id and not the nil one, on both
    paths (not vacuously: as rows)."""
    named, unnamed, nil = uuid.UUID(int=7), uuid.UUID(int=9), uuid.UUID(int=0)
    topic = {"error_code": 0, "name": "orders", "topic_id": named, "partitions": []}
    fetch = {"max_wait_ms": 5, "min_bytes": 1, "session_epoch": -1,
             "topics": [{"topic_id": t, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 9}]}
                        for t in (named, unnamed, nil)]}
    answer = {"responses": [{"topic_id": named, "partitions": [{"partition_index": 0, "error_code": 6}]}]}
    frames = [f for cid in range(3) for f in _frames("produce", cid)]
    frames += [(0, metadata_request(10, version=12)),
               (1, encode_response(3, 12, {"topics": [topic]}, correlation_id=10))]
    for cid in (11, 12):
        frames += [(0, encode_request(1, 13, fetch, correlation_id=cid)),
                   (1, encode_response(1, 13, answer, correlation_id=cid))]
    native, _ = _same_rows(tcp_conversation([(d, f, n * MS) for n, (d, f) in enumerate(frames)], close=True),
                           Options(), [64])
    rows = [ev for ev in native if isinstance(ev, ExchangeRows)]
    assert sum(len(piece) for piece in rows) >= 3 and any(named.bytes in piece.topics[-1] for piece in rows)
    piece = ExchangeReader().read(native)
    assert piece.topics[str(unnamed)] == 2 and "orders" in piece.topics  # (the named id: by its name)
    assert str(named) not in piece.topics and str(nil) not in piece.topics
    assert piece.errors[-1][1] == ("NOT_LEADER_OR_FOLLOWER",)


def _calls(monkeypatch: pytest.MonkeyPatch, method: str) -> list[int]:
    """A list that grows by one at each call of ``KafkaConnection.<method>``, which goes on as before."""
    calls: list[int] = []
    original = getattr(KafkaConnection, method)

    def counted(self: KafkaConnection, *args: object) -> object:
        calls.append(1)
        return original(self, *args)

    monkeypatch.setattr(KafkaConnection, method, counted)
    return calls


def _lossy(exchanges: int, every: int) -> list[TcpSegment]:
    """One long connection of Produce and Metadata exchanges (frames over several segments), with every
    ``every``-th segment after the handshake lost: requests and answers cut, some whole answers lost."""
    segments = _connection(0, exchanges, 200, close=True)
    return [seg for i, seg in enumerate(segments) if i < 3 or i % every]


def test_a_lossy_connection_goes_back_to_the_lanes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A capture that loses a segment now and then (every 61st: about one exchange in 15 damaged): after
    each loss the connection is framed and paired natively again once the Python splitter found the next
    frame and the lost answers' requests are settled, instead of staying with the reference for good (a
    lane adopted while its splitter hunted only delivered bytes; more than 64 requests whose answer was
    lost kept the pairing off). Fails if either is undone: the tables are the reference's either way."""
    segments = _lossy(600, 61)
    pipeline = KafkaPipeline(replace(Options(), exchange_rows=True))
    delivered = _calls(monkeypatch, "data")
    events = pipeline.feed_many(segments) + pipeline.finish()
    monkeypatch.undo()
    rows = sum(len(ev) for ev in events if isinstance(ev, ExchangeRows))
    answered = rows + sum(isinstance(ev, Exchange) and ev.response is not None for ev in events)
    assert rows >= answered * 3 // 4
    assert len(delivered) < len(segments) // 5
    _same(segments, Options(), [64])


def test_a_framing_the_lane_cannot_take_leaves_it_unframed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lane asking to frame its connection again (after a loss) and given a framing it cannot start (here the
    second direction's sanity rule unknown) raises once and stays as it was: delivering bytes, asking again,
    framed by the next answer. Fails if the lane is left half framed (framing with no session's frames to give
    them to: a crash at its next frame) or stops asking (no lane frames after the failure)."""
    segments = _lossy(300, 61)
    lane_framing, offer = KafkaConnection.lane_framing, NativeLanes.offer
    spoiled: list[tuple] = []
    framed_after: list[tuple] = []
    adopting: list[bool] = []

    def adopt(self: NativeLanes, *args: Any) -> None:  # (lane_framing asked here is the adoption's, not a lane's)
        adopting.append(True)
        try:
            offer(self, *args)
        finally:
            adopting.pop()

    def spoil_once(self: KafkaConnection, offsets: tuple[int, int]) -> tuple | None:
        framing = lane_framing(self, offsets)
        if framing is not None and not adopting:
            if not spoiled:
                spoiled.append(framing)
                at, sane, _ = framing[7]
                return (*framing[:7], (at, sane, ("unknown", None)), *framing[8:])
            framed_after.append(framing)
        return framing

    monkeypatch.setattr(KafkaConnection, "lane_framing", spoil_once)
    monkeypatch.setattr(NativeLanes, "offer", adopt)
    pipeline = KafkaPipeline(replace(Options(), exchange_rows=True))
    failures = 0
    for segment in segments:
        try:
            pipeline.feed_many([segment])
        except ValueError:
            failures += 1
    pipeline.finish()
    assert spoiled and failures == 1 and framed_after


def test_a_connection_losing_many_packets_stays_with_the_session_longer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every 7th segment lost: a pairing handed back after a few frames with a packet lost meanwhile is
    started again only after the session took twice as many frames as the last wait (from 8), so there are
    far fewer hand-backs than losses (each one a replay and a new piece of rows); the tables are the
    reference's."""
    segments = _lossy(400, 7)
    resumed = _calls(monkeypatch, "resume_pairing")
    events = _events(segments, replace(Options(), exchange_rows=True), [64])
    gaps = sum(getattr(ev, "kind", None) == "gap" for ev in events)
    assert gaps > 100 and len(resumed) < gaps // 4
    _same(segments, Options(), [64])


def test_answers_after_a_lost_one_are_not_out_of_order() -> None:
    """Each lost answer leaves its request overtaken: the answer that overtook it is flagged, the answers
    after that, in order, are not (they were, every one, on both paths), and at most MAX_OVERTAKEN such
    requests wait: the native pairing holds the same bound as the Pairer (an answer past it is left to the
    session, which settles the oldest as unanswered)."""
    from kdissect.kafka.pairing import MAX_OVERTAKEN
    from kdissect.reassembly import lanes

    assert lanes._native is not None and lanes._native.MAX_OVERTAKEN == MAX_OVERTAKEN
    messages = []
    for cid in range(6 * MAX_OVERTAKEN):
        messages.append((0, metadata_request(cid), 2 * cid * MS))
        if cid % 3:  # every third answer lost
            messages.append((1, metadata_response(cid), (2 * cid + 1) * MS))
    reused = 6 * MAX_OVERTAKEN - 3  # the id of a request whose answer was lost, sent again and answered
    messages += [(0, metadata_request(reused), 20 * MAX_OVERTAKEN * MS),
                 (1, metadata_response(reused), (20 * MAX_OVERTAKEN + 1) * MS)]
    segments = tcp_conversation(messages, close=True)
    native, _ = _same_rows(segments, Options(), [64])
    reference = _events(segments, Options(), None)
    exchanges = [ev for ev in reference if isinstance(ev, Exchange)]
    assert [ex.request.correlation_id for ex in exchanges if ex.out_of_order] == list(range(1, 6 * MAX_OVERTAKEN, 3))
    assert sum(ex.status == "unanswered" for ex in exchanges) == 2 * MAX_OVERTAKEN
    assert [ex.status for ex in exchanges if ex.request.correlation_id == reused] == ["unanswered", "ok"]
    assert sum(len(ev) for ev in native if isinstance(ev, ExchangeRows)) >= MAX_OVERTAKEN


def test_an_orphan_answer_leaves_the_pairing_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers whose request was lost go to the session as frames (held for the orphans' inference) while the
    lane keeps pairing the others: no hand-back per orphan (each replayed every waiting request into the
    session and took them back), and the tables are the reference's."""
    messages = []
    for cid in range(60):
        if cid % 5:  # every fifth request lost
            messages.append((0, produce_request(cid, records=b"r" * 40), 2 * cid * MS))
        messages.append((1, produce_response(cid), (2 * cid + 1) * MS))
    segments = tcp_conversation(messages, close=True)
    resumed = _calls(monkeypatch, "resume_pairing")
    native, _ = _same_rows(segments, Options(), [64])
    assert sum(len(ev) for ev in native if isinstance(ev, ExchangeRows)) >= 45
    assert len(resumed) <= 4  # (the end of the connection, each of the three runs)


def _pipelined(requests: int, depth: int, lost: set[int], swapped: set[int]) -> list[TcpSegment]:
    """One connection pipelining ``requests`` Produce requests ``depth`` deep (an answer comes once ``depth``
    more requests were sent, as a busy producer's behind a slow broker), answered in order but for those
    ``lost`` (never answered) and each ``swapped`` one (answered after the next one)."""
    order = [cid for cid in range(requests) if cid not in lost]
    for cid in swapped:
        i = order.index(cid)
        order[i], order[i + 1] = order[i + 1], cid
    messages = [(0, produce_request(cid, records=b"r" * 40), 2 * cid * MS) for cid in range(requests)]
    messages += [(1, produce_response(cid), (2 * (j + depth) + 1) * MS) for j, cid in enumerate(order)]
    return tcp_conversation(sorted(messages, key=lambda m: m[2]), close=True)


def test_a_deep_pipeline_stays_native(monkeypatch: pytest.MonkeyPatch) -> None:
    """A thousand requests 300 deep, a few answers out of order and a few lost: the lane's pairing holds them
    all and pairs every answer itself, never handed back before the connection's end (it held 96 at most,
    and a deeper connection stayed with the session), and the tables are the reference's."""
    segments = _pipelined(1000, 300, lost={100, 400, 401, 700}, swapped={200, 550, 810})
    resumed = _calls(monkeypatch, "resume_pairing")
    native, detailed = _same_rows(segments, Options(), [64])
    for events in (native, detailed):
        assert sum(len(ev) for ev in events if isinstance(ev, ExchangeRows)) >= 990  # (of 996 answered)
    # (the end of the connection in each of the two runs with rows, and the first answer of a version whose
    # programs the process had not compiled yet: the session decodes it first)
    assert len(resumed) <= 3


@pytest.mark.parametrize("bound", [1, 50, 300])
def test_a_pipeline_past_the_bound_is_capped_as_the_reference_caps_it(bound: int) -> None:
    """More requests in flight than the session's bound (Options.pending_requests, which the lane's pairing
    holds at most): the oldest are settled as unanswered with the same cap anomaly, whoever holds them."""
    _same(_pipelined(600, 400, lost={30, 450}, swapped={5, 500}), Options(pending_requests=bound), [64])


def test_a_hostile_pipeline_holds_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests never answered, far more than the bound, with an answer now and then: what the connection
    holds stays within the bound (the session caps at it, the lane's pairing holds no more), and being handed
    back at the bound (a step per request waiting, and as many to start again) does not happen at every answer:
    the session takes as many frames itself first."""
    bound, sent = 256, 6000
    messages = [(0, produce_request(cid, records=b"r" * 40), 2 * cid * MS) for cid in range(sent)]
    messages += [(1, produce_response(cid), (2 * cid + 1) * MS) for cid in range(bound + 100, sent, 50)]
    segments = tcp_conversation(sorted(messages, key=lambda m: m[2]), close=False)
    pipeline = KafkaPipeline(replace(Options(pending_requests=bound), exchange_rows=True))
    handed: list[int] = []  # requests waiting at each hand-back
    resume = KafkaConnection.resume_pairing

    def counted(self: KafkaConnection, counts: tuple[int, ...], waiting: list) -> list:
        handed.append(len(waiting))
        return resume(self, counts, waiting)

    monkeypatch.setattr(KafkaConnection, "resume_pairing", counted)
    tracemalloc.start()
    try:
        pipeline.feed_many(segments[: len(segments) // 2])
        half = tracemalloc.get_traced_memory()[0]
        pipeline.feed_many(segments[len(segments) // 2 :])
        grown = tracemalloc.get_traced_memory()[0] - half
    finally:
        tracemalloc.stop()
    assert grown < bound * 1000, f"{grown} bytes more after {sent // 2} more requests"
    assert sum(handed) < 2 * len(messages)  # (at the bound, each answer handed back all of them: 5 a frame)


def test_a_request_the_lane_cannot_take_is_not_looked_for_at_every_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request the lane cannot take over (bytes after its body: warned about) waits behind a thousand
    unanswered, more coming: the session tells the lane no, and looks through the requests waiting again only
    after as many frames (it walked them at every frame: quadratic in the depth), the tables the reference's."""
    warned = produce_request(1000, records=b"r" * 40) + b"\x00\x00"
    warned = (len(warned) - 4).to_bytes(4, "big") + warned[4:]
    messages = [(0, produce_request(cid, records=b"r" * 40) if cid != 1000 else warned, cid * MS)
                for cid in range(2000)]  # fmt: skip
    messages += [(1, produce_response(cid), (2000 + cid) * MS) for cid in range(2000)]
    segments = tcp_conversation(messages, close=True)
    steps = []
    in_order = Pairer.in_order

    class Counted:
        """The requests waiting in order, a step counted for each one looked at."""

        def __init__(self, pairer: Pairer) -> None:
            self.view = in_order(pairer)

        def __len__(self) -> int:
            return len(self.view)

        def __iter__(self) -> Iterator[KafkaMessage]:
            for request in self.view:
                steps.append(1)
                yield request

    def counted(self: Pairer) -> Counted:
        return Counted(self)

    monkeypatch.setattr(Pairer, "in_order", counted)
    _same(segments, Options(), [64])
    assert len(steps) < 10 * len(messages)  # (4,002; at every frame 3,005,000)


def _big_frames(mss: int) -> list[TcpSegment]:
    """Frames of every length against ``mss``: bigger than many segments, pipelined so that a run ends one
    frame and starts the next (size fields cut between runs at odd segment sizes), and small ones between."""
    sizes = (70_000, 3, 250_001, 900, 131_072, 65_536)
    requests = [(0, produce_request(cid, records=b"r" * size), cid * MS) for cid, size in enumerate(sizes)]
    answers = [(1, produce_response(cid), (len(sizes) + cid) * MS) for cid in range(len(sizes))]
    return tcp_conversation(requests + answers, mss=mss, close=True)


@pytest.mark.parametrize("mss", [997, 1448, 65_483])
def test_frames_spanning_runs_give_the_reference_events(mss: int) -> None:
    """A frame assembled in a lane's tail from many runs, a run that ends it and goes on with the next ones, and
    a lane handed back in the middle of one (a lost segment: the splitter takes the partial frame over) give the
    reference's events and tables."""
    clean = _big_frames(mss)
    _same(clean, Options(), [1, 5, 64])
    for where in (len(clean) // 5, len(clean) // 3, len(clean) // 2):
        segments = list(clean)
        damage(segments, where, "drop", 0)
        _same(segments, Options(), [3, 64])


def test_an_idle_lane_keeps_no_big_frame_room() -> None:
    """Once a big frame has been framed, its direction's tail gives its room back: a capture of many connections
    that each carried one big frame holds no frame's worth of memory per idle connection."""
    messages = [(0, metadata_request(0), 0), (1, metadata_response(0), MS),
                (0, produce_request(1, records=b"r" * 3_000_000), 2 * MS), (1, produce_response(1), 3 * MS)]
    segments = tcp_conversation(messages, mss=65_483, close=False)
    pipeline = KafkaPipeline(Options())
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(0, len(segments), 16):
            pipeline.feed_many(segments[i : i + 16])
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert pipeline.lanes is not None and len(pipeline.lanes) == 1  # (the connection is still a lane's)
    assert held < 1 << 20, f"an idle connection holds {held} bytes"
