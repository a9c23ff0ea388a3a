"""Tables to files: Parquet (straight from the columns through Arrow, no pandas), CSV, JSON Lines."""

from __future__ import annotations

import json
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kdissect.decoders.jsonable import to_jsonable
from kdissect.tables.columns import TABLES
from kdissect.tables.sink import Columns

FORMATS = ("parquet", "csv", "jsonl")


class TableWriter:
    """Writes tables to ``out/<table>.<fmt>``, each possibly in several pieces (a sink's spills).

    Parquet pieces go through one writer per table with the table's fixed Arrow schema, on a
    background thread: Parquet encoding and compression run without the GIL, so they overlap
    the decoding of what follows (one piece at a time, so memory stays bounded). Text formats
    append (CSV writes its header once). Bytes become hex in text formats (lists and dicts JSON).
    """

    def __init__(self, out: Path, fmt: str) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out, self.fmt = out, fmt
        self.rows: dict[str, int] = {}
        self._parquet: dict[str, Any] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._pending: Future | None = None

    def write(self, name: str, columns: Columns) -> None:
        path = self.out / f"{name}.{self.fmt}"
        first = name not in self.rows
        if self.fmt == "parquet":  # straight from the columns to Arrow: no pandas
            from kdissect.tables.arrow import to_arrow

            table = to_arrow(name, columns)
            self.rows[name] = self.rows.get(name, 0) + table.num_rows
            self._wait()
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="parquet")
            self._pending = self._pool.submit(self._write_parquet, name, path, table)
            return
        from kdissect.tables.frames import to_dataframe

        text_df = to_dataframe(name, columns)
        self.rows[name] = self.rows.get(name, 0) + len(text_df)
        for col in text_df.columns:
            if text_df[col].dtype == object:
                text_df[col] = text_df[col].map(
                    lambda v: (
                        json.dumps(to_jsonable(v))
                        if isinstance(v, list | dict | tuple)
                        else (bytes(v).hex() if isinstance(v, bytes | bytearray) else v)
                    )
                )
        with path.open("w" if first else "a", newline="") as f:
            if self.fmt == "csv":
                text_df.to_csv(f, index=False, header=first)
            else:
                text_df.to_json(f, orient="records", lines=True, date_format="iso", date_unit="ns")

    def _write_parquet(self, name: str, path: Path, table: Any) -> None:
        import pyarrow.parquet as pq

        if name not in self._parquet:  # the table's schema carries pandas' metadata: dtypes survive a round trip
            self._parquet[name] = pq.ParquetWriter(path, table.schema)
        self._parquet[name].write_table(table)

    def _wait(self) -> None:
        """Let the piece being written finish (re-raising what it raised, e.g. a full disk)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def close(self) -> list[tuple[Path, int]]:
        """Finish every file; (path, rows written) per table, in the order first written."""
        try:
            self._wait()
        finally:
            if self._pool is not None:
                self._pool.shutdown()
            for writer in self._parquet.values():
                writer.close()
        order = [name for name in TABLES if name in self.rows]
        return [(self.out / f"{name}.{self.fmt}", self.rows[name]) for name in order]
