"""Turn decoded messages into a readable indented tree, and wire text into inert terminal text.

Strings from the wire are untrusted: terminal output escapes control characters (an
attacker-chosen client id must not be able to move the cursor or recolour a terminal).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

# C0/C1 controls, line/paragraph separators, bidi embeddings/overrides/isolates and marks (LRM, RLM,
# ALM), and invisible characters (zero-width space/joiners, word joiner, invisible operators, BOM,
# interlinear annotation marks).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]")


def safe_text(s: str) -> str:
    """Escape control, bidi and invisible characters so wire text prints as inert, visible text."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else
                        f"\\u{ord(m.group()):04x}", s)


def format_bytes(raw: bytes, limit: int | None = 64) -> str:
    """Bytes as text when they are printable UTF-8, else hex; cut at ``limit`` bytes."""
    shown = raw if limit is None else raw[:limit]
    more = "" if limit is None or len(raw) <= limit else f" ... ({len(raw)} bytes)"
    try:
        text = shown.decode("utf-8")
        if text.isprintable():
            return f'"{safe_text(text)}"{more}'
    except UnicodeDecodeError:
        pass
    return f"0x{shown.hex()}{more}"


def _scalar(value: Any, limit: int | None) -> str:
    if isinstance(value, str):
        return '"' + safe_text(value) + '"'
    if isinstance(value, bytes | bytearray):
        return format_bytes(bytes(value), limit)
    return safe_text(str(value))


def tree_lines(value: Any, indent: str = "", limit: int | None = 64) -> Iterator[str]:
    """An indented ``key: value`` tree, lists as ``[i]`` items, like ``tshark -V``."""
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, dict | list) and v:
                yield f"{indent}{safe_text(str(k))}:"
                yield from tree_lines(v, indent + "  ", limit)
            else:
                yield f"{indent}{safe_text(str(k))}: {_scalar(v, limit) if not isinstance(v, list | dict) else v}"
    elif isinstance(value, list):
        for i, v in enumerate(value):
            if isinstance(v, dict | list) and v:
                yield f"{indent}[{i}]"
                yield from tree_lines(v, indent + "  ", limit)
            else:
                yield f"{indent}[{i}] {_scalar(v, limit)}"
    else:
        yield f"{indent}{_scalar(value, limit)}"
