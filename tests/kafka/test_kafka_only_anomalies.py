"""Anomalies are Kafka's only once a connection is: traffic that never proves to be Kafka is a
connections row (``is_kafka`` false), not a pile of framing anomalies; a direction picked up
mid-stream is one ``midstream`` row with its direction and what was skipped; orphan responses
are decoded when exactly one request explains them."""

from __future__ import annotations

import struct
from collections import Counter

from kdissect.engines import local
from kdissect.events import Anomaly, ConnectionSummary, Exchange
from kdissect.options import Options
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.encoder import encode_response
from kdissect.testing.kafka_frames import metadata_request, metadata_response, produce_request, produce_response
from kdissect.testing.synthetic import T0

GET = b"GET /index.html HTTP/1.1\r\nHost: example\r\n\r\n"
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 300\r\n\r\n" + b"<p>hello</p>" * 25


def _events(
    messages, *, port: int = 9092, client_port: int = 40000, handshake: bool = True, options: Options | None = None
) -> list:
    segs = tcp_conversation(messages, server=("10.0.0.2", port), client=("10.0.0.1", client_port), handshake=handshake)
    return list(local.events_from(segs, options))


def test_fifty_http_connections_on_port_80_give_no_kafka_anomaly() -> None:
    events = []
    for i in range(50):
        events += _events([(0, GET, T0 + i), (1, OK, T0 + i + 1)], port=80, client_port=40000 + i)
    assert [e for e in events if isinstance(e, Anomaly)] == []
    conns = [e for e in events if isinstance(e, ConnectionSummary)]
    assert len(conns) == 50 and not any(c.is_kafka for c in conns)


def test_one_packet_flows_that_are_not_kafka_give_no_anomaly() -> None:
    events = []
    for i in range(200):
        events += _events([(i % 2, bytes([i]) * (1 + i), T0 + i)], port=8000 + i, handshake=False, client_port=50000)
    assert [e for e in events if isinstance(e, Anomaly)] == []


def test_tls_on_a_port_nobody_called_kafka_is_no_anomaly() -> None:
    hello = b"\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03" + bytes(190)
    events = _events([(0, hello, T0), (1, b"\x16\x03\x03\x00\x40" + bytes(64), T0 + 1)], port=443)
    assert [e for e in events if isinstance(e, Anomaly)] == []
    [conn] = [e for e in events if isinstance(e, ConnectionSummary)]
    assert conn.encrypted and not conn.is_kafka


def test_garbage_before_kafka_on_an_unknown_port_is_reported_once_kafka_is_proven() -> None:
    """What framing skipped while probing is reported, with its direction, once the bytes prove Kafka."""
    events = _events(
        [(0, b"\x01\x02\x03", T0), (0, metadata_request(1), T0 + 1), (1, metadata_response(1), T0 + 2)], port=31337
    )
    assert [(a.kind, a.direction, a.length) for a in events if isinstance(a, Anomaly)] == [("resync", "request", 3)]
    assert [e.status for e in events if isinstance(e, Exchange)] == ["ok"]


def test_midstream_rows_carry_direction_and_what_was_skipped_and_are_not_gaps() -> None:
    """Picked up inside a Produce request: 'midstream' for each direction, with the bytes skipped before
    the first frame boundary as its length; no gap is counted."""
    request = produce_request(5, records=b"r" * 500)
    events = _events(
        [(0, request[200:], T0), (0, metadata_request(6), T0 + 1), (1, metadata_response(6), T0 + 2)], handshake=False
    )
    rows = [(a.kind, a.direction, a.offset, a.length) for a in events if isinstance(a, Anomaly)]
    assert rows == [("midstream", "request", 0, len(request) - 200), ("midstream", "response", 0, 0)]
    [conn] = [e for e in events if isinstance(e, ConnectionSummary)]
    assert (conn.gaps, conn.gap_bytes) == (0, 0)
    assert conn.tcp is not None and conn.tcp[0].gaps == conn.tcp[1].gaps == 0


def test_an_orphan_answering_a_request_kind_seen_on_the_connection_is_inferred() -> None:
    """The answer to a Metadata request sent before the capture started, then a Metadata exchange."""
    messages = [(1, metadata_response(1), T0), (0, metadata_request(2), T0 + 1), (1, metadata_response(2), T0 + 2)]
    events = _events(messages, handshake=False)
    exchanges = [e for e in events if isinstance(e, Exchange)]
    [orphan] = [e for e in exchanges if e.status == "orphan_response"]
    assert orphan.inferred and (orphan.response.api_key, orphan.response.api_version) == (3, 9)
    assert orphan.response.body == next(e for e in exchanges if e.status == "ok").response.body
    assert [w["code"] for w in orphan.response.warnings] == ["inferred"]


def test_an_orphan_with_no_request_seen_is_inferred_from_the_usual_client_sequence() -> None:
    """A one-packet flow: an ApiVersions v0 answer, nothing else (IDS test captures hold many)."""
    body = {"error_code": 0, "api_keys": [{"api_key": k, "min_version": 0, "max_version": 9} for k in range(3)]}
    events = _events([(1, encode_response(18, 0, body, correlation_id=1), T0)], handshake=False)
    [orphan] = [e for e in events if isinstance(e, Exchange)]
    assert orphan.inferred and (orphan.response.api_key, orphan.response.api_version) == (18, 0)
    assert orphan.response.body == body


def test_an_orphan_two_requests_explain_stays_undecoded_with_its_bytes() -> None:
    """Produce v9 and v8 responses differ only in layout details this frame does not show when both
    were seen: ambiguous, so not decoded; its bytes are kept."""
    frame = produce_response(1, version=3)
    seen = [
        (0, produce_request(2, version=2), T0 + 1),
        (1, produce_response(2, version=2), T0 + 2),
        (0, produce_request(3, version=3), T0 + 3),
        (1, produce_response(3, version=3), T0 + 4),
    ]
    events = _events([(1, frame, T0), *seen], handshake=False)
    [orphan] = [e for e in events if isinstance(e, Exchange) and e.status == "orphan_response"]
    assert not orphan.inferred and orphan.response.body is None
    assert orphan.response.raw == frame[4:]


def test_orphans_are_held_within_a_bound() -> None:
    """Orphans before any request wait for one, at most MAX_HELD_ORPHANS of them; later ones are
    settled at once from the usual client sequence."""
    from kdissect.kafka.session import MAX_HELD_ORPHANS

    n = MAX_HELD_ORPHANS + 10
    responses = [(1, metadata_response(i), T0 + i) for i in range(n)]
    events = _events(
        [*responses, (0, metadata_request(n), T0 + n), (1, metadata_response(n), T0 + n + 1)], handshake=False
    )
    statuses = Counter((e.status, e.inferred) for e in events if isinstance(e, Exchange))
    assert statuses[("orphan_response", True)] >= MAX_HELD_ORPHANS and statuses[("ok", False)] == 1
    assert sum(statuses.values()) == n + 1


def test_random_orphans_are_not_taken_for_responses() -> None:
    """Garbage at segment edges on the broker side never decodes as an inferred response."""
    import random

    rng = random.Random(11)
    for _ in range(300):
        payload = rng.randbytes(rng.randint(4, 200))
        frame = struct.pack(">i", len(payload)) + payload
        events = _events([(1, frame, T0)], handshake=False)
        assert not any(isinstance(e, Exchange) and e.inferred for e in events)
