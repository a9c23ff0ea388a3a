"""The report as one self-contained HTML file: inline CSS, pictures as data URIs, no script, no fetch.

Jinja2 renders it with autoescaping on, so every cell (already made inert by
:func:`~kdissect.report.document.cell_text`) is HTML-escaped; a Content-Security-Policy that allows
nothing but inline styles and data: images makes the browser refuse any network request as well.
"""

from __future__ import annotations

import base64

from .document import Document, Figure, Table, cell_text, shown_rows

# Columns of prose or lists, which may wrap; every other cell (names, addresses, ids, times, numbers)
# stays on one line and a wide table scrolls sideways instead.
WRAPPING_COLUMNS = frozenset(
    {
        "first_message",
        "first_warning",
        "detail",
        "meaning",
        "assignment",
        "assignments",
        "api_versions",
        "removed_versions",
        "client_ids",
        "partitions",
    }
)
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


def _environment():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("kdissect.report", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )


def _column_classes(table: Table) -> list[str]:
    """A CSS class per column: ``wrap`` for prose and lists, ``num`` (right-aligned) for numbers."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    frame = table.frame
    return [
        "wrap"
        if str(c) in WRAPPING_COLUMNS
        else "num"
        if is_numeric_dtype(frame[c].dtype) and not is_bool_dtype(frame[c].dtype)
        else "key"
        for c in frame.columns
    ]


def _block(block: Table | Figure) -> dict:
    if isinstance(block, Figure):
        return {
            "kind": "figure",
            "title": block.title,
            "note": block.note,
            "src": "data:image/svg+xml;base64," + base64.b64encode(block.draw(block.data)).decode("ascii"),
        }
    columns, rows, hidden = shown_rows(block)
    return {
        "kind": "table",
        "title": block.title,
        "note": block.note,
        "columns": columns,
        "classes": _column_classes(block),
        "rows": rows,
        "hidden": hidden,
        "collapsed": block.collapsed,
        "total": len(block.frame),
    }


def render_html(document: Document) -> str:
    template = _environment().get_template("report.html.j2")
    sections = [
        {"id": s.id, "title": s.title, "intro": s.intro, "blocks": [_block(b) for b in s.blocks]}
        for s in document.sections
    ]
    facts = [(label, cell_text(value)) for label, value in document.facts]
    return template.render(title=document.title, csp=CSP, facts=facts, sections=sections)
