"""Events -> rows held column by column -> pandas, Arrow/Parquet, CSV and JSON Lines.

Rule: one column definition (``columns.TABLES``); every output is an adapter over it, and only
``frames`` (pandas) and ``arrow`` (pyarrow) load those libraries, on first use. Exports the sink
and the definition; import ``frames``, ``arrow`` and ``writer`` by module.
"""

from kdissect.tables.columns import TABLES, TCP_COUNTERS, cells
from kdissect.tables.sink import SPILLABLE, Columns, TableSink, exchange_row

__all__ = ["SPILLABLE", "TABLES", "TCP_COUNTERS", "Columns", "TableSink", "cells", "exchange_row"]
