"""SCRAM-SHA-256/512 (RFC 5802, RFC 7677): four text messages of ``k=value`` attributes.

client-first ``gs2-header n=user,r=nonce``; server-first ``r=nonce,s=salt,i=iterations``;
client-final ``c=binding,r=nonce,p=proof``; server-final ``v=signature`` or ``e=error``.
Each message names itself by its first attribute, so no state is needed to read one. Shown:
user, authzid, channel-binding flag, nonce and salt lengths, iteration count, extension names,
errors. The proof and the server signature are secrets (a proof replays the login): lengths only.
"""

from __future__ import annotations

import base64
import binascii
import re

from .token import MAX_ITEMS, Token, malformed, redacted, text

NAMES = ("SCRAM-SHA-256", "SCRAM-SHA-512")
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9]{0,31}")  # RFC 5802 keys are one letter; Kafka adds tokenauth=
_BINDING = {"n": "none (client does not support it)", "y": "none (client supports it, server seemed not to)"}


def _b64_len(value: str) -> int | None:
    try:
        return len(base64.b64decode(value, validate=True))
    except (binascii.Error, ValueError):
        return None


def _attributes(message: str) -> list[tuple[str, str]] | None:
    """``k=v`` pairs in order, or None when a part is not one (values may hold ``=``)."""
    out = []
    for part in message.split(",")[: MAX_ITEMS + 4]:
        key, eq, value = part.partition("=")
        if not eq or not _KEY.fullmatch(key):
            return None
        out.append((key, value))
    return out


def _username(value: str) -> str:
    return text(value.replace("=2C", ",").replace("=3D", "="))


def _gs2(flag: str) -> str:
    if flag.startswith("p="):
        return f"required: {text(flag[2:])}"
    return _BINDING.get(flag, f"unknown flag {text(flag)!r}")


def client(mechanism: str, token: bytes) -> Token:
    message = token.decode("utf-8", "replace")
    if message.startswith("c="):
        return _client_final(mechanism, len(token), message)
    flag, sep, rest = message.partition(",")
    authzid, sep2, bare = rest.partition(",")
    attrs = _attributes(bare) if sep and sep2 else None
    gs2_ok = (flag in ("n", "y") or flag.startswith("p=")) and (not authzid or authzid.startswith("a="))
    if not attrs or not gs2_ok:
        return malformed(mechanism, len(token), "not a SCRAM client-first or client-final message")
    found = dict(attrs)
    if "n" not in found or "r" not in found:
        return malformed(mechanism, len(token), "SCRAM client-first without n= or r=")
    fields = {"channel_binding": _gs2(flag), "authzid": _username(authzid[2:]) if authzid else None,
              "username": _username(found["n"]), "client_nonce_length": len(found["r"]),
              "extensions": [text(k) for k, _ in attrs if k not in ("n", "r", "m")] or None}
    return Token(mechanism, "client-first", len(token), fields, user=fields["authzid"] or fields["username"])


def _client_final(mechanism: str, size: int, message: str) -> Token:
    attrs = _attributes(message)
    if not attrs or attrs[-1][0] != "p":
        return malformed(mechanism, size, "SCRAM client-final without a trailing p= proof")
    found = dict(attrs)
    binding = found.get("c", "")
    try:
        header = base64.b64decode(binding, validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        header = None
    flag = header.partition(",")[0] if header else None
    proof = found["p"]
    fields = {"channel_binding": _gs2(flag) if flag else "undecodable c= attribute",
              "nonce_length": len(found.get("r", "")),
              "proof": redacted(_b64_len(proof) or len(proof))}
    return Token(mechanism, "client-final", size, fields)


def server(mechanism: str, token: bytes) -> Token:
    message = token.decode("utf-8", "replace")
    attrs = _attributes(message)
    if not attrs:
        return malformed(mechanism, len(token), "not a SCRAM server message")
    found = dict(attrs)
    if "e" in found:
        return Token(mechanism, "server-final", len(token), error=text(found["e"]))
    if "v" in found:
        signature = found["v"]
        return Token(mechanism, "server-final", len(token),
                     {"server_signature": redacted(_b64_len(signature) or len(signature))}, final=True)
    if "r" in found and "s" in found and "i" in found:
        salt = _b64_len(found["s"])
        try:
            iterations: int | str = int(found["i"])
        except ValueError:
            iterations = text(found["i"])
        fields = {"nonce_length": len(found["r"]), "salt_length": salt, "iterations": iterations,
                  "extensions": [text(k) for k, _ in attrs if k not in ("r", "s", "i", "m")] or None}
        warnings = [] if salt is not None else ["SCRAM salt is not base64"]
        if not isinstance(iterations, int):
            warnings.append("SCRAM iteration count is not a number")
        return Token(mechanism, "server-first", len(token), fields, warnings=warnings)
    return malformed(mechanism, len(token), "SCRAM server message without r=/s=/i=, v= or e=")
