"""What the Spark engine's Python workers run: the task functions its jobs hand to ``mapInArrow``,
apart from the driver's module (:mod:`kdissect.engines.spark`), so a worker imports only what the
tasks need. Of pyspark, only ``TaskContext`` (which task and attempt this is).

A worker whose environment has ``KDISSECT_ARROW_ALONE=1`` (the engine's session sets it for its
executors, ``spark.executorEnv``) never imports pandas: pyarrow imports it on the first array it
makes from Python values, only to ask whether they are pandas objects, which they never are here;
the import was 0.85 G of a worker's 2.0 G instructions of start-up (reports/spark-percore-2026-11-29.md).
Importing this module before any array is made keeps pandas out of the process; the tasks build
their Arrow data from Python values and numpy directly.
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from importlib.abc import MetaPathFinder

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext

from kdissect.analysis.frames import ANALYSED_RECORDS
from kdissect.analysis.summary import Figures
from kdissect.engines.heap import keep_freed_heap
from kdissect.engines.local import tune_gc
from kdissect.engines.partition import (
    ENVELOPE_SCHEMA,
    InlinePieces,
    PartitionDecoder,
    StagedPieces,
    decode_partition,
    read_pieces,
    stage_marks,
)
from kdissect.engines.spark_session import ARROW_ALONE
from kdissect.engines.units import read_units, unit_census
from kdissect.tables import merge
from kdissect.tables.writer import ParquetFile


class _NoPandas(MetaPathFinder):
    """Finds no pandas: ``import pandas`` raises ImportError, which pyarrow takes as pandas absent.
    (A ``None`` in ``sys.modules`` would not do: pyarrow's compiled import returns it as the module.)"""

    def find_spec(self, name: str, path: object, target: object = None) -> None:
        if name.partition(".")[0] == "pandas":
            raise ModuleNotFoundError(f"{ARROW_ALONE}=1: no pandas in this process", name=name)


if os.environ.get(ARROW_ALONE) == "1" and "pandas" not in sys.modules:
    sys.meta_path.insert(0, _NoPandas())

WRITTEN = pa.schema([("table", pa.string()), ("path", pa.string()), ("rows", pa.int64()), ("brokers", pa.binary())])
PIECES = pa.schema([("table", pa.string()), ("data", pa.binary())])
CENSUS = pa.schema([("unit", pa.int64()), ("census", pa.binary())])  # a unit's UnitCensus, pickled


@cache
def worker_tuned() -> None:
    """A Spark Python worker's task is one big analysis, as the local engine's process is: the same
    collector settings (``local.tune_gc``; the default rescans a task's rows so often that it cost
    10% of a decode task and 30% of a read task), and the same heap (``heap.keep_freed_heap``: a
    worker, as the command line's process, exists only to run these tasks), once per worker (Spark
    reuses them across tasks)."""
    tune_gc()
    keep_freed_heap()


def arrow_to_spark(table: pa.Table) -> pa.Table:
    """A finished piece in the Arrow types Spark reads for ``spark.spark_schema``."""
    columns = []
    for column in table.columns:
        if pa.types.is_dictionary(column.type):
            column = column.cast(pa.string())
        elif pa.types.is_timestamp(column.type):
            column = column.cast(pa.timestamp("us", tz="UTC"), safe=False)
        columns.append(column)
    return pa.Table.from_arrays(columns, names=table.column_names)


def finished(batches: Iterable[pa.RecordBatch], settled: object) -> Iterator[tuple[str, pa.Table]]:
    """(table name, finished piece) for every piece that envelope rows (``ENVELOPE_SCHEMA``) keep."""
    done = settled.value  # type: ignore[attr-defined]
    for batch in batches:
        for name, data, path in zip(*(batch.column(c).to_pylist() for c in ENVELOPE_SCHEMA.names), strict=True):
            for piece in read_pieces(data, path):
                yield name, merge.finish_piece(name, piece, done)


def analysed_pieces(batches: Iterable[pa.RecordBatch], settled: object) -> Iterator[pa.RecordBatch]:
    """Finished pieces as Arrow IPC (records: those the analysis reads), for the driver's frames."""
    worker_tuned()
    for name, table in finished(batches, settled):
        if name == "records":
            table = table.filter(pc.equal(table[ANALYSED_RECORDS], True))
        if table.num_rows or name == "brokers":
            yield pa.RecordBatch.from_pylist([{"table": name, "data": merge.ipc_bytes(table)}], schema=PIECES)


def finished_batches(batches: Iterable[pa.RecordBatch], name: str, settled: object) -> Iterator[pa.RecordBatch]:
    worker_tuned()
    for _, table in finished(batches, settled):
        yield from arrow_to_spark(table).to_batches()


def broker_batches(batches: Iterable[pa.RecordBatch], settled: object) -> Iterator[pa.RecordBatch]:
    table = merge.first_brokers([table for _, table in finished(batches, settled)])
    yield from arrow_to_spark(table).to_batches()


def write_table(filesystem: object, path: str, table: pa.Table) -> None:
    with filesystem.open_output_stream(path) as stream:  # type: ignore[attr-defined]
        parquet = ParquetFile(stream)
        parquet.write(table)
        parquet.close()


def write_parts(batches: Iterable[pa.RecordBatch], settled: object, filesystem: object, root: str
                ) -> Iterator[pa.RecordBatch]:  # fmt: skip
    """One task's pieces into one Parquet file per table (named by partition: a retry overwrites);
    brokers pieces are returned instead (``brokers``, Arrow IPC) for the driver to keep each once."""
    worker_tuned()
    partition = TaskContext.get().partitionId()
    writers: dict[str, tuple[object, ParquetFile]] = {}
    brokers: list[pa.Table] = []
    try:
        for name, table in finished(batches, settled):
            if name == "brokers":
                brokers.append(table)
                continue
            if name not in writers:
                stream = filesystem.open_output_stream(f"{root}/{name}/part-{partition:05d}.parquet")  # type: ignore[attr-defined]
                writers[name] = (stream, ParquetFile(stream))
            writers[name][1].write(table)
    finally:
        for stream, writer in writers.values():
            writer.close()
            stream.close()  # type: ignore[attr-defined]
    out = [(name, f"{root}/{name}/part-{partition:05d}.parquet", w.rows, None) for name, (_, w) in writers.items()]
    if brokers:  # each broker once per task already (the task's sink): a few rows, with where first seen
        out.append(("brokers", None, 0, merge.ipc_bytes(pa.concat_tables(brokers))))
    if out:
        yield pa.RecordBatch.from_pylist([dict(zip(WRITTEN.names, row, strict=True)) for row in out], schema=WRITTEN)


def read_task(batches: Iterable[pa.RecordBatch], units: object, routed: object,
              decoder: Callable[..., PartitionDecoder] | None, last_ts: int | None
              ) -> Iterator[pa.RecordBatch]:  # fmt: skip
    """Stage 1's task: the units its partition names (one), from the broadcast plan and routes."""
    worker_tuned()
    attempt = TaskContext.get().attemptNumber()
    made = None if decoder is None else (lambda unit: decoder(unit, attempt))
    keys = routed.value  # type: ignore[attr-defined]
    return read_units(batches, units.value, keys.connections, made, last_ts, keys.units)  # type: ignore[attr-defined]


def census_task(batches: Iterable[pa.RecordBatch], units: object) -> Iterator[pa.RecordBatch]:
    worker_tuned()
    for batch in batches:
        for index in batch.column("id").to_pylist():
            found = unit_census(units.value[index])  # type: ignore[attr-defined]
            yield pa.RecordBatch.from_pylist([{"unit": index, "census": pickle.dumps(found)}], schema=CENSUS)


def journal_calls(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The calls of the journal pieces that envelope rows keep, a row each."""
    for batch in batches:
        for data, path in zip(batch.column("data").to_pylist(), batch.column("path").to_pylist(), strict=True):
            for piece in read_pieces(data, path):
                yield from piece.to_batches()


def replay_task(batches: Iterable[pa.RecordBatch], topics: dict[str, str], rows: object) -> Iterator[pa.RecordBatch]:
    worker_tuned()
    for marks in merge.replayed(batches, topics, None if rows is None else rows.value):  # type: ignore[attr-defined]
        yield from marks.to_batches()


def stage_marks_task(batches: Iterable[pa.RecordBatch], root: str) -> Iterator[pa.RecordBatch]:
    worker_tuned()
    return stage_marks(batches, root)


def merged_figures(batches: Iterable[pa.RecordBatch], figures: Callable[[], Figures]) -> Iterator[pa.RecordBatch]:
    merged = figures()
    for batch in batches:
        for data in batch.column("data").to_pylist():
            merged.merge(pickle.loads(data))
    yield pa.RecordBatch.from_pylist([{"table": merge.FIGURES, "data": pickle.dumps(merged)}], schema=PIECES)


def read_and_decode_task(batches: Iterable[pa.RecordBatch], read: Callable[..., Iterator[pa.RecordBatch]],
                         decode: Callable[..., Iterator[pa.RecordBatch]]) -> Iterator[pa.RecordBatch]:  # fmt: skip
    return decode(read(batches))


def decode_task(batches: Iterable[pa.RecordBatch], files: list[str], options: object, tables: list[str],
                staging: str | None, figures: Callable[[], Figures] = Figures, several_inputs: bool | None = None
                ) -> Iterator[pa.RecordBatch]:  # fmt: skip
    worker_tuned()
    context = TaskContext.get()
    task = f"task-{context.partitionId():05d}-{context.attemptNumber()}"
    pieces = InlinePieces() if staging is None else StagedPieces(staging, task)
    yield from decode_partition(batches, files, options, tables, pieces, context.partitionId(), figures,  # type: ignore[arg-type]
                                several_inputs)  # fmt: skip
