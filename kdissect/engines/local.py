"""The local engine: capture files -> sources -> the Kafka pipeline -> table sink -> figures.

Its runs are wired by the run module (:mod:`kdissect.engines.run`), as the live engine's and the
Spark tasks' are. ``analyze`` is a whole run (tables, files, figures); ``events``
and ``exchanges`` stream the same core's output for ``show`` and for library users. Files
are read in chunks and streamed, so a multi-GB capture never sits in memory.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from functools import partial
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from kdissect.analysis.summary import Figures
from kdissect.engines.paths import list_captures
from kdissect.engines.run import (  # RunStats, RunResult, no_capture: the run's own, named here for callers
    RunResult,
    RunStats,
    TableRun,
    check_some_capture,
    unreadable_file,
)
from kdissect.events import Anomaly, Exchange, KafkaEvent
from kdissect.kafka.pipeline import KafkaPipeline
from kdissect.options import Options
from kdissect.sources.files import DEFAULT_CHUNK_SIZE, capture_batches, merged_chunk_size, timeline
from kdissect.sources.interleave import merge_runs
from kdissect.sources.segment import TcpSegment, payload_cut
from kdissect.sources.shapes import (
    TLS_KEY_LOG,
    CaptureFormatError,
    DecryptionSecrets,
    SourceAnomaly,
    SourceEvent,
    SourceStats,
)
from kdissect.tables.columns import TABLES
from kdissect.tables.sink import exchange_row, exchange_topics

if TYPE_CHECKING:
    from kdissect.tables.writer import TableWriter

PathArg = str | PathLike[str]
Progress = Callable[[int], None]  # called with bytes read since the last call
ALWAYS = ("connections", "anomalies")  # tables every run keeps: the summary reads them
# What the terminal summary reads, all a run without output files builds (``summary``). A headline
# figure that needs another table (a report's top partitions, say) adds that table here, and
# ``analysis.summary.Figures.add`` takes its pieces as they are handed over.
SUMMARY_TABLES = ("exchanges", "connections", "anomalies")
# A run that hands a table to its figures and drops it (the summary, the report) does so in pieces of
# this many rows: what is in flight at once is its peak memory (two 50 MB chatty files' report: 347 MB
# at 50,000 rows, 221 MB at 10,000, the same CPU seconds), as a Spark task's pieces are (engines.partition).
FIGURES_PIECE_ROWS = 10_000
_SEGMENT = frozenset((TcpSegment,))  # a run whose items are all of these goes to the core in slices
SEGMENT_BATCH = 1024  # segments handed to the core at once (the native lanes take runs of them in one call)
# ... or fewer, once they carry this many payload bytes: a batch's rows are made in one call and held until it
# returns, about 8 bytes per payload byte of record-heavy traffic (1,024 segments of 64 KiB held 490 MB more)
SEGMENT_BATCH_BYTES = 4 << 20


def capture_paths(paths: Iterable[PathArg]) -> list[Path]:
    """The capture files named (:func:`kdissect.engines.paths.list_captures`: a directory stands for
    its capture files). Raises ``FileNotFoundError`` or ``IsADirectoryError`` for a bad argument, so
    it fails at once, not at the first read."""
    return [Path(path) for path, _ in list_captures(paths)]


def distinct_files(paths: Iterable[Path]) -> tuple[list[Path], list[tuple[str, str]]]:
    """The files once each, and (name, the name it repeats) of each later name of a file already
    listed (the same file named twice, a directory and a file in it, a link to it). Told apart by the
    file, not its name: a file read twice would repeat all its packets under one input's name, which
    the duplicate-packet rule (:mod:`kdissect.sources.duplicates`) cannot see."""
    kept: list[Path] = []
    first: dict[tuple[int, int], Path] = {}
    repeats: list[tuple[str, str]] = []
    for path in paths:
        st = path.stat()
        seen = first.setdefault((st.st_dev, st.st_ino), path)
        if seen is path:
            kept.append(path)
        else:
            repeats.append((str(path), str(seen)))
    return kept, repeats


class _CountingReader:
    """A binary file that reports how much was read (for progress bars)."""

    def __init__(self, raw: BinaryIO, progress: Progress) -> None:
        self._raw = raw
        self._progress = progress

    def read(self, n: int = -1) -> bytes:
        data = self._raw.read(n)
        self._progress(len(data))
        return data


def source_anomaly(a: SourceAnomaly, source: str | None = None) -> Anomaly:
    """A capture-level anomaly as a Kafka-layer event of the file ``source``."""
    return Anomaly(a.kind, None, None, a.offset, None, a.ts_ns, a.message, source)


def _read_file(
    path: PathArg, options: Options, stats: RunStats, progress: Progress | None, chunk_size: int = DEFAULT_CHUNK_SIZE
) -> Iterator[list[SourceEvent]]:
    """One file's segments and anomalies in batches (``capture_batches``), counted into ``stats``,
    within the sources' bounds of ``options``, read ``chunk_size`` bytes at a time. A file that is not
    a capture is skipped (named in ``stats.unreadable`` and an anomaly row) and the others read."""
    stats.files += 1
    source_stats = SourceStats()
    try:
        with Path(path).open("rb") as raw:
            reader: BinaryIO = _CountingReader(raw, progress) if progress else raw  # type: ignore[assignment]
            yield from capture_batches(
                reader,
                chunk_size=chunk_size,
                stats=source_stats,
                defrag=options.defrag(),
                gunzip_ratio=options.gunzip_ratio,
                gunzip_free=options.gunzip_free,
            )
    except CaptureFormatError as exc:
        stats.unreadable.append((str(path), str(exc)))
        yield [unreadable_file(str(path), exc, source_stats)]
    stats.add(source_stats)


def feed_item(pipeline: KafkaPipeline, item: SourceEvent) -> list[KafkaEvent]:
    """One source event into the core: a segment, key material for the TLS stage, or an anomaly row."""
    if type(item) is TcpSegment:
        return pipeline.feed(item)
    if type(item) is DecryptionSecrets:
        if item.secrets_type == TLS_KEY_LOG:
            pipeline.add_secrets(item.data)
        return []
    assert isinstance(item, SourceAnomaly)
    return [source_anomaly(item, pipeline.source)]


def _time_of(item: SourceEvent) -> int | None:
    return None if type(item) is DecryptionSecrets else item.ts_ns  # a secrets block has no time


def feed_items(pipeline: KafkaPipeline, items: Iterable[SourceEvent], source: str | None) -> Iterator[KafkaEvent]:
    """Source events of the input ``source`` into the core, in order (:func:`feed_runs`)."""
    return feed_runs(pipeline, ((source, items),))


def feed_runs(pipeline: KafkaPipeline, runs: Iterable[tuple[str | None, Iterable[SourceEvent]]]
              ) -> Iterator[KafkaEvent]:  # fmt: skip
    """Runs of source events (the input's name, its events in order) into the core, in order:
    segments go in batches across runs, each with its input's name (``KafkaPipeline.feed_many``,
    which the native lanes take in one call each), so inputs that interleave packet by packet are
    batched too; anomalies name their input; the events keep their order."""
    batch: list[TcpSegment] = []
    sources: list[str | None] = []
    held = 0  # the batch's payload bytes
    for source, items in runs:
        if type(items) is list and set(map(type, items)) == _SEGMENT:  # (a run of segments: no step per item)
            start = 0
            while start < len(items):
                stop, taken = payload_cut(items, start, SEGMENT_BATCH - len(batch), SEGMENT_BATCH_BYTES - held)
                batch += items[start:stop]
                sources += [source] * (stop - start)
                held += taken
                start = stop
                if len(batch) == SEGMENT_BATCH or held >= SEGMENT_BATCH_BYTES:
                    yield from pipeline.feed_many(batch, sources=sources)
                    batch, sources, held = [], [], 0
            continue
        for item in items:
            if type(item) is TcpSegment:
                batch.append(item)
                sources.append(source)
                held += len(item.payload)
                if len(batch) == SEGMENT_BATCH or held >= SEGMENT_BATCH_BYTES:
                    yield from pipeline.feed_many(batch, sources=sources)
                    batch, sources, held = [], [], 0
                continue
            if batch:
                yield from pipeline.feed_many(batch, sources=sources)
                batch, sources, held = [], [], 0
            pipeline.source = source
            if type(item) is SourceAnomaly:
                yield source_anomaly(item, source)
            else:
                yield from feed_item(pipeline, item)
    if batch:
        yield from pipeline.feed_many(batch, sources=sources)


def _finish(pipeline: KafkaPipeline, stats: RunStats | None) -> Iterator[KafkaEvent]:
    yield from pipeline.finish()
    if stats is not None:
        stats.ignored_segments = pipeline.reassembler.ignored_segments


def events_from(
    items: Iterable[SourceEvent],
    options: Options | None = None,
    *,
    stats: RunStats | None = None,
    source: str | None = None,
    opened: dict[int, str | None] | None = None,
) -> Iterator[KafkaEvent]:
    """The core over any source's output (TCP segments and source anomalies, in capture order):
    what a live engine feeds per interval. ``source`` names the input in ``source_file`` columns;
    ``opened`` receives each connection's id and that name (a sink's ``connection_sources``)."""
    pipeline = KafkaPipeline(options, opened=opened)
    pipeline.source = source
    yield from feed_items(pipeline, items, source)
    yield from _finish(pipeline, stats)


def events(
    paths: Iterable[PathArg],
    options: Options | None = None,
    *,
    stats: RunStats | None = None,
    progress: Progress | None = None,
    opened: dict[int, str | None] | None = None,
) -> Iterator[KafkaEvent]:
    """Every Kafka event of the captures, in order. Files are read as one capture, merged by capture
    time (rotated files continue each other's connections in whatever order they are named; a packet
    read twice is read once, :mod:`kdissect.sources.duplicates`); each connection's rows name the
    file it opened in (``opened``, as in :func:`events_from`)."""
    options = options or Options()
    stats = stats if stats is not None else RunStats()
    ordered = timeline([str(path) for path in paths])
    pipeline = KafkaPipeline(options, opened=opened, several_inputs=len(ordered) > 1)
    names = [name for name, _ in ordered]
    chunk_size = merged_chunk_size(len(ordered))
    inputs = [(first, partial(_read_file, name, options, stats, progress, chunk_size)) for name, first in ordered]
    # in runs of one file (one input is one run; rotated files follow each other, so a few long runs)
    yield from feed_runs(pipeline, ((names[i], run) for i, run in merge_runs(inputs, _time_of, SEGMENT_BATCH)))
    check_some_capture(stats)
    yield from _finish(pipeline, stats)


def exchanges(
    paths: Iterable[PathArg],
    options: Options | None = None,
    *,
    where: Callable[[dict[str, Any]], bool] | None = None,
    stats: RunStats | None = None,
    topics: bool = False,
) -> Iterator[tuple[Exchange, dict[str, Any]]]:
    """Each exchange with its ``exchanges`` table row, those ``where`` accepts (a predicate over the
    row, e.g. :func:`kdissect.analysis.filters.compile_filter`'s). With ``topics``, the row also
    holds ``topics``: the topic names its request and response name."""
    for ev in events(paths, options, stats=stats):
        if isinstance(ev, Exchange):
            row = exchange_row(ev)
            if topics:
                row["topics"] = exchange_topics(ev)
            if where is None or where(row):
                yield ev, row


def analyze(
    paths: Iterable[PathArg],
    options: Options | None = None,
    *,
    tables: Iterable[str] | None = None,
    writer: TableWriter | None = None,
    progress: Progress | None = None,
    figures: Figures | None = None,
    counted_only: Iterable[str] = (),
) -> RunResult:
    """A whole run over capture files: every event into a table sink, the ``tables`` asked for
    (default: all) written to ``writer`` if given (the big ones in pieces as they grow, so memory
    stays flat), and the summary figures (counted by ``figures`` if given, e.g. the report's).
    Tables in ``counted_only`` go into the figures as they grow and are not kept (the report's
    connections). Nothing is written when nothing could be read."""
    stats = RunStats()
    return _analyze(_reading(paths, options, stats, progress), options, tables, writer, stats, figures=figures,
                    counted_only=set(counted_only))  # fmt: skip


def summary(
    paths: Iterable[PathArg],
    options: Options | None = None,
    *,
    progress: Progress | None = None,
) -> RunResult:
    """The figures alone (``kdissect analyze`` without ``--out``): only ``SUMMARY_TABLES`` are
    built, and their rows go into the figures piece by piece and are dropped, so memory does not
    grow with the exchanges. Record batches are not decoded at all (the summary shows none of
    them, so their own anomalies, such as bad checksums, are counted only by a run that writes
    tables). The result holds no tables."""
    stats = RunStats()
    options = in_figure_pieces(options or Options())
    return _analyze(_reading(paths, options, stats, progress), options, SUMMARY_TABLES, None, stats, keep=False,
                    record_anomalies=False)


def in_figure_pieces(options: Options) -> Options:
    """The options of a run that hands its tables to its figures and drops them: pieces of at most
    ``FIGURES_PIECE_ROWS`` rows."""
    return replace(options, spill_rows=min(options.spill_rows, FIGURES_PIECE_ROWS))


def _reading(paths: Iterable[PathArg], options: Options | None, stats: RunStats, progress: Progress | None
             ) -> Callable[[dict[int, str | None]], Iterator[KafkaEvent]]:  # fmt: skip
    return lambda opened, run_options: events(paths, run_options, stats=stats, progress=progress, opened=opened)


def analyze_items(
    items: Iterable[SourceEvent],
    options: Options | None = None,
    *,
    tables: Iterable[str] | None = None,
    writer: TableWriter | None = None,
    stats: RunStats | None = None,
    keep: bool = True,
    source: str | None = None,
) -> RunResult:
    """:func:`analyze` over any source's output (``stats`` collects what that source counted);
    with ``keep`` False the rows nobody writes are dropped once counted (:func:`summary`)."""
    stats = stats if stats is not None else RunStats()
    return _analyze(lambda opened, run_options: events_from(items, run_options, stats=stats, source=source,
                                                            opened=opened), options,
                    tables, writer, stats, keep=keep)  # fmt: skip


def _analyze(run: Callable[[dict[int, str | None], Options], Iterator[KafkaEvent]], options: Options | None,
             tables: Iterable[str] | None, writer: TableWriter | None, stats: RunStats, keep: bool = True,
             record_anomalies: bool = True, figures: Figures | None = None,
             counted_only: set[str] | frozenset[str] = frozenset()) -> RunResult:  # fmt: skip
    wanted = list(tables) if tables is not None else list(TABLES)
    summed = [name for name in TABLES if name in wanted or name in ALWAYS]  # what the figures count
    figures = figures if figures is not None else Figures()
    spills_all = writer is not None or not keep
    options = options or Options()
    wiring = TableRun(options, wanted, kept=summed, written=wanted, figures=figures,
                      writer=writer.write if writer is not None else None, spill=spills_all or bool(counted_only),
                      spilled=None if spills_all else counted_only, record_anomalies=record_anomalies)  # fmt: skip
    # (exchanges as rows the native pairing makes, when the sink needs no more of them: Options.exchange_rows)
    # (and their detail rows too, when it writes more: Options.exchange_details)
    lane_options = replace(options, exchange_rows=wiring.sink.takes_rows, exchange_details=wiring.sink.lane_details())
    wiring.sink.consume_all(run(wiring.sink.connection_sources, lane_options))
    rest = wiring.finish()
    kept = {name: columns for name, columns in rest.items() if name not in counted_only} if keep else {}
    result = RunResult(stats, figures.summary(stats.source, stats.ignored_segments), tables=kept)
    if writer is not None:
        if not stats.nothing_read:
            for name in wanted:
                wiring.write(name, rest[name])
        result.written = writer.close()
    return result


def tune_gc() -> None:
    """For a process that runs one big analysis: a run allocates millions of short-lived objects
    while the tables' rows pile up; the default young-generation threshold (700) makes the
    collector rescan them so often that it took about a fifth of a full ``analyze``
    (``bench/bench_pipeline.py``). Collect less often, and never rescan what the imports made."""
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)
