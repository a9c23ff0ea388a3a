"""The internal signal of the packet decoders: a header that cannot be decoded.

Raised by the pure link/IP/TCP functions and turned into a ``SourceAnomaly`` by the
packet decoder, so it never leaves this package.
"""

from __future__ import annotations

from kdissect.sources.shapes import AnomalyKind


class MalformedPacket(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    @classmethod
    def truncated(cls, message: str) -> MalformedPacket:
        """The snap length cut a header that is needed."""
        return cls(AnomalyKind.TRUNCATED_PACKET, message)

    @classmethod
    def bad(cls, message: str) -> MalformedPacket:
        """A header contradicts itself or its container."""
        return cls(AnomalyKind.BAD_HEADER, message)
