"""A run's columns as the DataFrames the analysis functions take.

The ``records`` table keeps only transactional records (data and control): the only records the
analysis reads one by one. A busy capture's hundreds of thousands of others would cost more to
convert than to decode, and their counts are in ``batches``.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING

from kdissect.tables.columns import TABLES, cells
from kdissect.tables.sink import Columns

if TYPE_CHECKING:
    import pandas as pd


def analysis_frames(tables: Mapping[str, Columns]) -> dict[str, pd.DataFrame]:
    """Every table of a run (``kdissect.engines.local.analyze(...).tables``) as a DataFrame."""
    return taken_frames(dict(tables))


def taken_frames(tables: MutableMapping[str, Columns]) -> dict[str, pd.DataFrame]:
    """:func:`analysis_frames`, emptying ``tables`` as it goes: each table's column lists are freed
    once its frame is made, so a fleet's tables are never held twice (the report's peak memory)."""
    from kdissect.tables.frames import taken_dataframe  # (pandas: loaded by the frames only, not the figures' tasks)

    out = {}
    for name in list(tables):
        columns = dict(tables.pop(name))  # the only reference left to its lists
        out[name] = taken_dataframe(name, _transactional(columns) if name == "records" else columns)
        del columns
    return out


ANALYSED_RECORDS = "transactional"  # the flag column of the records the analysis reads (see above)


def _transactional(columns: Columns) -> dict[str, list]:
    keep = [i for i, flag in enumerate(cells(columns[ANALYSED_RECORDS])) if flag]
    if not keep:
        return {name: [] for name in columns}
    return {name: [values[i] for i in keep] for name, values in ((n, cells(c)) for n, c in columns.items())}


def in_capture_order(frames: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The frames' rows in one order whatever engine made them (the local engine's are in the order
    events completed, the Spark engine's in task order): by the table's timestamps, then by every
    other column that sorts (all but bytes and headers), so only rows equal in all of them may tie."""
    out = {}
    for name, frame in frames.items():
        kinds = dict(TABLES[name])
        keys = [c for c in frame.columns if kinds.get(c) == "timestamp"]
        keys += [c for c in frame.columns if kinds.get(c) not in ("timestamp", "bytes", "headers", None)]
        out[name] = frame.sort_values(keys, kind="stable", na_position="last", ignore_index=True) if keys else frame
    return out
