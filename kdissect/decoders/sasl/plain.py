"""SASL PLAIN (RFC 4616): ``[authzid] NUL authcid NUL password``, one client token.

The server answers with an empty token (or nothing, in Kafka's v0 raw framing); a failure is a
Kafka error code or a closed connection, never a token.
"""

from __future__ import annotations

from .token import Token, malformed, redacted, text

NAME = "PLAIN"


def looks_like(token: bytes) -> bool:
    """Two NULs between text without control characters, authcid and password not empty: what a
    PLAIN token is and a Kafka request (binary integers after its first bytes) is not."""
    parts = token.split(b"\0")
    if len(parts) != 3 or not parts[1] or not parts[2]:
        return False
    try:
        words = [p.decode("utf-8") for p in parts]
    except UnicodeDecodeError:
        return False
    return not any(ch < " " or ch == "\x7f" for w in words for ch in w)


def client(token: bytes) -> Token:
    parts = token.split(b"\0")
    if len(parts) != 3:
        return malformed(NAME, len(token), f"PLAIN token with {len(parts) - 1} NUL separators (2 expected)")
    authzid, authcid, password = parts
    fields = {"authzid": text(authzid) if authzid else None, "authcid": text(authcid),
              "password": redacted(len(password))}
    return Token(NAME, "initial-response", len(token), fields, user=fields["authzid"] or fields["authcid"])


def server(token: bytes) -> Token:
    if token:
        return Token(NAME, "unexpected", len(token), {"token": redacted(len(token))},
                     warnings=[f"PLAIN server sent a {len(token)}-byte token (none expected)"])
    return Token(NAME, "server-empty", 0, final=True)
