"""Decoded data as JSON-safe data: what ``json.dumps`` accepts, for JSON output and text table files;
and times as ISO 8601 text with nanoseconds, both ways."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any


def to_jsonable(value: Any) -> Any:
    """Bytes as hex strings, UUIDs as strings, tuples as lists: what ``json.dumps`` accepts."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ISO = re.compile(r"(\d{4}-\d\d-\d\d)(?:[T ](\d\d:\d\d(?::\d\d)?)(?:\.(\d{1,9}))?)?(Z|[+-]\d\d:?\d\d)?")


def iso_ns(ns: int) -> str:
    """A time in ns since the epoch as ISO 8601 UTC with all nine fraction digits (the form JSON
    output and text tables use, so no nanosecond is lost)."""
    seconds, fraction = divmod(ns, 1_000_000_000)
    try:
        whole = datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):  # beyond what a datetime holds: the number itself
        return str(ns)
    return f"{whole:%Y-%m-%dT%H:%M:%S}.{fraction:09d}Z"


def parse_iso_ns(text: str) -> int | None:
    """ISO 8601 text (up to nine fraction digits; no zone means UTC) as ns since the epoch, or None."""
    m = _ISO.fullmatch(text.strip())
    if m is None:
        return None
    try:
        zone = (m.group(4) or "+00:00").replace("Z", "+00:00")
        whole = datetime.fromisoformat(f"{m.group(1)}T{m.group(2) or '00:00'}{zone}")
    except ValueError:
        return None
    seconds = (whole - _EPOCH) // timedelta(seconds=1)
    return seconds * 1_000_000_000 + int((m.group(3) or "0").ljust(9, "0"))
