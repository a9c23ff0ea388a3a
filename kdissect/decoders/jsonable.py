"""Decoded data as JSON-safe data: what ``json.dumps`` accepts, for JSON output and text table files."""

from __future__ import annotations

import uuid
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
