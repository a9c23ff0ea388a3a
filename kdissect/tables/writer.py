"""Tables to files: Parquet (straight from the columns through Arrow, no pandas), CSV, JSON Lines.

The three formats hold the same cells; how each writes them is stated once, in ``FORMATS_HELP``
(shown by ``kdissect analyze --help`` and in docs/tables-and-columns.md).
"""

from __future__ import annotations

import json
import queue
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from kdissect.decoders.jsonable import iso_ns
from kdissect.lazy import lazy_module
from kdissect.tables.columns import TABLES, cells
from kdissect.tables.sink import Columns

csv = lazy_module("csv")  # CSV files only

FORMATS = ("parquet", "csv", "jsonl")
FORMATS_HELP = """table files (--out DIR --format F): DIR/<table>.<F>, one line or row per table row.
  parquet  times: timestamp[ns, UTC]; keys and values: binary; headers: a list of {key: string,
           value: binary} structs (pandas reads each back as a list of {'key': ..., 'value': ...}
           dicts); names: dictionary-encoded strings; nulls: null. An empty table: a file with
           the columns and no row.
  csv      a header line, then one line per row; times: ISO 8601 UTC with nine fraction digits
           (2026-08-22T10:15:04.989512123Z); keys and values: hex; headers: a JSON array of
           [key, value as hex or null]; booleans: true/false; null: an empty cell. An empty
           table: the header line only.
  jsonl    one JSON object per line, the cells of csv, but headers a JSON array (not text) and
           null as null. An empty table: an empty file.
  --no-payloads writes keys, values and header values as null (their sizes stay in key_size and
  value_size); --preview N keeps their first N bytes."""


# What ``pyarrow.parquet.ParquetWriter`` passes its writer by default, as ParquetFile passes it (see there):
# every setting that shapes our files, named, so that a release changing the private class's own defaults
# changes nothing here (and one that no longer takes a name falls back to the front).
_PARQUET_DEFAULTS = {"version": "2.6", "compression": "snappy", "data_page_version": "1.0",
                     "writer_engine_version": "V2", "use_compliant_nested_type": True, "store_schema": True,
                     "use_byte_stream_split": False, "write_page_index": False, "write_page_checksum": False,
                     "write_time_adjusted_to_utc": False}


class ParquetFile:
    """One table's Parquet file (a local path, or a stream a file system opened), written piece by piece
    in the schema of its first piece, an Arrow table made by :func:`kdissect.tables.arrow.to_arrow`
    (whose metadata keep pandas' dtypes over a round trip). The one Parquet writer: the local and
    live engines' ``TableWriter`` and the Spark engine's tasks write through it.

    It writes through the writer ``pyarrow.parquet.ParquetWriter`` wraps (``pyarrow._parquet``), with
    the options that front passes it (``_PARQUET_DEFAULTS``): the front only resolves a path to a
    file system, which ``where`` never needs, and importing it loads every file system's bindings (and
    ``ssl``, for S3's certificates): ~40 M instructions, a sixth of an exchanges run's fixed cost.
    tests/tables/test_parquet_file.py checks the bytes written equal the front's (and that a pyarrow
    without that class still writes, through the front)."""

    def __init__(self, where: Any) -> None:
        self._where = where
        self._writer: Any = None
        self.rows = 0

    def write(self, table: Any) -> None:
        if self._writer is None:
            self._writer = _parquet_writer(self._where, table.schema, **parquet_options(table.schema))
        self._writer.write_table(table)
        self.rows += table.num_rows

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


# A column chunk whose dictionary grows past this falls back to plain encoding for the rest of the chunk.
# Arrow's default (1 MiB) lets a column of distinct values (correlation ids, times, offsets) build a
# dictionary of up to ~100k entries only to drop it; at 8 KiB the low-cardinality columns (api keys,
# partitions, error codes, ports) keep theirs. On the chatty capture's every-table files, written in the
# engines' pieces, writing costs 15% less and the files are 8% smaller; on the record-heavy capture's,
# the same size within 0.3% (reports/live-cut-2026-11-30.md).
DICTIONARY_PAGE_LIMIT = 8 * 1024


def parquet_options(schema: Any) -> dict[str, Any]:
    """The options a table's file is written with (given its Arrow schema): dictionary pages and
    min/max statistics on every column but the payloads, dictionaries bounded by DICTIONARY_PAGE_LIMIT."""
    small = [f.name for f in schema if not _is_payload(f.type)]
    return {"use_dictionary": small, "write_statistics": small, "dictionary_pagesize_limit": DICTIONARY_PAGE_LIMIT}


def _parquet_writer(where: Any, schema: Any, **options: Any) -> Any:
    """The writer ``pyarrow.parquet.ParquetWriter`` wraps, given the options that front passes it; the
    front itself should a pyarrow release move or change that private class (slower to import, the same
    file): a user's run never fails on it."""
    try:
        from pyarrow._parquet import ParquetWriter

        return ParquetWriter(where, schema, **options, **_PARQUET_DEFAULTS)
    except (ImportError, TypeError):
        import pyarrow.parquet as pq

        return pq.ParquetWriter(where, schema, **options)


def _is_payload(arrow_type: Any) -> bool:
    """Whether a column holds payloads (keys, values, headers): nearly every cell distinct, so a
    dictionary page is built only to be dropped, and a min/max statistic is a pass over every payload
    byte that no reader uses (a tenth of writing the records table of a record-heavy capture)."""
    import pyarrow as pa

    return pa.types.is_binary(arrow_type) or pa.types.is_list(arrow_type)


class TableWriter:
    """Writes tables to ``out/<table>.<fmt>``, each possibly in several pieces (a sink's spills).

    Parquet pieces go through one writer per table with the table's fixed Arrow schema, on a
    background thread: Parquet encoding and compression run without the GIL, so they overlap
    the decoding of what follows (one piece at a time, so memory stays bounded). Text formats
    append (CSV writes its header once), cell by cell as ``FORMATS_HELP`` says.
    """

    def __init__(self, out: Path, fmt: str) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out, self.fmt = out, fmt
        self.rows: dict[str, int] = {}
        self._parquet: dict[str, ParquetFile] = {}
        self._background = _Background()

    def write(self, name: str, columns: Columns) -> None:
        path = self.out / f"{name}.{self.fmt}"
        first = name not in self.rows
        if self.fmt == "parquet":  # straight from the columns to Arrow: no pandas
            from kdissect.tables.arrow import to_arrow

            table = to_arrow(name, columns)
            self.rows[name] = self.rows.get(name, 0) + table.num_rows
            self._background.submit(self._write_parquet, name, path, table)
            return
        names = [n for n, _ in TABLES[name]]
        with path.open("w" if first else "a", newline="", encoding="utf-8") as f:
            n = _write_text(f, self.fmt, names, _text_rows(name, columns), header=first)
        self.rows[name] = self.rows.get(name, 0) + n

    def _write_parquet(self, name: str, path: Path, table: Any) -> None:
        if name not in self._parquet:
            self._parquet[name] = ParquetFile(path)
        self._parquet[name].write(table)

    def close(self) -> list[tuple[Path, int]]:
        """Finish every file; (path, rows written) per table, in the order first written."""
        try:
            self._background.wait()
        finally:
            self._background.close()
            for writer in self._parquet.values():
                writer.close()
        order = [name for name in TABLES if name in self.rows]
        return [(self.out / f"{name}.{self.fmt}", self.rows[name]) for name in order]


class _Background:
    """One long-lived thread running the calls handed to it one at a time, in order: a pool of one
    without ``concurrent.futures``, which with the ``logging`` it loads was ~3% of an exchanges run's
    instructions. Long-lived, as the pool's thread was, so a run's pieces share one thread (and the
    per-thread heap of Arrow's allocator) however many it writes."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        self._outcomes: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._pending = False

    def submit(self, call: Callable[..., None], *args: Any) -> None:
        """Run ``call(*args)`` there once the call before it has finished (re-raising what that raised)."""
        self.wait()
        if self._thread is None:  # (a daemon: a run that fails before close must not hang at exit)
            self._thread = threading.Thread(target=self._serve, name="parquet", daemon=True)
            self._thread.start()
        self._calls.put((call, args))
        self._pending = True

    def wait(self) -> None:
        """Let the call in progress finish, re-raising what it raised (e.g. a full disk)."""
        if self._pending:
            self._pending = False
            failed = self._outcomes.get()
            if failed is not None:
                raise failed

    def close(self) -> None:
        if self._thread is not None:
            self._calls.put(None)
            self._thread.join()
            self._thread = None

    def _serve(self) -> None:
        while (job := self._calls.get()) is not None:
            call, args = job
            try:
                call(*args)
            except BaseException as exc:  # (handed to the caller's thread by wait)
                self._outcomes.put(exc)
            else:
                self._outcomes.put(None)


def _text_cell(kind: str, value: Any) -> Any:
    """One cell as JSON Lines holds it (CSV then turns lists into JSON text and None into an empty cell)."""
    if value is None:
        return None
    if kind == "timestamp":
        return iso_ns(value)
    if kind == "bytes":
        return bytes(value).hex()
    if kind == "headers":
        return [[k, None if v is None else bytes(v).hex()] for k, v in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, float) and value != value:  # NaN: no value
        return None
    return value


def _text_rows(name: str, columns: Columns) -> Iterator[list[Any]]:
    kinds = TABLES[name]
    values = [cells(columns[n]) for n, _ in kinds]
    for row in zip(*values, strict=True):
        yield [_text_cell(kind, v) for (_, kind), v in zip(kinds, row, strict=True)]


def _csv_cell(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False)
    return value


def _write_text(f: TextIO, fmt: str, names: list[str], rows: Iterator[list[Any]], *, header: bool) -> int:
    """Rows as CSV (a header line when ``header``) or JSON Lines; returns how many were written."""
    n = 0
    if fmt == "csv":
        out = csv.writer(f, lineterminator="\n")
        if header:
            out.writerow(names)
        for row in rows:
            out.writerow([_csv_cell(v) for v in row])
            n += 1
        return n
    for row in rows:
        f.write(json.dumps(dict(zip(names, row, strict=True)), ensure_ascii=False) + "\n")
        n += 1
    return n
