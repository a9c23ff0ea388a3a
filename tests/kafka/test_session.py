"""The Kafka view of one connection: roles, pairing, statuses, SASL, TLS, non-Kafka bytes."""

from __future__ import annotations

import struct

from kdissect.events import Anomaly, ConnectionSummary, Exchange
from kdissect.kafka.session import KafkaConnection
from kdissect.options import Options
from kdissect.testing.encoder import encode_request, encode_response
from kdissect.testing.kafka_frames import metadata_request, metadata_response, produce_request, produce_response

CLIENT, BROKER = ("10.0.0.1", 50000), ("10.0.0.2", 9092)


class Wire:
    """Feeds a connection the way the reassembler would: per-direction offsets and times."""

    def __init__(self, conn: KafkaConnection) -> None:
        self.conn = conn
        self.offsets = [0, 0]
        self.events: list = []

    def send(self, direction: int, data: bytes, ts: int) -> None:
        self.events += self.conn.data(direction, self.offsets[direction], data, ts)
        self.offsets[direction] += len(data)

    def lose(self, direction: int, n: int, ts: int) -> None:
        self.events += self.conn.gap(direction, self.offsets[direction], n, ts, "lost")
        self.offsets[direction] += n

    def close(self, ts: int) -> list:
        self.events += self.conn.end(ts, "fin")
        return self.events

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]


def _conn(client=CLIENT, broker=BROKER, syn=True, **opts) -> Wire:
    return Wire(KafkaConnection(7, client, broker, 0, syn, Options(**opts)))


def test_requests_pair_with_responses_and_latency_timestamps_are_kept() -> None:
    w = _conn()
    req = metadata_request(1)
    w.send(0, req[:10], 1_000)
    w.send(0, req[10:], 2_000)
    w.send(1, metadata_response(1), 5_000)
    w.close(9_000)
    [ex] = w.of(Exchange)
    assert ex.status == "ok" and ex.client == CLIENT and ex.broker == BROKER
    assert ex.request.ts_first == 1_000 and ex.request.ts_last == 2_000
    assert ex.response.ts_first == 5_000
    assert ex.response.body["brokers"][0]["host"] == "broker-1"
    [summary] = w.of(ConnectionSummary)
    assert summary.is_kafka and summary.client_ids == ["test-client"] and summary.frames_to_broker == 1


def test_acks_zero_unanswered_orphan_and_out_of_order() -> None:
    w = _conn()
    w.send(0, produce_request(1, acks=0), 1)
    w.send(0, produce_request(2) + produce_request(3) + metadata_request(4), 2)
    w.send(1, produce_response(3), 3)  # answers 3 before 2: out of order
    w.send(1, produce_response(2), 4)
    w.send(1, produce_response(99), 5)  # nobody asked
    w.close(6)
    by_cid = {(e.request or e.response).correlation_id: e for e in w.of(Exchange)}
    assert by_cid[1].status == "no_response_expected"
    assert by_cid[3].status == "ok" and by_cid[3].out_of_order
    assert by_cid[2].status == "ok" and not by_cid[2].out_of_order
    assert by_cid[4].status == "unanswered"
    assert by_cid[99].status == "orphan_response" and by_cid[99].response.raw


def test_an_answered_acks_zero_produce_pairs_with_its_answer_and_is_flagged() -> None:
    """Some brokers (tansu) answer acks=0: the answer is paired, not left as an orphan."""
    w = _conn()
    w.send(0, produce_request(1, acks=0) + produce_request(2, acks=0) + produce_request(3, acks=0), 1)
    w.send(1, produce_response(2), 2)  # answers 2: 1 will never be answered (answers come in order)
    w.close(3)
    by_cid = {e.request.correlation_id: e for e in w.of(Exchange)}
    assert [e.request.correlation_id for e in w.of(Exchange)] == [1, 2, 3]
    assert by_cid[1].status == "no_response_expected" and by_cid[1].response is None
    assert by_cid[3].status == "no_response_expected"
    answered = by_cid[2]
    assert answered.status == "ok" and not answered.out_of_order
    assert answered.response.body["responses"][0]["name"] == "orders"
    assert [x["code"] for x in answered.response.warnings] == ["acks0_answered"]


def test_roles_found_on_an_unknown_port_even_when_the_broker_speaks_first_in_the_capture() -> None:
    broker = ("10.0.0.2", 31337)
    w = _conn(broker=broker, syn=False)  # mid-stream: no SYN, so no hint who is who
    w.send(1, metadata_response(1), 1)  # a response whose request we never saw
    w.send(0, metadata_request(2), 2)
    w.send(1, metadata_response(2), 3)
    w.close(4)
    statuses = sorted(e.status for e in w.of(Exchange))
    assert "ok" in statuses
    [ok] = [e for e in w.of(Exchange) if e.status == "ok"]
    assert ok.client == CLIENT and ok.broker == broker


def test_bytes_seen_before_the_roles_are_known_are_kept_for_the_right_validator() -> None:
    """Mid-stream on an unknown port: the answer that arrives before any request is proven is
    still found once the roles are learned, and the tail skipped before the first proven request
    is reported."""
    w = _conn(broker=("10.0.0.2", 31337), syn=False)
    w.send(0, metadata_request(1)[-20:], 1)  # the end of a request sent before the capture
    w.send(1, metadata_response(1), 2)  # its answer: an orphan, seen before any request is proven
    w.send(0, metadata_request(2), 3)
    w.send(1, metadata_response(2), 4)
    w.close(5)
    assert [(e.status, (e.request or e.response).correlation_id) for e in w.of(Exchange)] == [
        ("ok", 2), ("orphan_response", 1)]  # orphans are inferred at the end, from every request seen
    skipped = [(a.kind, a.direction, a.offset, a.length) for a in w.of(Anomaly) if a.kind == "resync"]
    assert skipped == [("resync", "request", 0, 20)]


def test_loss_costs_only_the_frames_it_touches() -> None:
    w = _conn()
    for cid in range(1, 6):
        req = metadata_request(cid)
        if cid == 3:
            w.send(0, req[:7], cid)
            w.lose(0, len(req) - 7, cid)
        else:
            w.send(0, req, cid)
        w.send(1, metadata_response(cid), cid)
    w.close(10)
    statuses = {(e.request or e.response).correlation_id: e.status for e in w.of(Exchange)}
    assert statuses == {1: "ok", 2: "ok", 3: "orphan_response", 4: "ok", 5: "ok"}
    assert any(a.kind == "gap" for a in w.of(Anomaly))


def test_sasl_handshake_v0_raw_tokens_do_not_desync() -> None:
    w = _conn()
    w.send(0, encode_request(17, 0, {"mechanism": "PLAIN"}, correlation_id=1), 1)
    w.send(1, encode_response(17, 0, {"error_code": 0, "mechanisms": ["PLAIN"]}, correlation_id=1), 2)
    token = b"\x00user\x00secret-password"
    w.send(0, struct.pack(">i", len(token)) + token, 3)
    w.send(1, struct.pack(">i", 0), 4)  # empty server token
    w.send(0, metadata_request(2), 5)
    w.send(1, metadata_response(2), 6)
    w.close(7)
    assert [e.status for e in w.of(Exchange)] == ["ok", "ok"]
    [summary] = w.of(ConnectionSummary)
    assert summary.sasl.mechanism == "PLAIN" and summary.sasl.tokens >= 1
    # the Metadata answered after the raw token proves the login worked
    assert (summary.sasl.result, summary.sasl.principal) == ("ok", "user")
    assert not [a for a in w.of(Anomaly) if a.kind == "decode_error"]


def test_non_kafka_bytes_on_an_unknown_port_are_given_up_quickly() -> None:
    w = _conn(broker=("10.0.0.2", 8080), probe_limit=4096)
    for i in range(20):
        w.send(0, b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n" * 10, i)
        w.send(1, b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" * 10, i)
    w.close(30)
    [summary] = w.of(ConnectionSummary)
    assert not summary.is_kafka
    assert not w.of(Anomaly)  # not Kafka: a connections row (is_kafka false), no Kafka anomaly
    assert summary.bytes_to_broker == 0 and all(s.stopped for s in w.conn.splitters)


def test_undecodable_response_keeps_its_bytes_and_the_pairing() -> None:
    w = _conn()
    w.send(0, metadata_request(1), 1)
    w.send(1, struct.pack(">ii", 8, 1) + b"\xff\xff\xff\xff", 2)  # corr id 1, then nonsense
    w.close(3)
    [ex] = w.of(Exchange)
    assert ex.status == "undecodable" and ex.request is not None and ex.response.raw
    assert any(a.kind == "decode_error" and a.direction == "response" for a in w.of(Anomaly))
