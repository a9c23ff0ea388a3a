"""The report as Markdown: the same sections and tables as the HTML; each picture is named with a
pointer to the table holding its numbers (Markdown viewers do not all show embedded images).

Cells are escaped for Markdown and for the HTML most viewers turn it into: ``&<>`` become entities,
and characters Markdown reads as markup inside a line are backslash-escaped.
"""

from __future__ import annotations

import html
import re

from .document import Document, Figure, cell_text, shown_rows

# Markup inside a line (every escaped string sits after a fixed prefix, never at a line's start).
_MARKUP = re.compile(r"([\\`*_\[\]|~])")


def md_text(text: str) -> str:
    """Inert Markdown for a piece of (already control-safe) text; newlines become spaces."""
    return _MARKUP.sub(r"\\\1", html.escape(text, quote=False)).replace("\n", " ")


def render_markdown(document: Document) -> str:
    out = [f"# {md_text(document.title)}", ""]
    out += [f"- **{md_text(label)}**: {md_text(cell_text(value))}" for label, value in document.facts]
    for s in document.sections:
        out += ["", f"## {md_text(s.title)}", "", md_text(s.intro)]
        for b in s.blocks:
            if isinstance(b, Figure):
                out += ["", f"*Picture in the HTML report: {md_text(b.title)}.*"]
                continue
            out += ["", f"### {md_text(b.title)}"]
            if b.note:
                out += ["", md_text(b.note)]
            columns, rows, hidden = shown_rows(b)
            if not rows:
                if not b.note:
                    out += ["", "Nothing seen."]
                continue
            out += ["", "| " + " | ".join(md_text(c) for c in columns) + " |", "|" + "---|" * len(columns)]
            out += ["| " + " | ".join(md_text(c) for c in row) + " |" for row in rows]
            if hidden:
                out += ["", f"{hidden} more rows not shown."]
    return "\n".join(out) + "\n"
