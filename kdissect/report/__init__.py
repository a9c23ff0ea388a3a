"""Figures and decoded messages -> text: the terminal summary (``terminal``), ``show``'s dump
(``show``) and the tree renderer both use (``render``).

Rule: the only stage that formats for people; every wire string it shows goes through
``render.safe_text``.
"""

from typing import Any

from kdissect.report.render import format_bytes, safe_text, tree_lines
from kdissect.report.terminal import summary_lines

__all__ = ["exchange_json", "exchange_text", "format_bytes", "safe_text", "summary_lines", "tree_lines"]


def __getattr__(name: str) -> Any:
    """``show``'s names load it on first use: a run that only prints a summary never needs it."""
    if name in ("exchange_json", "exchange_text"):
        from kdissect.report import show

        return getattr(show, name)
    raise AttributeError(f"module 'kdissect.report' has no attribute {name!r}")
