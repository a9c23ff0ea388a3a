"""What decoding one SASL token gives: a JSON-safe view with every secret replaced by its length.

Every mechanism module returns a :class:`Token`. Its ``fields`` are what outputs show; secrets
(passwords, proofs, signatures, opaque credentials) never enter them, only ``redacted(n)``. Wire
text is cut to ``MAX_TEXT`` characters and decoded with replacement, so a hostile token costs
little and never raises.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from kdissect.dataclass import dataclass

MAX_TOKEN = 64 << 10  # tokens longer than this are not parsed: length only
MAX_TEXT = 256  # characters kept of any wire string shown
MAX_ITEMS = 32  # attributes, claims or extensions kept of one token


def redacted(n: int) -> str:
    """How a secret appears in every output: its size, never its bytes."""
    return f"redacted, {n} bytes"


def opaque(n: int) -> str:
    """How a token the mechanism keeps opaque (GSSAPI, unknown mechanisms) appears."""
    return f"opaque, {n} bytes"


def text(raw: bytes | str) -> str:
    """Wire text as a bounded str (invalid UTF-8 replaced, long text cut with its length said)."""
    s = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return s if len(s) <= MAX_TEXT else f"{s[:MAX_TEXT]}... ({len(s)} characters)"


@dataclass(slots=True)
class Token:
    """One decoded SASL token (client or server side) of one mechanism."""

    mechanism: str
    step: str  # e.g. client-first, server-final, initial-response, opaque
    size: int
    fields: dict[str, Any] = field(default_factory=dict)
    user: str | None = None  # the identity the client claims (authzid if given, else authcid / username / sub)
    error: str | None = None  # the mechanism's own failure report (SCRAM e=, OAUTHBEARER status)
    final: bool = False  # the server's last word of a successful exchange (SCRAM v=)
    warnings: list[str] = field(default_factory=list)

    def view(self) -> dict[str, Any]:
        """What replaces the token's bytes in a decoded body."""
        shown = {k: v for k, v in self.fields.items() if v is not None}
        out: dict[str, Any] = {"mechanism": self.mechanism, "step": self.step, "size": self.size, **shown}
        if self.error is not None:
            out["error"] = self.error
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


def malformed(mechanism: str, size: int, why: str) -> Token:
    """A token its mechanism cannot parse: nothing of it is shown, since any part may be a secret."""
    return Token(mechanism, "malformed", size, {"token": redacted(size)}, warnings=[why])
