"""Figures and decoded messages -> text: the terminal summary (``terminal``), ``show``'s dump
(``show``) and the tree renderer both use (``render``).

Rule: the only stage that formats for people; every wire string it shows goes through
``render.safe_text``.
"""

from kdissect.report.render import format_bytes, safe_text, tree_lines
from kdissect.report.show import exchange_json, exchange_text
from kdissect.report.terminal import summary_lines

__all__ = ["exchange_json", "exchange_text", "format_bytes", "safe_text", "summary_lines", "tree_lines"]
