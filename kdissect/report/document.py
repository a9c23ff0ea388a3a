"""What a report says, independent of its format: sections of tables and pictures, cells as safe text.

HTML, Markdown and JSON are renderings of one :class:`Document`, so they carry the same content.
Every cell goes through :func:`cell_text`, which formats numbers and times and escapes control,
bidi and zero-width characters (wire strings are untrusted); each format adds its own escaping.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from kdissect.dataclass import dataclass

from .render import safe_text
from .units import unit_for

if TYPE_CHECKING:
    import pandas as pd

LISTING_ROWS = 200  # rows shown of a table that lists events rather than aggregates them


@dataclass(slots=True)
class Table:
    title: str
    frame: pd.DataFrame
    note: str | None = None
    max_rows: int | None = None  # a listing: only the first rows are shown, and the report says so
    total: int | None = None  # a listing's rows in all, where the frame holds only its first ones
    collapsed: bool = False  # long and secondary: folded away in HTML


@dataclass(slots=True)
class Figure:
    """A picture of ``data``, drawn (by ``draw``) only by the formats that show pictures."""

    title: str
    data: pd.DataFrame
    draw: Callable[[pd.DataFrame], bytes]
    note: str | None = None


@dataclass(slots=True)
class Section:
    id: str
    title: str
    intro: str
    blocks: list[Table | Figure] = field(default_factory=list)


@dataclass(slots=True)
class Document:
    title: str
    facts: list[tuple[str, str]]
    sections: list[Section]


def cell_text(value: Any) -> str:
    """One cell as display text: empty for null, numbers rounded, times to the millisecond, text made inert."""
    import pandas as pd

    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:,.3f}".rstrip("0").rstrip(".") if abs(value) < 1e15 else f"{value:.3e}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    if hasattr(value, "item"):  # numpy scalars
        return cell_text(value.item())
    return safe_text(str(value))


def column_text(column: str, value: Any) -> str:
    """A cell of ``column`` as display text: a number in the column's unit (:mod:`.units`), else :func:`cell_text`."""
    unit = unit_for(column)
    number = value.item() if hasattr(value, "item") else value
    if unit is None or isinstance(number, bool) or not isinstance(number, int | float) or math.isnan(number):
        return cell_text(value)
    return unit(number)


def shown_rows(table: Table) -> tuple[list[str], list[list[str]], int]:
    """Column names, the rows to show as text (numbers with their units), and how many rows were left out."""
    frame = table.frame
    limit = table.max_rows if table.max_rows is not None else len(frame)
    head = frame.head(limit)
    names = [str(c) for c in frame.columns]
    rows = [
        [column_text(c, v) for c, v in zip(names, row, strict=True)]
        for row in head.itertuples(index=False, name=None)
    ]
    return [safe_text(c) for c in names], rows, max(0, rows_total(table) - limit)


def rows_total(table: Table) -> int:
    """How many rows the table has in all (a bounded listing's frame holds its first ones only)."""
    return table.total if table.total is not None else len(table.frame)
