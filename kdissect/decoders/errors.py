"""The one exception type decoders raise, and the warning shape they attach to results."""

from __future__ import annotations

from kdissect.dataclass import dataclass

CAP = "cap"  # the warning (and anomaly) kind of every cut a resource bound makes (``kdissect.options``)


class DecodeError(ValueError):
    """Bytes that cannot be decoded as what they claim to be.

    Carries where it happened so a user can find the byte in a hex dump: the API key and
    version (None when not known yet, e.g. a bad header), the byte offset within the
    frame, and the field path such as ``responses[2].partitions[0].error_code``.
    """

    def __init__(
        self,
        reason: str,
        *,
        api_key: int | None = None,
        api_version: int | None = None,
        offset: int | None = None,
        path: str = "",
    ) -> None:
        self.reason = reason
        self.api_key = api_key
        self.api_version = api_version
        self.offset = offset
        self.path = path
        super().__init__(self._describe())

    def _describe(self) -> str:
        parts = [self.reason]
        if self.path:
            parts.append(f"at {self.path}")
        if self.offset is not None:
            parts.append(f"(byte {self.offset})")
        if self.api_key is not None:
            parts.append(f"[api_key={self.api_key} api_version={self.api_version}]")
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class DecodeWarning:
    """Something odd that did not stop decoding (e.g. bytes left after the body)."""

    code: str  # short machine-readable kind, e.g. "trailing_bytes", "crc_mismatch"
    message: str
    offset: int | None = None
