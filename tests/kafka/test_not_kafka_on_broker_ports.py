"""Other protocols on a broker port give no Kafka rows: a connection never proven Kafka is not made
Kafka by a frame smaller than any Kafka response (the rule: ``validators.smallest_response``)."""

from __future__ import annotations

import random
import struct
from pathlib import Path

from kdissect.engines import local
from kdissect.events import Anomaly, ConnectionSummary, Exchange
from kdissect.kafka.validators import smallest_response
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.pcapwrite import write_capture
from kdissect.testing.synthetic import T0

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def h2_frame(kind: int, flags: int, payload: bytes = b"", stream: int = 0) -> bytes:
    """An HTTP/2 frame: 24-bit length, type, flags, 31-bit stream id, payload (RFC 9113 §4.1)."""
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


SETTINGS, WINDOW_UPDATE, ACK = 0x4, 0x8, 0x1
# What an h2 client and server open with: the preface, SETTINGS (max streams, window size),
# a WINDOW_UPDATE; the server's SETTINGS, then each side's 9-byte SETTINGS ACK.
CLIENT_OPENING = (H2_PREFACE + h2_frame(SETTINGS, 0, struct.pack(">HIHI", 3, 100, 4, 65535))
                  + h2_frame(WINDOW_UPDATE, 0, struct.pack(">I", 1 << 20)))
SERVER_OPENING = h2_frame(SETTINGS, 0, struct.pack(">HI", 3, 250))
SETTINGS_ACK = h2_frame(SETTINGS, ACK)


def _kafka_rows(tmp_path: Path, messages: list[tuple[int, bytes, int]], handshake: bool = True) -> list:
    path = tmp_path / "other.pcap"
    path.write_bytes(write_capture(tcp_conversation(messages, handshake=handshake)))  # server port 9092
    events = list(local.events([path]))
    [conn] = [e for e in events if isinstance(e, ConnectionSummary)]
    assert not conn.is_kafka
    return [e for e in events if isinstance(e, Exchange) or (isinstance(e, Anomaly) and e.kind != "not_kafka")]


def test_a_settings_ack_read_as_a_kafka_frame_is_smaller_than_any_response() -> None:
    claimed = struct.unpack_from(">i", SETTINGS_ACK)[0]  # the first 4 bytes as a Kafka size field
    assert len(SETTINGS_ACK) == 9 and claimed == 4 < smallest_response()


def test_http2_on_a_broker_port_gives_no_kafka_rows(tmp_path: Path) -> None:
    messages = [(0, CLIENT_OPENING, T0), (1, SERVER_OPENING, T0 + 1), (1, SETTINGS_ACK, T0 + 2),
                (0, SETTINGS_ACK, T0 + 3)]
    assert _kafka_rows(tmp_path, messages) == []


def test_http2_answer_alone_mid_stream_gives_no_kafka_rows(tmp_path: Path) -> None:
    """Only the server's SETTINGS ACK captured, the connection picked up mid-stream."""
    assert _kafka_rows(tmp_path, [(1, SETTINGS_ACK, T0), (0, SETTINGS_ACK, T0 + 1)], handshake=False) == []


def test_tls_client_hello_on_a_broker_port_gives_no_exchange(tmp_path: Path) -> None:
    rng = random.Random(7)
    hello = b"\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03" + rng.randbytes(196)
    answer = b"\x16\x03\x03\x00\x40" + rng.randbytes(64)
    rows = _kafka_rows_allowing_tls(tmp_path, [(0, hello, T0), (1, answer, T0 + 1)])
    # The TLS stage reads it: hellos of random bytes are malformed, and nothing is decrypted.
    assert {type(r).__name__ for r in rows} == {"Anomaly"}
    assert [r.kind for r in rows if r.kind != "tls_malformed"] == ["tls_no_key"]


def _kafka_rows_allowing_tls(tmp_path: Path, messages: list[tuple[int, bytes, int]]) -> list:
    """TLS on a Kafka port is Kafka over TLS: without keys one ``tls_no_key`` anomaly, never an exchange."""
    path = tmp_path / "tls.pcap"
    path.write_bytes(write_capture(tcp_conversation(messages)))
    return [e for e in local.events([path]) if isinstance(e, Exchange | Anomaly)]


def test_random_bytes_on_a_broker_port_give_no_kafka_rows(tmp_path: Path) -> None:
    rng = random.Random(11)
    for seed in range(20):
        sizes = (rng.randrange(1, 3000), rng.randrange(1, 3000))
        messages = [(0, rng.randbytes(sizes[0]), T0 + seed), (1, rng.randbytes(sizes[1]), T0 + seed + 1)]
        assert _kafka_rows(tmp_path, messages, handshake=bool(seed % 2)) == [], seed
