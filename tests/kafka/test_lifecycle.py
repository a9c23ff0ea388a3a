"""A connection's lifecycle, state by state, on the conversations that drive it (the rules live
in kdissect/kafka/lifecycle.py)."""

from __future__ import annotations

import struct

import pytest

from kdissect.kafka.lifecycle import FINAL, RULES, Lifecycle, State
from kdissect.kafka.session import KafkaConnection
from kdissect.options import Options
from kdissect.testing.encoder import encode_request, encode_response
from kdissect.testing.kafka_frames import metadata_request, metadata_response
from tests.kafka.test_session import BROKER, CLIENT, Wire


def _wire(broker=BROKER, **opts) -> Wire:
    return Wire(KafkaConnection(7, CLIENT, broker, 0, True, Options(**opts)))


def test_a_broker_port_starts_in_kafka_and_the_end_closes() -> None:
    w = _wire()
    assert w.conn.life.state is State.KAFKA
    w.send(0, metadata_request(1), 1)
    w.close(2)
    assert w.conn.life.state is State.CLOSED


def test_an_unknown_port_probes_until_a_request_decodes() -> None:
    w = _wire(broker=("10.0.0.2", 31337))
    assert w.conn.life.state is State.PROBING
    w.send(0, metadata_request(1)[:20], 1)
    assert w.conn.life.state is State.PROBING
    w.send(0, metadata_request(1)[20:], 2)
    assert w.conn.life.state is State.KAFKA


def test_sasl_v0_tokens_then_kafka_again() -> None:
    w = _wire()
    w.send(0, encode_request(17, 0, {"mechanism": "PLAIN"}, correlation_id=1), 1)
    w.send(1, encode_response(17, 0, {"error_code": 0, "mechanisms": ["PLAIN"]}, correlation_id=1), 2)
    assert w.conn.life.state is State.SASL_RAW
    w.send(0, struct.pack(">i", 5) + b"\x00u\x00pw", 3)
    assert w.conn.life.state is State.SASL_RAW
    w.send(0, metadata_request(2), 4)
    assert w.conn.life.state is State.KAFKA
    w.send(1, metadata_response(2), 5)
    assert w.conn.life.state is State.KAFKA


def test_no_request_within_the_probe_limit_is_not_kafka() -> None:
    w = _wire(broker=("10.0.0.2", 8080), probe_limit=1024)
    for i in range(10):
        w.send(0, b"GET / HTTP/1.1\r\n\r\n" * 20, i)
    assert w.conn.life.state is State.NOT_KAFKA
    w.close(20)
    assert w.conn.life.state is State.CLOSED


def test_the_rules_allow_only_listed_moves() -> None:
    assert set(RULES) == set(State)
    assert all(RULES[s] == {State.CLOSED} or not RULES[s] for s in FINAL)
    life = Lifecycle(State.NOT_KAFKA)
    with pytest.raises(AssertionError, match="not-kafka -> kafka"):
        life.move(State.KAFKA)
    life.move(State.CLOSED)
    assert life.done
