"""Synthetic SASL successes built with the project's encoder (tansu cannot give them: it offers no
PLAIN and no OAUTHBEARER): one PLAIN login with a KIP-368 re-authentication, one OAUTHBEARER login
with a JWT, and one PLAIN login in SaslHandshake v0's bare-token framing."""

from __future__ import annotations

import base64
import json
import struct

from kdissect.testing.conversation import CLIENT_TO_SERVER, SERVER_TO_CLIENT, tcp_conversation
from kdissect.testing.encoder import encode_request, encode_response
from kdissect.testing.kafka_frames import metadata_request, metadata_response
from kdissect.testing.pcapwrite import write_capture

PLAIN_PASSWORD = b"plain-Pa55word-for-tests"
V0_PASSWORD = b"v0-raw-Pa55word-for-tests"
OAUTH_SIGNATURE = b"jwt-signature-bytes-that-must-never-show"
OAUTH_CLAIMS = {"sub": "svc-orders", "iss": "https://idp.example", "aud": "kafka", "exp": 1795000000,
                "iat": 1794996400, "scope": "kafka:write"}
HANDSHAKE, AUTHENTICATE = 17, 36
LIFETIME_MS = 3_600_000


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt() -> str:
    header = _b64url(json.dumps({"alg": "RS256", "typ": "JWT", "kid": "key-1"}).encode())
    return f"{header}.{_b64url(json.dumps(OAUTH_CLAIMS).encode())}.{_b64url(OAUTH_SIGNATURE)}"


def _login(mechanism: str, token: bytes, first_cid: int) -> list[tuple[int, bytes]]:
    """SaslHandshake v1 and one SaslAuthenticate v2 round, answered with success."""
    return [
        (CLIENT_TO_SERVER, encode_request(HANDSHAKE, 1, {"mechanism": mechanism}, correlation_id=first_cid)),
        (SERVER_TO_CLIENT, encode_response(HANDSHAKE, 1, {"error_code": 0, "mechanisms": [mechanism]},
                                           correlation_id=first_cid)),
        (CLIENT_TO_SERVER, encode_request(AUTHENTICATE, 2, {"auth_bytes": token}, correlation_id=first_cid + 1)),
        (SERVER_TO_CLIENT, encode_response(AUTHENTICATE, 2, {"error_code": 0, "auth_bytes": b"",
                                                             "session_lifetime_ms": LIFETIME_MS},
                                           correlation_id=first_cid + 1)),
    ]


def _metadata(cid: int) -> list[tuple[int, bytes]]:
    return [(CLIENT_TO_SERVER, metadata_request(cid)), (SERVER_TO_CLIENT, metadata_response(cid))]


def _v0_plain() -> list[tuple[int, bytes]]:
    token = b"\0bob\0" + V0_PASSWORD
    return [
        (CLIENT_TO_SERVER, encode_request(HANDSHAKE, 0, {"mechanism": "PLAIN"}, correlation_id=1)),
        (SERVER_TO_CLIENT, encode_response(HANDSHAKE, 0, {"error_code": 0, "mechanisms": ["PLAIN"]},
                                           correlation_id=1)),
        (CLIENT_TO_SERVER, struct.pack(">i", len(token)) + token),
        *_metadata(2),
    ]


def _raw(direction: int, token: bytes) -> tuple[int, bytes]:
    return direction, struct.pack(">i", len(token)) + token


def v0_scram_failure() -> bytes:
    """SCRAM-SHA-512 in v0's bare-token framing, refused by the server's ``e=`` (then the close)."""
    salt = base64.b64encode(b"s" * 20)
    messages = [
        (CLIENT_TO_SERVER, encode_request(HANDSHAKE, 0, {"mechanism": "SCRAM-SHA-512"}, correlation_id=1)),
        (SERVER_TO_CLIENT, encode_response(HANDSHAKE, 0, {"error_code": 0, "mechanisms": ["SCRAM-SHA-512"]},
                                           correlation_id=1)),
        _raw(CLIENT_TO_SERVER, b"n,,n=carol,r=cnonce"),
        _raw(SERVER_TO_CLIENT, b"r=cnonceSNONCE,s=" + salt + b",i=8192"),
        _raw(CLIENT_TO_SERVER, b"c=biws,r=cnonceSNONCE,p=" + base64.b64encode(b"p" * 64)),
        _raw(SERVER_TO_CLIENT, b"e=invalid-proof"),
    ]
    timed = [(d, payload, 1_700_000_000_000_000_000 + i * 1_000_000) for i, (d, payload) in enumerate(messages)]
    return write_capture(tcp_conversation(timed))


def sasl_successes(snaplen: int | None = None) -> bytes:
    """A pcap of three connections to port 9092: PLAIN with a re-authentication, OAUTHBEARER, v0 PLAIN
    (frames cut at ``snaplen`` bytes when given)."""
    plain = b"\0alice\0" + PLAIN_PASSWORD
    oauth = b"n,,\x01auth=Bearer " + jwt().encode() + b"\x01\x01"
    conversations = [
        [*_login("PLAIN", plain, 1), *_metadata(3), *_login("PLAIN", plain, 4), *_metadata(6)],
        [*_login("OAUTHBEARER", oauth, 1), *_metadata(3)],
        _v0_plain(),
    ]
    return _capture(conversations, 40000, snaplen)


SERVER_SIGNATURE = b"scram-server-signature-32-bytes!"
FUTURE_ERROR = 999  # an error code this build does not know (a newer broker's): inference refuses the answer


def sasl_orphans(snaplen: int | None = None) -> bytes:
    """SaslAuthenticate answers whose requests the capture does not hold (it started, or lost packets,
    just before them): a SCRAM server-final (``v=`` signature) with an error code too new to infer its
    request from, alone on one connection (a token by shape); after a
    SaslHandshake on another, an answer that fits no SaslAuthenticate version (a token by position)."""
    final = b"v=" + base64.b64encode(SERVER_SIGNATURE)
    odd = encode_response(AUTHENTICATE, 1, {"error_code": 0, "auth_bytes": final, "session_lifetime_ms": 0},
                          correlation_id=2) + b"\x00"  # a byte too many: no version fits
    conversations = [
        [(SERVER_TO_CLIENT, encode_response(AUTHENTICATE, 2, {"error_code": FUTURE_ERROR, "auth_bytes": final,
                                                              "session_lifetime_ms": LIFETIME_MS},
                                            correlation_id=7)), *_metadata(8)],
        [(CLIENT_TO_SERVER, encode_request(HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"}, correlation_id=1)),
         (SERVER_TO_CLIENT, encode_response(HANDSHAKE, 1, {"error_code": 0, "mechanisms": ["SCRAM-SHA-256"]},
                                            correlation_id=1)),
         (SERVER_TO_CLIENT, odd), *_metadata(3)],
    ]
    return _capture(conversations, 41000, snaplen)


def _capture(conversations: list, first_port: int, snaplen: int | None) -> bytes:
    """One connection per conversation (client ports from ``first_port``), a second apart, merged by time."""
    segments = []
    for n, messages in enumerate(conversations):
        start = 1_700_000_000_000_000_000 + n * 1_000_000_000
        timed = [(d, payload, start + i * 1_000_000) for i, (d, payload) in enumerate(messages)]
        segments += tcp_conversation(timed, client=("10.0.0.1", first_port + n))
    ordered = sorted(segments, key=lambda s: s.ts_ns)
    return write_capture(ordered) if snaplen is None else write_capture(ordered, snaplen=snaplen)
