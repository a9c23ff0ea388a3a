"""One request, one engine call: what a face asks of a batch engine (the local one or Spark), and the
call that lists its inputs, runs the engine and applies the run module's rule for input nothing could
be read from. The command line builds a :class:`Request` from its arguments, calls :func:`run` and
prints the :class:`~kdissect.engines.run.RunResult`; it never wires a stage itself.
"""

from __future__ import annotations

import glob
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import field
from pathlib import Path
from typing import Any

from kdissect.analysis.filters import FilterError as FilterError  # the filter language's one error, for faces
from kdissect.dataclass import dataclass
from kdissect.engines import RequestError, local
from kdissect.engines.paths import list_captures
from kdissect.engines.run import RunResult, RunStats, check_readable, report_figures
from kdissect.events import Exchange
from kdissect.options import Options
from kdissect.tables.columns import TABLES
from kdissect.tables.writer import FORMATS as FORMATS
from kdissect.tables.writer import FORMATS_HELP as FORMATS_HELP

TABLE_NAMES = tuple(TABLES)  # every table a run can write, in their order
Progress = Callable[[int], None]  # bytes read since the last call
ProgressBar = Callable[[int], AbstractContextManager[Progress | None]]  # total bytes -> a progress callback
# From this much input on, a Spark cluster is worth suggesting: a Spark run costs ~17 s before any byte
# and decodes ~34 MB/s per core against the local engine's ~80 MB/s, so it overtakes the local engine
# from about 2 GB on 8 cores (bench/bench_spark.py, reports/spark-benchmark-2026-11-24.md).
SPARK_HINT_BYTES = 2 << 30


def _quiet(line: str) -> None:
    """A request's default ``notify``: say nothing."""


@dataclass(frozen=True)
class SparkSettings:
    """Where and how the Spark engine runs (``--master``, ``--conf``/``--archives``, ``-v``)."""

    master: str = "local[*]"
    conf: Mapping[str, str] = field(default_factory=dict)
    verbose: bool = True


@dataclass
class Request:
    """One batch run as a face asks for it. ``out`` given: the ``tables`` (default all) are written
    there as ``format``; ``report``: the report's tables come back as frames; neither: the figures
    alone. ``spark`` given: the Spark engine runs it, else the local engine. ``notify`` receives the
    one-line notes a user should see (a file named twice, a hint), ``progress`` makes a progress bar."""

    captures: Sequence[str]
    options: Options = field(default_factory=Options)
    tables: Sequence[str] | None = None
    out: str | None = None
    format: str = "parquet"
    report: bool = False
    spark: SparkSettings | None = None
    progress: ProgressBar | None = None
    notify: Callable[[str], None] = _quiet


def run(request: Request) -> RunResult:
    """The request run by its engine; raises ``NothingReadable`` when nothing could be read,
    ``RequestError`` for inputs that do not exist, ``EngineSetupError`` for an engine that cannot run."""
    if request.spark is not None:
        return _run_spark(request, request.spark)
    captures = local_inputs(request.captures, request.notify)
    local.tune_gc()
    if request.report:
        from kdissect.analysis.frames import taken_frames

        # The tables the report reads only through its figures are handed to them as they grow and
        # dropped; of the records, the figures keep the transactional ones, bounded (analysis.journal).
        figures = report_figures(request.options)
        result = local.analyze(captures, local.in_figure_pieces(request.options), figures=figures,
                               counted_only=figures.counted_only)
        check_readable(result.stats, captures)
        result.tables.update(figures.kept_tables())
        result.frames = taken_frames(result.tables)  # the tables' column lists are freed one by one
        result.figures = figures
        result.inputs = [str(c) for c in captures]
        return result
    _hint_spark(captures, request.notify)
    with _bar(request, captures) as progress:
        if request.out is None:  # the summary alone: only what it shows is built
            result = local.summary(captures, request.options, progress=progress)
        else:
            from kdissect.tables.writer import TableWriter

            writer = TableWriter(Path(request.out), request.format)
            result = local.analyze(captures, request.options, tables=request.tables, writer=writer,
                                   progress=progress)  # fmt: skip
    check_readable(result.stats, captures)
    result.inputs = [str(c) for c in captures]
    return result


def _bar(request: Request, captures: list[Path]) -> AbstractContextManager[Progress | None]:
    return request.progress(_total_size(captures)) if request.progress is not None else nullcontext()


def _run_spark(request: Request, spark: SparkSettings) -> RunResult:
    if not spark.verbose:  # before pyspark is imported
        from kdissect.engines.spark_quiet import hide_pandas_warning

        hide_pandas_warning()
    captures = spark_inputs(request.captures, request.notify)
    # Spark's JVM starts now, on a thread, and boots while this thread imports the engine and plans the run.
    from kdissect.engines.spark_session import Starting

    starting = Starting(spark.master, spark.conf, spark.verbose)
    from kdissect.engines import spark as engine

    if request.report:
        result = engine.report_input(captures, spark=starting, options=request.options)
    else:
        tables = list(request.tables) if request.tables is not None else list(TABLES)
        result = engine.analyze(captures, spark=starting, out=request.out, tables=tables, options=request.options)
    check_readable(result.stats, [Path(c) for c in captures])
    result.inputs = captures
    return result


def local_inputs(captures: Sequence[str], notify: Callable[[str], None] = _quiet) -> list[Path]:
    """The capture files named (a directory: the capture files in it), each file once."""
    try:
        files, repeats = local.distinct_files(local.capture_paths(captures))
    except OSError as exc:  # a missing path, or a directory without captures: a bad argument
        raise RequestError(str(exc)) from None
    _repeats(repeats, notify)
    return files


def spark_inputs(captures: Sequence[str], notify: Callable[[str], None] = _quiet) -> list[str]:
    """The Spark engine's inputs: as the local engine's, and remote URIs (hdfs://, s3a://) and globs."""
    try:
        listed = [path for path, _ in list_captures(captures, uris=True)]
    except OSError as exc:  # a missing path, a directory without captures, a file system out of reach
        raise RequestError(str(exc)) from None
    # A local file named twice (a directory and a file in it, a link) is read once, as the local engine reads it.
    local_files = [Path(p) for p in listed if "://" not in p and not glob.has_magic(p)]
    files, repeats = local.distinct_files(local_files)
    _repeats(repeats, notify)
    kept = {id(p) for p in files}
    out = iter(local_files)
    return [p for p in listed if "://" in p or glob.has_magic(p) or id(next(out)) in kept]


def _repeats(repeats: list[tuple[str, str]], notify: Callable[[str], None]) -> None:
    """Files named more than once (read once): one line each."""
    for path, same in repeats:
        notify(f"{path} is {same} again: read once")


def _total_size(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in paths)


def _hint_spark(paths: list[Path], notify: Callable[[str], None]) -> None:
    total = _total_size(paths)
    if total >= SPARK_HINT_BYTES:
        notify(f"hint: {total / (1 << 20):,.0f} MiB of captures; `--engine spark --master URL` spreads the work "
               "over a Spark cluster")


class Shown:
    """``show``'s engine call: each exchange of the request's captures with its row, those the filter
    expression ``where`` accepts (compiled at once: a bad one raises ``FilterError`` before any read).
    Iterating reads the captures once; at the end, the rule for input nothing could be read from
    applies, and ``stats`` holds what was read."""

    def __init__(self, request: Request, where: str | None) -> None:
        from kdissect.analysis.filters import compile_filter

        self.captures = local_inputs(request.captures, request.notify)
        self.options = request.options
        self.stats = RunStats()
        self.where = compile_filter(where, {**dict(TABLES["exchanges"]), "topics": "list"}) if where else None
        local.tune_gc()

    def __iter__(self) -> Iterator[tuple[Exchange, dict[str, Any]]]:
        yield from local.exchanges(self.captures, self.options, where=self.where, stats=self.stats, topics=True)
        check_readable(self.stats, self.captures)
