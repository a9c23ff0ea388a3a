"""SASL tokens as Kafka carries them (SaslAuthenticate ``auth_bytes``, or v0's bare frames), decoded
per mechanism with every secret redacted. Bytes in, plain data out, like the rest of ``decoders``.

The mechanisms live in one registry, :data:`MECHANISMS`: a name -> how to read its client and
server tokens. A mechanism not in it (or a token too long to parse) is shown as a length only.
:func:`decode_token` never raises on wire bytes: what does not parse is a ``malformed`` token with
a warning, and no byte of it is shown (any part of a token may be a secret).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kdissect.dataclass import dataclass

from .. import apis
from . import oauthbearer, plain, scram
from .token import MAX_TOKEN, Token, opaque, redacted

__all__ = ["MECHANISMS", "Mechanism", "Token", "decode_token", "guess_mechanism", "redact_frame_body", "redacted"]
SASL_AUTHENTICATE = apis.key_of("SaslAuthenticate")


@dataclass(frozen=True, slots=True)
class Mechanism:
    """How to read one mechanism's tokens (None: opaque, length only)."""

    name: str
    client: Callable[[bytes], Token] | None
    server: Callable[[bytes], Token] | None


def _scram(name: str) -> Mechanism:
    return Mechanism(name, lambda t: scram.client(name, t), lambda t: scram.server(name, t))


MECHANISMS: dict[str, Mechanism] = {
    m.name: m
    for m in (
        Mechanism(plain.NAME, plain.client, plain.server),
        *(_scram(name) for name in scram.NAMES),
        Mechanism(oauthbearer.NAME, oauthbearer.client, oauthbearer.server),
        Mechanism("GSSAPI", None, None),  # Kerberos: GSS-API tokens, encrypted or binary: opaque
    )
}


def guess_mechanism(token: bytes) -> str | None:
    """The mechanism a client's first token belongs to, for connections whose SaslHandshake the
    capture does not hold (None: not recognised). SCRAM's hash is not in its tokens: SHA-256 is said."""
    if token.startswith((b"n,", b"y,", b"p=")):
        if b"\x01auth=" in token[:MAX_TOKEN]:
            return oauthbearer.NAME
        if b",n=" in token[:MAX_TOKEN] and b",r=" in token[:MAX_TOKEN]:
            return scram.NAMES[0]
    return plain.NAME if plain.looks_like(token) else None


def decode_token(mechanism: str | None, token: bytes, from_client: bool) -> Token:
    """One token, read as ``mechanism`` says (the handshake's choice), client or server side."""
    name = mechanism or "unknown"
    found = MECHANISMS.get(name)
    read = None if found is None else (found.client if from_client else found.server)
    if read is None:
        return Token(name, "opaque", len(token), {"token": opaque(len(token)) if found else redacted(len(token))})
    if len(token) > MAX_TOKEN:
        return Token(name, "too-long", len(token), {"token": redacted(len(token))},
                     warnings=[f"token of {len(token)} bytes not parsed (limit {MAX_TOKEN})"])
    try:
        return read(token)
    except (ValueError, TypeError, UnicodeError, RecursionError) as exc:  # a parser's miss: never a traceback
        return Token(name, "malformed", len(token), {"token": redacted(len(token))},
                     warnings=[f"{name} token not decoded ({type(exc).__name__})"])


def redact_frame_body(api_key: int | None, body: dict[str, Any] | None, from_client: bool) -> None:
    """A lone decoded frame's SaslAuthenticate token, decoded and redacted in place (the mechanism
    guessed; other APIs untouched): for faces that decode one frame outside any connection."""
    token = body.get("auth_bytes") if api_key == SASL_AUTHENTICATE and body is not None else None
    if isinstance(token, bytes):
        body["auth_bytes"] = decode_token(guess_mechanism(token) if from_client else None, token, from_client).view()
