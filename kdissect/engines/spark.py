"""The Spark engine: the batch pipeline on PySpark, on the same sans-I/O core as the local engine.
The driver's side; its session is made by :mod:`kdissect.engines.spark_session`, and the task
functions its jobs hand to the Python workers are in :mod:`kdissect.engines.spark_worker`.

Stages (each a Spark stage; nothing per packet or per row reaches the driver):
0. census (several work units, or a file that may hold key log blocks): which connection keys more
   than one unit holds, the captures' key log, the run's latest time (:class:`~kdissect.engines.units.Census`);
1. read: one task per work unit (the largest first) — a file, or a byte range of a large pcap file starting at a proven
   record boundary (:mod:`kdissect.engines.units`) — decoding every connection wholly inside the
   unit there (the same core as a decode task) and turning the others' capture bytes into segment
   rows keyed by their 4-tuple, with their place in capture order;
2. shuffle (only when some connection crosses units): each crossing connection's segments from every
   file meet in one task (:mod:`kdissect.engines.routes`: the tasks given equal shares of the work the
   census counted, the heaviest first), and are sorted there by capture order;
3. decode: reassembly, framing, decoding and pairing by :class:`~kdissect.kafka.pipeline.KafkaPipeline`
   per partition (:mod:`kdissect.engines.partition`), keeping table pieces as Arrow in staged files
   (or, with no staging directory, inline in Spark's cache) for the tables and figures to read once;
4. merge and write: connection ids, topic names and brokers settled across tasks
   (:mod:`kdissect.tables.merge`), then Parquet written by the tasks with pyarrow, in the types the
   local engine writes, or typed DataFrames for a user's own jobs.

The driver collects aggregates only: per-unit counters, topic names, each connection's place in
capture order (8 bytes per TCP connection, from which the final ids are numbered). The transaction
rules' journal (a line per transactional batch and per outcome) is sorted in capture order by Spark
and replayed in a task, which hands the aborted marks to the tasks writing the records, staged
(:func:`aborted_marks`).
"""

from __future__ import annotations

import atexit
import copy
import inspect
import json
import pickle
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, field, replace
from functools import partial

import pandas as pd
import pyarrow as pa
from py4j.protocol import Py4JError, Py4JJavaError
from pyspark import SparkContext, StorageLevel
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema

from kdissect.analysis.frames import taken_frames
from kdissect.analysis.summary import Figures, Summary
from kdissect.dataclass import dataclass
from kdissect.engines import EngineSetupError
from kdissect.engines import spark_worker as tasks
from kdissect.engines.partition import (
    ENVELOPE_SCHEMA,
    MARKS_WRITTEN,
    PartitionDecoder,
    StagedMarks,
    unit_decoder,
)
from kdissect.engines.paths import list_captures
from kdissect.engines.routes import Routes, routes
from kdissect.engines.run import RunResult, RunStats, report_figures
from kdissect.engines.spark_classes import ClassArchive, keep_written
from kdissect.engines.spark_session import Starting, on_this_machine
from kdissect.engines.storage import file_system, remove_tree
from kdissect.engines.units import (
    SEGMENT_SCHEMA,
    Census,
    Unit,
    largest_first,
    may_hold_secrets,
    plan_units,
    segment_order,
)
from kdissect.options import Options
from kdissect.sources.files import in_time_order
from kdissect.sources.shapes import SourceStats
from kdissect.tables import merge
from kdissect.tables.arrow import to_arrow
from kdissect.tables.columns import TABLES
from kdissect.tables.frames import from_arrow
from kdissect.tls.keylog import KeyLog

SPLIT_BYTES = 128 << 20  # pcap files larger than this are read as several ranges
ARROW_BATCH_BYTES = 32 << 20
_SPARK_TYPES = {
    "int64": T.LongType(), "int32": T.IntegerType(), "int16": T.ShortType(), "int8": T.ByteType(),
    "float64": T.DoubleType(), "bool": T.BooleanType(), "string": T.StringType(), "category": T.StringType(),
    "timestamp": T.TimestampType(), "bytes": T.BinaryType(),
    "headers": T.ArrayType(T.StructType([T.StructField("key", T.StringType()),
                                         T.StructField("value", T.BinaryType())])),
}  # fmt: skip
_WRITTEN = from_arrow_schema(tasks.WRITTEN)
_JOURNAL, _MARKS = from_arrow_schema(merge.JOURNAL_SCHEMA), from_arrow_schema(merge.MARKS_SCHEMA)
# PySpark 4 keeps a local checkpoint at the storage level given (:func:`kept`); 3.5 cannot: it keeps the cache.
_LEVELED_CHECKPOINT = "storageLevel" in inspect.signature(DataFrame.localCheckpoint).parameters


def spark_schema(table: str) -> T.StructType:
    """The table's Spark schema, from the one column definition (categories become strings,
    timestamps Spark's microsecond timestamps)."""
    return T.StructType([T.StructField(name, _SPARK_TYPES[kind]) for name, kind in TABLES[table]])


# Quoted from a worker's import, unquoted from ``python -m`` (a daemon module: spark_daemon).
_MISSING_MODULE = re.compile(r"No module named '?([\w.]+)'?")


@contextmanager
def executors_set_up() -> Iterator[None]:
    """A job that fails because the executors' Python lacks a module (kdissect, most often) ends in
    one line naming the fix instead of a Java and a Python stack trace."""
    try:
        yield
    except (PySparkException, Py4JJavaError) as exc:
        missing = _MISSING_MODULE.search(str(exc))
        if missing is None:
            raise
        raise EngineSetupError(
            f"the Spark executors' Python cannot import {missing.group(1)}: install kdissect (and its "
            "dependencies) there, or ship a packed environment with --archives ENV.tar.gz#env "
            "--conf spark.pyspark.python=./env/bin/python (see docs/spark.md)") from None


@dataclass
class Decoded:
    """Captures decoded on Spark: the tasks' table pieces (kept), and what the driver settled."""

    spark: SparkSession
    envelope: DataFrame
    files: list[str]
    tables: list[str]
    settling: Callable[[], merge.Settled]  # connection ids, topic names, aborted transactions
    unit_stats: list[tuple[int, dict]]  # (file index, counters) per work unit
    stray_segments: int  # segments the tasks' reassemblers could place in no connection
    figures: Figures  # the summary's figures, merged from the tasks'
    release: Callable[[], None]  # drops the kept envelope (:func:`kept`)
    _broadcast: object = field(default=None, repr=False)
    _settled: merge.Settled | None = field(default=None, repr=False)

    @property
    def settled(self) -> merge.Settled:
        """What the driver settled, the aborted marks found when first asked for (a run that finishes
        no records piece, such as ``analyze`` without ``--out``, never replays the journal)."""
        if self._settled is None:
            self._settled = self.settling()
        return self._settled

    @property
    def source(self) -> SourceStats:
        """The sources' counters summed over every work unit."""
        total = SourceStats()
        for _, stats in self.unit_stats:
            for name in asdict(total):
                setattr(total, name, getattr(total, name) + stats[name])
        return total

    @property
    def unreadable(self) -> list[tuple[str, str]]:
        """(file, why) of each file that is not a capture or could not be read, in the order given."""
        ordered = sorted(self.unit_stats, key=lambda unit: unit[0])
        return list(dict.fromkeys((self.files[i], stats["error"]) for i, stats in ordered if stats["error"]))

    def _shipped(self) -> object:
        if self._broadcast is None:
            self._broadcast = self.spark.sparkContext.broadcast(self.settled)
        return self._broadcast

    def table(self, name: str, envelope: DataFrame | None = None) -> DataFrame:
        """Table ``name`` as a DataFrame of :func:`spark_schema` (from ``envelope``: some of the pieces)."""
        settled = self._shipped()
        pieces = (self.envelope if envelope is None else envelope).filter(F.col("table") == name)
        if name == "brokers":
            return pieces.coalesce(1).mapInArrow(partial(tasks.broker_batches, settled=settled), spark_schema(name))
        return pieces.mapInArrow(partial(tasks.finished_batches, name=name, settled=settled), spark_schema(name))

    def write(self, out: str, tables: Iterable[str]) -> list[tuple[str, int]]:
        """Parquet files under ``out/<table>/`` (one per task and table), in the local engine's types:
        (directory, rows) per table. One pass over the decoded pieces writes every table; the tasks'
        first-seen brokers (a few rows each) come back to be kept once, in one file."""
        filesystem, root = file_system(out)
        names = list(tables)
        for name in names:
            filesystem.create_dir(f"{root}/{name}", recursive=True)
            filesystem.delete_dir_contents(f"{root}/{name}")
        target = partial(tasks.write_parts, settled=self._shipped(), filesystem=filesystem, root=root)
        parts = self.envelope.filter(F.col("table").isin(names)).mapInArrow(target, _WRITTEN).collect()
        rows = dict.fromkeys(names, 0)
        for part in parts:
            rows[part["table"]] += part["rows"]
        filed = {part["table"] for part in parts if part["path"]}
        if "brokers" in names:
            brokers = merge.first_brokers([merge.read_ipc(p["brokers"]) for p in parts if p["table"] == "brokers"])
            tasks.write_table(filesystem, f"{root}/brokers/part-00000.parquet", brokers)
            rows["brokers"] = brokers.num_rows
            filed.add("brokers")
        for name in set(names) - filed:  # every table gets a file, as with the local engine
            tasks.write_table(filesystem, f"{root}/{name}/part-00000.parquet", to_arrow(name, _empty(name)))
        return [(out.rstrip("/") + f"/{name}/", rows[name]) for name in names]

    def frames(self, tables: Iterable[str] | None = None) -> dict[str, pd.DataFrame]:
        """Every table (or those of ``tables``) brought to the driver as the DataFrame the local engine
        gives the analysis (records: only those the analysis reads, picked in the tasks), from one job."""
        names = [name for name in self.tables if tables is None or name in set(tables)]
        task = partial(tasks.analysed_pieces, settled=self._shipped())
        got = self.envelope.filter(F.col("table").isin(names)).mapInArrow(task, from_arrow_schema(tasks.PIECES)
                                                                           ).collect()  # fmt: skip
        out = {}
        for name in names:
            pieces = [merge.read_ipc(r["data"]) for r in got if r["table"] == name]
            if name == "brokers":
                table = merge.first_brokers(pieces)
            else:
                table = pa.concat_tables(pieces) if pieces else to_arrow(name, _empty(name))
            out[name] = from_arrow(name, table)
        return out

    def stats(self) -> RunStats:
        """What was read, as every engine's result says it."""
        return RunStats(len(self.files), self.source, ignored_segments=self.stray_segments,
                        unreadable=self.unreadable)  # fmt: skip

    def summary(self) -> Summary:
        """The summary's figures: each task's, counted by the local engine's code as it decoded, merged."""
        return self.figures.summary(self.source, self.stray_segments)

    def close(self) -> None:
        self.release()


def _empty(name: str) -> dict[str, list]:
    return {column: [] for column, _ in TABLES[name]}


def segment_rows(spark: SparkSession, units: list[Unit], census: Census | None = None,
                 decoder: Callable[..., PartitionDecoder] | None = None, partitions: int = 1) -> DataFrame:  # fmt: skip
    """Stage 1: one task per work unit (in the order of ``units``: task N reads the Nth), segment rows
    out; with ``decoder`` (``partition.unit_decoder``
    but for the unit and attempt), every connection the ``census`` does not find crossing units
    decoded in the task and only its pieces going on. The crossing connections' rows are keyed for
    :func:`by_connection` into ``partitions`` to give each decode task an equal share, and the units'
    pieces to give each write task one (``routes``)."""
    read = _reader(spark, units, census, decoder, partitions)
    return _unit_ids(spark, units).mapInArrow(read, from_arrow_schema(SEGMENT_SCHEMA))


def _unit_ids(spark: SparkSession, units: list[Unit]) -> DataFrame:
    return spark.range(0, len(units), 1, max(1, len(units)))


def _reader(spark: SparkSession, units: list[Unit], census: Census | None,
            decoder: Callable[..., PartitionDecoder] | None, partitions: int
            ) -> Callable[..., Iterator[pa.RecordBatch]]:  # fmt: skip
    context = spark.sparkContext
    routed = context.broadcast(routes(census.crossing, census.own, partitions) if census else Routes({}, {}))
    return partial(tasks.read_task, units=context.broadcast(units), routed=routed, decoder=decoder,
                   last_ts=census.last_ts if census else None)  # (broadcasts: sent once per executor)  # fmt: skip


def census(spark: SparkSession, units: list[Unit]) -> Census | None:
    """The census of every unit merged (``units.unit_census``, a first pass with the native reader, a few
    rows per unit back); None when there is one unit that holds no secrets: nothing crosses then.
    One task per slot of Spark's default parallelism, not per unit: a unit's census takes 0.02-0.1 CPU-s,
    and each task cost the JVM and the worker about 50 ms more (reports/spark-whole-2026-11-29.md)."""
    if len(units) == 1 and not may_hold_secrets(units[0].path):
        return None
    context = spark.sparkContext
    task = partial(tasks.census_task, units=context.broadcast(units))
    slices = max(1, min(len(units), context.defaultParallelism))
    got = spark.range(0, len(units), 1, slices).mapInArrow(task, from_arrow_schema(tasks.CENSUS)).collect()
    return Census.merge(pickle.loads(row["census"]) for row in sorted(got, key=lambda row: row["unit"]))


def by_connection(segments: DataFrame, partitions: int, files: int = 1) -> DataFrame:
    """Stage 2: each 4-tuple's rows from every file in one partition, in capture order (of ``files`` files:
    ``units.segment_order``)."""
    return segments.repartition(partitions, "key").sortWithinPartitions(*segment_order(files))


def with_secrets(options: Options, blocks: list[bytes]) -> Options:
    """The options with the captures' Decryption Secrets Blocks (the census', in capture order) added to
    their key log, as the local engine adds them: the secrets' text reaches the driver and the tasks'
    options, never a row of the output."""
    if not blocks:
        return options
    keylog = copy.deepcopy(options.tls_keylog) if options.tls_keylog is not None else KeyLog()
    for block in blocks:  # each block's text complete in itself, as KafkaPipeline.add_secrets reads it
        keylog.feed(block)
        keylog.close()
    return replace(options, tls_keylog=keylog)


def decode(spark: SparkSession, paths: Iterable[str], *, options: Options | None = None,
           tables: Iterable[str] | None = None, split_bytes: int = SPLIT_BYTES, partitions: int | None = None,
           staging: str | None = None, figures: Callable[[], Figures] = Figures, records_read: bool = True
           ) -> Decoded:  # fmt: skip
    """Read and decode ``paths`` (files, directories, globs, URIs) on ``spark``. The decoded pieces
    are kept in staged files under ``staging`` (a new directory every executor can write and read:
    local disk in local mode, HDFS, S3 or a shared file system on a cluster; the caller removes it
    when done), or, without it, in Spark's cache until :meth:`Decoded.close` (slower: every piece
    then moves through the JVM). ``records_read`` False: the caller reads the records only through the
    figures' journal (a report), and the driver keeps the aborted marks of the records it holds only
    (the records table of the result is then not to be read)."""
    options = options or Options()
    wanted = list(tables) if tables is not None else list(TABLES)
    # Rows here are whole segments and table pieces (MBs each): Arrow batches are bounded by bytes, or
    # 10,000 rows of them (the default bound) fill the JVM heap.
    spark.conf.set("spark.sql.execution.arrow.maxBytesPerBatch", str(ARROW_BATCH_BYTES))
    spark.conf.set("spark.sql.inMemoryColumnarStorage.batchSize", "16")  # cached pieces: a few MB each
    found = list_captures(paths, uris=True, missing_ok=True)
    sizes = dict(found)
    found = [(path, sizes[path]) for path in in_time_order([path for path, _ in found])]  # as the local engine
    files = [path for path, _ in found]
    partitions = partitions or max(2, 2 * spark.sparkContext.defaultParallelism)
    units = plan_units(found, split_bytes)
    found_in = census(spark, units)
    reading = largest_first(units, sizes)  # (the read tasks' order)
    options = with_secrets(options, found_in.secrets if found_in else [])
    decoder = partial(unit_decoder, files=files, options=options, tables=wanted, staging=staging, figures=figures,
                      first_task=max(partitions, len(units)))  # (numbered after every decode task)  # fmt: skip
    task = partial(tasks.decode_task, files=files, options=options, tables=wanted, staging=staging, figures=figures)
    if found_in is not None and found_in.crossing:
        crossed = partial(task, several_inputs=found_in.repeats)
        decoded = (by_connection(segment_rows(spark, reading, found_in, decoder, partitions), partitions, len(files))
                   .mapInArrow(crossed, from_arrow_schema(ENVELOPE_SCHEMA)))  # fmt: skip
    else:  # no connection crosses units: each read task passes its own rows (its pieces, the unit's
        # anomalies and counters) to a decoder in the same task, with no shuffle and no second worker
        whole = partial(tasks.read_and_decode_task, read=_reader(spark, reading, found_in, decoder, 1), decode=task)
        decoded = _unit_ids(spark, reading).mapInArrow(whole, from_arrow_schema(ENVELOPE_SCHEMA))
    envelope, release = kept(decoded, StorageLevel.DISK_ONLY if staging is None else StorageLevel.MEMORY_AND_DISK)
    # The summary's figures are a few KB per task, merged here; a report's (each task's journal may
    # hold journal_records rows) are merged in one task, one at a time, and only the result comes here.
    summary_only = figures is Figures
    side_pieces = F.col("table").startswith("_")
    # The journal's pieces stay with the tasks (inline ones too): the driver learns only that some exist.
    side = (envelope.filter(side_pieces if summary_only else side_pieces & (F.col("table") != merge.FIGURES))
            .select("table", F.when(F.col("table") != merge.JOURNAL, F.col("data")).alias("data"), "path")
            .collect())  # fmt: skip
    opened = merge.Opened.of_pieces(merge.read_ipc(r["data"]) for r in side if r["table"] == merge.OPENED)
    topics = merge.topic_names(merge.read_ipc(r["data"]) for r in side if r["table"] == merge.TOPICS)
    task_stats = [json.loads(r["data"]) for r in side if r["table"] == merge.STATS]
    unit_stats = [(i, json.loads(s)) for task in task_stats for i, s in task["units"]]
    if summary_only:
        merged = figures()
        for r in side:
            if r["table"] == merge.FIGURES:
                merged.merge(pickle.loads(r["data"]))
    else:
        task = partial(tasks.merged_figures, figures=figures)
        pieces = envelope.filter(F.col("table") == merge.FIGURES).coalesce(1)
        got = pieces.mapInArrow(task, from_arrow_schema(tasks.PIECES))
        merged = pickle.loads(got.collect()[0]["data"])
    # Records read only through the figures' journal (a report): the marks of the records it holds do.
    journal = None if records_read else getattr(merged, "journal", None)
    rows = None if journal is None else journal.numbers()
    marks_root = f"{staging.rstrip('/')}/_marks" if staging is not None and rows is None else None
    journaled = any(r["table"] == merge.JOURNAL for r in side)
    marks = partial(aborted_marks, spark, envelope, topics, rows, marks_root, partitions) if journaled else list
    return Decoded(spark, envelope, files, wanted, partial(_settle, opened, topics, marks), unit_stats,
                   sum(t["stray"] for t in task_stats), merged, release)  # fmt: skip


def kept(frame: DataFrame, level: StorageLevel) -> tuple[DataFrame, Callable[[], None]]:
    """``frame`` computed once, by the first job that reads it, and kept at ``level`` for the jobs after;
    and what drops it. On a cluster, in Spark's cache, which recomputes what a lost executor held. In local
    mode, where no executor is lost, as a local checkpoint: its rows kept as rows, not in the cache's
    columns, whose reader is code Spark generates and compiles with Janino for every query that reads
    them, the only code left to generate with the session's code generation off (``spark_session``):
    Janino's first compile in a JVM loads and runs its compiler cold (reports/spark-fixed-2026-11-30.md)."""
    if not (_LEVELED_CHECKPOINT and on_this_machine(frame.sparkSession.sparkContext.master)):
        persisted = frame.persist(level)
        return persisted, persisted.unpersist
    checkpoint = frame.localCheckpoint(eager=False, storageLevel=level)
    rows = checkpoint._jdf.queryExecution().logical().rdd()  # (the plan is the checkpoint's rows: a LogicalRDD)
    return checkpoint, partial(rows.unpersist, False)


def _settle(opened: merge.Opened, topics: dict[str, str], marks: Callable[[], merge.Marks | merge.TaskMarks]
            ) -> merge.Settled:  # fmt: skip
    return merge.Settled(opened, topics, marks())


def aborted_marks(spark: SparkSession, envelope: DataFrame, topics: dict[str, str], rows: object, root: str | None,
                  partitions: int) -> merge.Marks | merge.TaskMarks:  # fmt: skip
    """The marks of aborted transactions: every task's journal replayed in capture order, on Spark. Its
    calls are sorted by Spark (which spills as it needs) into one task that replays them streamed
    (``merge.replayed``), so no journal reaches the driver. The marks are staged under ``root``, a
    file per task that numbered their rows, which the tasks finishing its records pieces read
    (:class:`~kdissect.engines.partition.StagedMarks`); without ``root`` they come to the driver:
    with ``rows`` (a report's journal's ``ROW`` numbers, ascending) those of these rows only, a
    bounded number, else all of them (a run with no staging directory)."""
    calls = envelope.filter(F.col("table") == merge.JOURNAL).mapInArrow(tasks.journal_calls, _JOURNAL)
    ordered = calls.repartition(1).sortWithinPartitions(*merge.JOURNAL_ORDER)
    held = None if rows is None else spark.sparkContext.broadcast(rows)
    marks = ordered.mapInArrow(partial(tasks.replay_task, topics=topics, rows=held), _MARKS)
    if root is None:
        return [(row["first"], row["rows"], row["rule"]) for row in marks.collect()]
    by_task = marks.repartition(partitions, "task").sortWithinPartitions("task")
    staged = by_task.mapInArrow(partial(tasks.stage_marks_task, root=root), from_arrow_schema(MARKS_WRITTEN)).collect()
    return StagedMarks(root, frozenset(row["task"] for row in staged))


def read_captures(
    spark: SparkSession,
    paths: Iterable[str] | str,
    *,
    options: Options | None = None,
    split_bytes: int = SPLIT_BYTES,
    staging: str | None = None,
) -> dict[str, DataFrame]:
    """Every table of the captures as a Spark DataFrame (:func:`spark_schema`), for your own jobs.

    Decoding runs once, now, and its pieces stay for these DataFrames: under ``staging`` if given
    (a new directory every executor can reach, yours to delete), in a temporary directory removed
    when Python exits if Spark runs on this machine (``local[...]``), else in Spark's cache."""
    if staging is None:
        staging = _temporary_staging(spark)
        if staging is not None:
            atexit.register(shutil.rmtree, staging, True)
    with executors_set_up():
        decoded = decode(spark, [paths] if isinstance(paths, str) else paths, options=options,
                         split_bytes=split_bytes, staging=staging)  # fmt: skip
    return {name: decoded.table(name) for name in TABLES}


def _temporary_staging(spark: SparkSession) -> str | None:
    """A new temp directory for the pieces when the executors run here, else None."""
    return tempfile.mkdtemp(prefix="kdissect-staging-") if on_this_machine(spark.sparkContext.master) else None


def analyze(captures: list[str], *, spark: Starting, out: str | None, tables: list[str], options: Options
            ) -> RunResult:  # fmt: skip
    """The command line's run on the session ``spark`` is making: decode, figures, Parquet under ``out``;
    the session is stopped after."""
    with _decoded(captures, spark, out, tables, options) as decoded:
        written = decoded.write(out, tables) if out else []
        return RunResult(decoded.stats(), decoded.summary(), written)


def report_input(captures: list[str], *, spark: Starting, options: Options) -> RunResult:
    """The report's figures, counted in the tasks by the local engine's code and merged (the summary
    among them), and the tables the report still reads as rows, decoded on Spark and brought to the
    driver as frames. Not the tables the report reads through its figures (connections, batches, the
    exchanges and their own rows, the transactional records and events, whose bounded journal each
    task keeps): the tasks name some topics by id only and number connections themselves, and the
    driver settles their figures' keys (:meth:`ReportFigures.settle`)."""
    with _decoded(captures, spark, None, list(TABLES), options, partial(report_figures, options),
                  records_read=False) as decoded:  # fmt: skip
        return report_of(decoded)


def report_of(decoded: Decoded) -> RunResult:
    """:func:`report_input`'s result from captures decoded with the report's figures (``records_read``
    False): the tables the report reads as rows as frames, the figures settled."""
    figures = decoded.figures
    frames = decoded.frames([name for name in TABLES if name not in figures.counted_only])  # type: ignore[attr-defined]
    settled = decoded.settled
    figures.settle(settled.opened.id_of, settled.topics, settled.aborted)  # type: ignore[attr-defined]
    frames.update(taken_frames(figures.kept_tables()))  # type: ignore[attr-defined]
    return RunResult(decoded.stats(), decoded.summary(), frames=frames, figures=figures)


@contextmanager
def _decoded(captures: list[str], starting: Starting, out: str | None, tables: list[str], options: Options,
             figures: Callable[[], Figures] = Figures, records_read: bool = True) -> Iterator[Decoded]:  # fmt: skip
    """The session ``starting`` makes and the captures decoded on it (:func:`decode`), for one command;
    all of it gone after."""
    try:
        spark = starting.session()
        # Pieces staged in this machine's temp directory in local mode, beside the output on a cluster
        # (which its executors write anyway), or with neither, in Spark's cache.
        staging = _temporary_staging(spark) or (f"{out.rstrip('/')}/_staging" if out else None)
        try:
            with executors_set_up():
                decoded = decode(spark, captures, options=options, tables=tables, staging=staging, figures=figures,
                                 records_read=records_read)  # fmt: skip
                try:
                    yield decoded
                finally:
                    decoded.close()
        finally:
            if staging is not None:
                remove_tree(staging)
    finally:
        starting.stop()
        if starting.classes is not None and starting.classes.writing is not None and SparkContext._gateway:
            _jvm_exits(starting.classes, starting.verbose)


def _jvm_exits(classes: ClassArchive, verbose: bool) -> None:
    """The JVM of this process ends now, writing the class archive; the next session starts another."""
    gateway = SparkContext._gateway
    SparkContext._gateway = SparkContext._jvm = None
    with suppress(Py4JError):
        gateway.shutdown()  # type: ignore[union-attr]
    keep_written(classes, gateway.proc, verbose)  # type: ignore[union-attr]
