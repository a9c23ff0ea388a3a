"""OAUTHBEARER (RFC 7628) as Kafka uses it (KIP-255): a GS2 header, then ``\\x01``-separated
``key=value`` pairs ending in ``\\x01\\x01``; ``auth=Bearer <token>`` carries the credential.

A JWT token shows its header and claims (not secrets: they describe the credential); its
signature, which is what makes it a credential, is only a length. A token that is not a JWT is
opaque and shown as a length only. SASL extensions show their names only. On failure the server
sends a JSON error (``{"status": "invalid_token", ...}``), and the client a lone ``\\x01``.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from .token import MAX_ITEMS, Token, malformed, redacted, text

NAME = "OAUTHBEARER"
_SEP = b"\x01"


def _b64url(segment: str) -> bytes | None:
    try:
        return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):
        return None


def _json_object(raw: bytes | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _shown(value: Any) -> Any:
    """A header field or claim as shown: scalars (text bounded), lists of scalars; the rest by type."""
    if isinstance(value, str):
        return text(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, list) and all(isinstance(v, str | int | float | bool) for v in value):
        return [_shown(v) for v in value[:MAX_ITEMS]]
    return f"({type(value).__name__})"


def _object(value: dict[str, Any]) -> dict[str, Any]:
    return {text(str(k)): _shown(v) for k, v in list(value.items())[:MAX_ITEMS]}


def jwt_view(token: str) -> tuple[dict[str, Any], str | None]:
    """The fields shown of a bearer token, and its subject when it is a JWT with one."""
    parts = token.split(".")
    header = _json_object(_b64url(parts[0])) if len(parts) == 3 else None
    claims = _json_object(_b64url(parts[1])) if len(parts) == 3 else None
    if header is None or claims is None:
        return {"token": redacted(len(token)), "token_format": "opaque (not a JWT)"}, None
    signature = _b64url(parts[2])
    fields = {"jwt_header": _object(header), "jwt_claims": _object(claims),
              "jwt_signature": redacted(len(signature) if signature is not None else len(parts[2]))}
    sub = claims.get("sub")
    return fields, text(sub) if isinstance(sub, str) else None


def client(token: bytes) -> Token:
    if token == _SEP:
        return Token(NAME, "client-abort", 1)  # the client's answer to a server error
    gs2, sep, rest = token.partition(b",")
    authz, sep2, pairs = rest.partition(b",")
    if not sep or not sep2 or gs2 not in (b"n", b"y") or (authz and not authz.startswith(b"a=")) \
            or not pairs.startswith(_SEP):
        return malformed(NAME, len(token), "not an OAUTHBEARER initial response (GS2 header, then \\x01 key=value)")
    authzid = text(authz[2:]) if authz else None
    fields: dict[str, Any] = {"authzid": authzid}
    extensions: list[str] = []
    user = authzid
    bearer_seen = False
    for pair in pairs.split(_SEP)[1: MAX_ITEMS + 1]:
        if not pair:
            continue
        key, eq, value = pair.partition(b"=")
        if key == b"auth" and eq:
            scheme, _, credential = value.partition(b" ")
            bearer_seen = True
            if scheme.lower() != b"bearer":
                fields["auth"] = f"{text(scheme)} {redacted(len(credential))}"
                continue
            view, sub = jwt_view(credential.decode("ascii", "replace"))
            fields.update(view)
            user = user or sub
        elif key in (b"host", b"port") and eq:
            fields[key.decode()] = text(value)
        else:
            extensions.append(text(key))
    fields["extensions"] = extensions or None
    warnings = [] if bearer_seen else ["OAUTHBEARER initial response without auth=Bearer"]
    return Token(NAME, "initial-response", len(token), fields, user=user, warnings=warnings)


def server(token: bytes) -> Token:
    if not token:
        return Token(NAME, "server-empty", 0, final=True)
    reply = _json_object(token)
    if reply is None:
        return malformed(NAME, len(token), "OAUTHBEARER server message is neither empty nor a JSON error")
    status = reply.get("status")
    return Token(NAME, "server-error", len(token), _object(reply), error=text(str(status or "error")))
