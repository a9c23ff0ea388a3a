"""A run's columns as the DataFrames the analysis functions take.

The ``records`` table keeps only transactional records (data and control): the only records the
analysis reads one by one. A busy capture's hundreds of thousands of others would cost more to
convert than to decode, and their counts are in ``batches``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kdissect.tables.columns import cells
from kdissect.tables.frames import to_dataframe
from kdissect.tables.sink import Columns

if TYPE_CHECKING:
    import pandas as pd


def analysis_frames(tables: Mapping[str, Columns]) -> dict[str, pd.DataFrame]:
    """Every table of a run (``kdissect.engines.local.analyze(...).tables``) as a DataFrame."""
    out = {name: to_dataframe(name, columns) for name, columns in tables.items() if name != "records"}
    if "records" in tables:
        out["records"] = to_dataframe("records", _transactional(tables["records"]))
    return out


def _transactional(columns: Columns) -> dict[str, list]:
    keep = [i for i, flag in enumerate(cells(columns["transactional"])) if flag]
    if not keep:
        return {name: [] for name in columns}
    return {name: [values[i] for i in keep] for name, values in ((n, cells(c)) for n, c in columns.items())}
