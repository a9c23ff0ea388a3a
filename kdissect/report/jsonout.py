"""The report as JSON: the same sections and tables as the HTML, with typed values (numbers stay numbers,
times are ISO 8601 strings). Pictures are listed by title; their numbers are in the tables.

Non-ASCII and control characters are written as ``\\uXXXX`` escapes, so the file is inert ASCII."""

from __future__ import annotations

import io
import json
import math
from typing import Any, TextIO

from kdissect.decoders.jsonable import to_jsonable

from .document import Document, Figure, Table, rows_total


def _value(v: Any) -> Any:
    if v is None:
        return None
    if hasattr(v, "isoformat"):
        return None if v != v else v.isoformat()
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    try:
        import pandas as pd

        if v is pd.NA:
            return None
    except ImportError:  # pragma: no cover
        pass
    return to_jsonable(v)


def _table(t: Table) -> dict:
    limit = t.max_rows if t.max_rows is not None else len(t.frame)
    rows = [[_value(v) for v in row] for row in t.frame.head(limit).itertuples(index=False, name=None)]
    return {
        "title": t.title,
        "note": t.note,
        "columns": [str(c) for c in t.frame.columns],
        "rows": rows,
        "rows_total": rows_total(t),
    }


def render_json(document: Document) -> str:
    out = io.StringIO()
    write_json(document, out)
    return out.getvalue()


def write_json(document: Document, out: TextIO) -> None:
    """Write the report to ``out`` piece by piece: ``json.dumps`` with an indent joins every piece
    into one string first (millions of small strings at a fleet's client inventory), which once
    cost more memory than the tables the report is made from."""
    payload = {
        "title": document.title,
        "facts": {label: value for label, value in document.facts},
        "sections": [
            {
                "id": s.id,
                "title": s.title,
                "intro": s.intro,
                "tables": [_table(b) for b in s.blocks if isinstance(b, Table)],
                "figures": [b.title for b in s.blocks if isinstance(b, Figure)],
            }
            for s in document.sections
        ],
    }
    for piece in json.JSONEncoder(indent=1, ensure_ascii=True, allow_nan=False).iterencode(payload):
        out.write(piece)
