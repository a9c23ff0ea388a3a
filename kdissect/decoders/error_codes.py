"""Kafka protocol error codes: the enum name of each code and whether a client may retry it.

Mirrors ``org.apache.kafka.common.protocol.Errors``. "Retriable" means what Kafka's own protocol
docs mean by it: the exception the code maps to extends ``RetriableException``. The facts live in
``error_codes.json`` so a new Kafka release is a data change; this module only indexes them, once,
into plain dicts because the lookups sit on the per-partition hot path of response decoding.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType


def _load() -> dict[int, tuple[str, bool]]:
    text = Path(__file__).with_name("error_codes.json").read_text("utf-8")
    return {row["code"]: (row["name"], row["retriable"]) for row in json.loads(text)}


ERROR_CODES: Mapping[int, tuple[str, bool]] = MappingProxyType(_load())
"""Error code -> (enum name, retriable); read-only so no caller can corrupt the shared table."""

_NAMES: dict[int, str] = {code: name for code, (name, _) in ERROR_CODES.items()}
_CODES: dict[str, int] = {name: code for code, name in _NAMES.items()}
_RETRIABLE: dict[int, bool] = {code: retriable for code, (_, retriable) in ERROR_CODES.items()}


def error_name(code: int) -> str:
    """Kafka's enum name for ``code``; ``UNKNOWN_ERROR_CODE_<n>`` keeps an unknown code visible."""
    return _NAMES.get(code) or f"UNKNOWN_ERROR_CODE_{code}"


def code_of(name: str) -> int:
    """The code of Kafka's enum ``name`` (a KeyError names a code the table does not have)."""
    return _CODES[name]


def is_retriable(code: int) -> bool | None:
    """Whether Kafka treats ``code`` as retriable; None when the code is not in the table."""
    return _RETRIABLE.get(code)
