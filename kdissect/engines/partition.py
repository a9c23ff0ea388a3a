"""What one Spark task runs after the shuffle: its connections' rows in capture order -> the core
pipeline -> table pieces, as Arrow IPC (no pyspark here).

Pieces are kept where the run can afford it: appended by the task to one staged file per table
(:class:`StagedPieces`, a directory every task can reach), the envelope row carrying only the
file's path; or, with no such directory, carried in the envelope itself (:class:`InlinePieces`),
every byte then moving through the JVM and Spark's cache.

The rows hold every segment of some set of 4-tuples from every file, ordered by ``pos`` (capture
order), so the reassembler sees each connection exactly as the local engine does, reused 4-tuples
included. What only the whole run can settle is left in hidden columns for
:mod:`kdissect.tables.merge`: a connection's place in capture order (its id there is the number of
connections opened before it), unnamed topic ids, and where brokers and topic names were first seen.
"""

from __future__ import annotations

import heapq
import itertools
import json
import pickle
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from functools import cache, lru_cache
from uuid import UUID

import numpy as np
import pyarrow as pa

from kdissect.analysis.summary import Figures
from kdissect.dataclass import dataclass
from kdissect.decoders.inflate_cache import InflateCache
from kdissect.decoders.records import RunMeter
from kdissect.engines.local import SEGMENT_BATCH, SEGMENT_BATCH_BYTES, SUMMARY_TABLES
from kdissect.engines.run import TableRun
from kdissect.engines.storage import is_local, local_path, open_input, open_output
from kdissect.engines.units import ANOMALY, PIECE, RUN, RUN_HEADER, SEGMENT, Ends, MappedFiles, Unit, run_segments
from kdissect.events import Anomaly, ExchangeRows, KafkaEvent
from kdissect.kafka.pipeline import KafkaPipeline
from kdissect.options import Options
from kdissect.sources.segment import TcpSegment, payload_cut
from kdissect.tables import merge, repeats, staged_runs
from kdissect.tables.arrow import to_arrow
from kdissect.tables.columns import TABLES, Parts, Runs, cells
from kdissect.tables.merge import BROKER_SEEN, BROKER_SEEN_TS, OPENED, STATS, TOPIC_ID, TOPICS, ipc_bytes, read_ipc
from kdissect.tables.repeats import BACK, Repeats
from kdissect.tables.sink import SPILLABLE, Columns

ENVELOPE_SCHEMA = pa.schema([("table", pa.string()), ("data", pa.binary()), ("path", pa.string())])
Envelope = tuple[str, bytes | None, str | None]  # (table, inline data, staged file)
_COMPRESSED = pa.ipc.IpcWriteOptions(compression="lz4")


class InlinePieces:
    """Pieces carried in envelope rows (compressed Arrow IPC streams)."""

    def put(self, name: str, table: pa.Table) -> list[Envelope]:
        return [(name, ipc_bytes(table, _COMPRESSED), None)]

    def close(self) -> list[Envelope]:
        return []


class StagedPieces:
    """Pieces appended to ``<root>/<table>/<task>.arrows`` (one Arrow IPC stream per table); the
    envelope names each file once, when the task ends. ``task`` is unique per attempt: a retried
    task's files are never read (the envelope of the attempt that succeeded names its own).

    On local disk the streams are not compressed, and the tasks that finish the pieces map them
    (:func:`read_pieces`): compressing and expanding them took about a tenth of a task's CPU, for
    about three times less disk (docs/spark.md). Elsewhere (HDFS, S3) they are compressed (lz4)."""

    def __init__(self, root: str, task: str) -> None:
        self.root, self.task = root.rstrip("/"), task
        self.mapped = is_local(root)  # read back mapped (else whole pieces, from a compressed stream)
        self._options = None if self.mapped else _COMPRESSED
        self._writers: dict[str, tuple[object, pa.ipc.RecordBatchStreamWriter]] = {}

    def put(self, name: str, table: pa.Table) -> list[Envelope]:
        if name not in self._writers:
            stream = open_output(f"{self.root}/{name}/{self.task}.arrows")
            self._writers[name] = (stream, pa.ipc.new_stream(stream, table.schema, options=self._options))
        self._writers[name][1].write_table(table)
        return []

    def close(self) -> list[Envelope]:
        rows: list[Envelope] = []
        for name, (stream, writer) in self._writers.items():
            writer.close()
            stream.close()  # type: ignore[attr-defined]
            rows.append((name, None, f"{self.root}/{name}/{self.task}.arrows"))
        self._writers.clear()
        return rows


def read_pieces(data: bytes | None, path: str | None) -> Iterator[pa.Table]:
    """The pieces of an envelope row: its inline piece, or its staged file's pieces one at a time
    (a local file mapped: its pieces' columns are the mapped bytes, not copies; records rows staged
    as references to earlier rows get those rows' payloads, ``tables/repeats.py``)."""
    if path is None:
        yield read_ipc(data)  # type: ignore[arg-type]
        return
    with (pa.memory_map(local_path(path)) if is_local(path) else open_input(path)) as f, \
            pa.ipc.open_stream(f) as reader:  # fmt: skip
        pieces = (pa.Table.from_batches([batch]) for batch in reader)
        if BACK in reader.schema.names:
            pieces = repeats.resolved(pieces)
        yield from map(staged_runs.decoded, pieces) if staged_runs.encoded_in(reader.schema) else pieces


MARKS_WRITTEN = pa.schema([("task", pa.int64()), ("rows", pa.int64())])


def stage_marks(batches: Iterable[pa.RecordBatch], root: str) -> Iterator[pa.RecordBatch]:
    """Aborted marks (``merge.MARKS_SCHEMA``) sorted by the task that numbered their rows, written as
    one file per such task (``<root>/task-NNNNN.arrows``; a retry writes the same); (task, marks) out
    per file (:data:`MARKS_WRITTEN`)."""
    task, stream, writer, count = None, None, None, 0

    def written() -> Iterator[pa.RecordBatch]:
        if writer is not None:
            writer.close()
            stream.close()  # type: ignore[attr-defined]
            yield pa.RecordBatch.from_pylist([{"task": task, "rows": count}], schema=MARKS_WRITTEN)

    for batch in batches:
        tasks = batch.column("task").to_numpy()
        cuts = [0, *(np.flatnonzero(np.diff(tasks)) + 1).tolist(), len(tasks)]
        for lo, hi in itertools.pairwise(cuts):
            if tasks[lo] != task:
                yield from written()
                task, count = int(tasks[lo]), 0
                stream = open_output(_marks_file(root, task))
                writer = pa.ipc.new_stream(stream, merge.MARKS_SCHEMA, options=_COMPRESSED)
            writer.write_batch(batch.slice(lo, hi - lo))  # type: ignore[union-attr]
            count += hi - lo
    yield from written()


@dataclass(frozen=True)
class StagedMarks:
    """Aborted marks kept in staged files by the tasks (:func:`stage_marks`), not on the driver: a
    task finishing records pieces reads the marks of their task only, and gives each piece those
    that may hit its rows (``merge.TaskMarks``)."""

    root: str
    tasks: frozenset[int]  # tasks with marks

    def hitting(self, task: int, first: int, end: int) -> merge.Marks:
        if task not in self.tasks:
            return []
        starts, ends, marks = _task_marks(self.root, task)
        return [marks[i] for i in np.flatnonzero((starts < end) & (ends > first)).tolist()]


@lru_cache(maxsize=1)  # a task's pieces are finished one after another (a piece may hold two rows)
def _task_marks(root: str, task: int) -> tuple[np.ndarray, np.ndarray, merge.Marks]:
    """A task's marks, with their first rows and ends as arrays (a piece picks its own at array speed)."""
    with open_input(_marks_file(root, task)) as f, pa.ipc.open_stream(f) as reader:
        marks = [mark for batch in reader for mark in merge.marks_of(batch)]
    starts = np.fromiter((m[0] for m in marks), np.int64, len(marks))
    return starts, starts + np.fromiter((m[1] for m in marks), np.int64, len(marks)), marks


def _marks_file(root: str, task: int) -> str:
    return f"{root.rstrip('/')}/task-{task:05d}.arrows"


_FINISHING = (1 << 62, 1 << 62)  # events of the end of input come after every segment
Place = tuple[int, int]  # (ts, pos): where an event came in the run's order; ts 0 in a one-file run (merge.Opened)


class _Runs:
    """The ``RUN`` rows' segments not fed yet (each run's 4-tuple and file kept once): those placed before
    a place are taken at once, in the order of their places, from every run that has some (a run's
    stretch found by a search in its sorted places, not a step per segment)."""

    def __init__(self, by_time: bool) -> None:
        self.by_time = by_time  # places (ts, pos), else pos (units.segment_order)
        self.waiting: list[tuple[object, int, int]] = []  # (next segment's place, run, where it is): a heap
        self.headers: dict[int, np.ndarray] = {}  # per run not done: its headers, sorted by place
        self.ends: dict[int, Ends] = {}  # per run not done: its first segment's 4-tuple, and file index
        self.count = itertools.count()

    def add(self, c: dict[str, list], i: int) -> None:
        headers = np.frombuffer(c["run"][i], RUN_HEADER)
        if self.by_time:  # in the order of units.segment_order: (ts, pos)
            headers = headers[np.lexsort((headers["pos"], headers["ts"]))]
        run = next(self.count)
        self.headers[run] = headers
        self.ends[run] = ((c["src_ip"][i], c["src_port"][i], c["dst_ip"][i], c["dst_port"][i], c["file_index"][i]))
        heapq.heappush(self.waiting, (self._place(headers, 0), run, 0))

    def _place(self, headers: np.ndarray, at: int) -> object:
        return (int(headers["ts"][at]), int(headers["pos"][at])) if self.by_time else int(headers["pos"][at])

    def _cut(self, headers: np.ndarray, at: int, before: object) -> int:
        """Where the run's headers placed before ``before`` (None: all) end, from ``at``."""
        if before is None:
            return len(headers)
        if not self.by_time:
            return int(np.searchsorted(headers["pos"][at:], before)) + at
        ts, pos = before
        times = headers["ts"][at:]
        lo, hi = int(np.searchsorted(times, ts)), int(np.searchsorted(times, ts, "right"))
        return at + lo + int(np.searchsorted(headers["pos"][at + lo : at + hi], pos))

    def take(self, before: object) -> tuple[np.ndarray, np.ndarray, list[Ends]] | None:
        """The headers placed before ``before`` (None: all), in the order of their places, with each one's
        run as an index (int64) into the list of those runs' ends (a run is forgotten once all of it is
        taken)."""
        waiting, parts, ends = self.waiting, [], []
        while waiting and (before is None or waiting[0][0] < before):
            _, run, at = heapq.heappop(waiting)
            headers = self.headers[run]
            end = self._cut(headers, at, before)
            parts.append(headers[at:end])
            ends.append(self.ends[run])  # (a run is taken once per call: its next place is not before)
            if end < len(headers):
                heapq.heappush(waiting, (self._place(headers, end), run, end))
            else:
                del self.headers[run], self.ends[run]
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0], np.zeros(len(parts[0]), np.int64), ends
        taken = np.concatenate(parts)
        runs = np.repeat(np.arange(len(parts), dtype=np.int64), [len(part) for part in parts])
        order = np.lexsort((taken["pos"], taken["ts"])) if self.by_time else np.argsort(taken["pos"], kind="stable")
        return taken[order], runs[order], ends


class PartitionDecoder:
    """Feed segment rows (``units.SEGMENT_SCHEMA``: segments, runs of them, anomalies, counters) in
    ``pos`` order; collect envelope rows."""

    def __init__(self, files: list[str], options: Options, tables: Iterable[str],
                 pieces: InlinePieces | StagedPieces | None = None, task: int = 0, spill_rows: int = 10_000,
                 figures: Callable[[], Figures] = Figures, several_inputs: bool | None = None) -> None:  # fmt: skip
        # Inline pieces travel as single Arrow IPC blobs through the JVM: kept to a few MB each.
        options = replace(options, spill_rows=min(options.spill_rows, spill_rows))
        self.pieces = pieces or InlinePieces()
        self.files = files
        self.mapped = MappedFiles(files)
        self.wanted = [t for t in TABLES if t in set(tables) or t in SUMMARY_TABLES]
        self.figures = figures()  # the summary's (or report's) figures of this task's rows, merged on the driver
        # the task's decompression budget, as a run's; its inflated payloads the worker's (_kept_inflations)
        metered = replace(options, limits=replace(options.limits, run=RunMeter(options.decompressed_run,
                                                                                _kept_inflations())))  # fmt: skip
        self.run = TableRun(metered, self.wanted, written=self.wanted, writer=self.write, figures=self.figures,
                            resolve_topics=False)  # fmt: skip
        self.sink = self.run.sink
        # ``several_inputs`` False when no packet can repeat one of another input: a read task's own
        # connections (a copy would put the key in another unit too), or a census that found no key's
        # times overlapping in two files; the native lanes then take them.
        several = len(files) > 1 if several_inputs is None else several_inputs
        # (the lanes' pairing as the local engine has it: exchanges rows, and their detail rows too)
        self.pipeline = KafkaPipeline(replace(options, exchange_rows=self.sink.takes_rows,
                                              exchange_details=self.sink.lane_details()),
                                      opened=self.sink.connection_sources, several_inputs=several)  # fmt: skip
        self.sink.left_made = self._left_made
        # staged on local disk, read back mapped: records pieces in the compact format (tables/repeats.py,
        # tables/staged_runs.py)
        self.staged_locally = isinstance(self.pieces, StagedPieces) and self.pieces.mapped
        if self.staged_locally and options.payloads.keep != 0:
            # payloads met again staged as references to this task's earlier rows (tables/repeats.py): the
            # finishing task maps the file, so what a reference points at costs it no memory
            self.sink.repeats = Repeats()
        self.opened_at: list[int] = []  # per local connection id: pos of the segment that opened it
        # per local connection id: its place in the order the run numbers connections in (merge.Opened)
        self.places: list[Place] = []
        self.figures.number_connections(self.places, task << merge.ROW_BITS)
        self.broker_seen: list[Place] = []  # per brokers row: place of the segment that revealed it
        self.topic_seen: list[Place] = []  # per learned topic id, in learning order: place
        self.stats: list[tuple[int, str]] = []  # (file index, counters as JSON) per unit
        self.task = task  # this task's number among the run's (records rows are numbered by it)
        self.records = 0  # records rows spilled so far
        self.journal: list[tuple[Place, tuple]] = []  # (place, call) of the transaction rules' inputs not yet put
        self.journaled = 0  # calls put in pieces so far
        self.sink.transactions.journal = []
        self.by_time = len(files) > 1  # segments come in order of (ts, pos), else pos (units.segment_order)
        self.runs = _Runs(self.by_time)
        self.out: list[Envelope] = []
        self.ticks = 0  # clock() calls: segments of no connection that are not the input's
        # Segments not fed yet (handed to the core SEGMENT_BATCH at a time, or SEGMENT_BATCH_BYTES of payload,
        # each with its file's name: files whose times interleave still make whole batches), their pos, their
        # file's index, their latest time (whether feeding them may run the idle sweep) and payload bytes
        self.batch: list[TcpSegment] = []
        self.batch_pos: list[int] = []
        self.batch_files: list[int] = []
        self.batch_high = -1
        self.batch_bytes = 0
        self.piece_at: tuple[list[int], Callable[[int], Place]] | None = None  # the piece being consumed: left_at

    def feed(self, batch: pa.RecordBatch) -> None:
        """Rows in the order of ``units.segment_order``; a run's segments are fed as their places come
        (merged with every other run's: a run waits only while a row before its next segment may come)."""
        c = batch.to_pydict()
        for i, kind in enumerate(c["kind"]):
            pos = c["pos"][i]
            if not self.by_time:
                self._release(pos)
            elif c["ts"][i] is not None:  # rows without a time sort first, before any run
                self._release((c["ts"][i], pos))
            if kind == RUN:
                self.runs.add(c, i)
            elif kind == SEGMENT:  # a payload that travels inline
                self.segment(TcpSegment(
                    c["ts"][i], c["src_ip"][i], c["src_port"][i], c["dst_ip"][i], c["dst_port"][i], c["seq"][i],
                    c["ack"][i], c["flags"][i], c["window"][i], c["payload"][i], c["payload_len"][i]),
                    pos, c["file_index"][i])  # fmt: skip
            elif kind == PIECE:  # a read task's own decoding, passed on
                self.out.append((c["anomaly"][i], c["payload"][i], c["detail"][i]))
            elif kind == ANOMALY:
                self._flush()  # (after the segments before it: anomaly rows are counted in order)
                self.sink.consume(Anomaly(c["anomaly"][i], None, None, c["offset"][i], None, c["ts"][i],
                                          c["detail"][i], self.files[c["file_index"][i]]))  # fmt: skip
            else:
                self.stats.append((c["file_index"][i], c["detail"][i]))

    def _release(self, before: object) -> None:
        """Feed the runs' segments placed before ``before`` (all: None), in the order of their places."""
        taken = self.runs.take(before)
        if taken is None:
            return
        headers, runs, ends = taken
        files = np.array([end[4] for end in ends], np.int64)[runs].tolist()
        self._segments(run_segments(headers, runs, ends, self.mapped), headers["pos"].tolist(), files,
                       headers["ts"].tolist())

    def clock(self, ts: int, pos: int) -> None:
        """Capture time ``ts`` passing at ``pos`` without a segment of this decoder's connections (one of
        another connection, or the run's end): the reassembler's idle rule sees it as a segment of no
        connection would show it (one from no address: it opens nothing, and is not counted as stray), when
        it would run the idle sweep (else it changes nothing)."""
        due = self._sweep_due()
        if due is None or ts < due:
            return
        self.ticks += 1
        self._flush()
        self._feed([TcpSegment(ts, "", 0, "", 0, 0, 0, 0, 0, b"", 0)], [pos], None)

    def clocks(self, ts: np.ndarray, pos: np.ndarray) -> None:
        """:meth:`clock` at each of these times and places in turn, without a call for those that change nothing."""
        done = 0
        while done < len(ts):
            due = self._sweep_due()
            later = np.flatnonzero(ts[done:] >= due) if due is not None else ()
            if not len(later):
                return
            i = done + int(later[0])
            self.clock(int(ts[i]), int(pos[i]))
            done = i + 1

    def _sweep_due(self) -> int | None:
        """The reassembler's ``sweep_due`` once the segments not fed yet are: they are fed first only if
        one of them may run the sweep (else the time it is due stays as it is)."""
        due = self.pipeline.reassembler.sweep_due()
        if due is not None and self.batch_high >= due:
            self._flush()
            due = self.pipeline.reassembler.sweep_due()
        return due

    def segment(self, segment: TcpSegment, pos: int, file_index: int) -> None:
        """One segment at its place in capture order, from file ``file_index``: fed with the next ones."""
        self.batch.append(segment)
        self.batch_pos.append(pos)
        self.batch_files.append(file_index)
        if segment.ts_ns > self.batch_high:
            self.batch_high = segment.ts_ns
        self.batch_bytes += len(segment.payload)
        if len(self.batch) == SEGMENT_BATCH or self.batch_bytes >= SEGMENT_BATCH_BYTES:
            self._flush()

    def _segments(self, segments: list[TcpSegment], positions: list[int], files: list[int], times: list[int]
                  ) -> None:  # fmt: skip
        """:meth:`segment` of each of these in turn (``times``: their capture times), a batch's room at a
        time, with no Python step per segment."""
        done = 0
        while done < len(segments):
            end, taken = payload_cut(segments, done, SEGMENT_BATCH - len(self.batch),
                                     SEGMENT_BATCH_BYTES - self.batch_bytes)  # fmt: skip
            self.batch += segments[done:end]
            self.batch_pos += positions[done:end]
            self.batch_files += files[done:end]
            self.batch_high = max(self.batch_high, *times[done:end])
            self.batch_bytes += taken
            done = end
            if len(self.batch) == SEGMENT_BATCH or self.batch_bytes >= SEGMENT_BATCH_BYTES:
                self._flush()

    def _flush(self) -> None:
        """The segments not fed yet into the core."""
        if self.batch:
            segments, positions, files = self.batch, self.batch_pos, self.batch_files
            self.batch, self.batch_pos, self.batch_files, self.batch_high, self.batch_bytes = [], [], [], -1, 0
            self._feed(segments, positions, [self.files[f] for f in files])

    def _feed(self, segments: list[TcpSegment], positions: list[int], sources: list[str | None] | None) -> None:
        """Segments into the core, each of the file ``sources`` names (None: a tick, of no file); what each
        event (and each row of the lanes' pieces) brought placed at the place of the segment it came in
        (the core says which)."""
        ats: list[int] = []
        opens: list[int] = []
        events = self.pipeline.feed_many(segments, ats, opens, sources)

        def at(i: int) -> Place:
            return self._at(segments[i].ts_ns, positions[i])

        for i in opens:
            self.opened_at.append(positions[i])
            self.places.append(at(i))
        self._consume(events, ats, at)

    def _at(self, ts: int, pos: int) -> Place:
        return (ts if self.by_time else 0, pos)

    def _consume(self, events: list[KafkaEvent], ats: list[int], at: Callable[[int], Place]) -> None:
        """Events into the sink (event k came in segment ``ats[k]``, placed at ``at(ats[k])``)."""
        for ev, i in zip(events, ats, strict=True):
            parts = ev.details if type(ev) is ExchangeRows else None
            if parts is None:
                self.sink.consume(ev)
            else:  # the topic ids the piece teaches, then its left rows, each at its own segment's place
                known = self.sink.topic_names
                self.topic_seen += [at(k) for tid, k in zip(parts.topics, parts.topics_at, strict=True)
                                    if tid not in known]  # fmt: skip
                self.piece_at = (parts.left_at, at)
                self.sink.consume(ev)
                self.piece_at = None
            self._settle(at, i)

    def _left_made(self, k: int) -> None:
        """The sink made the rows of left tuple ``k`` of the piece being consumed: what they added is
        placed at the place of the segment that completed that exchange."""
        assert self.piece_at is not None
        left_at, at = self.piece_at
        self._settle(at, left_at[k])

    def _settle(self, at: Callable[[int], Place], i: int) -> None:
        """The brokers rows, topic ids and transaction calls the sink added since the last call, placed at
        ``at(i)``."""
        brokers = len(self.sink.rows["brokers"]) - len(self.broker_seen)
        topics = len(self.sink.topic_names) - len(self.topic_seen)
        calls = self.sink.transactions.journal
        if brokers <= 0 and topics <= 0 and not calls:
            return
        place = at(i)
        self.broker_seen.extend([place] * brokers)
        self.topic_seen.extend([place] * topics)
        if calls:
            self.journal += [(place, call) for call in calls]
            calls.clear()
            if len(self.journal) >= merge.JOURNAL_CALLS:
                self._put_journal()

    def _put_journal(self) -> None:
        if self.journal:
            self.out += self.pieces.put(merge.JOURNAL, merge.journal_piece(self.task, self.journaled, self.journal))
            self.journaled += len(self.journal)
            self.journal = []

    def finish(self) -> None:
        self._release(None)
        self._flush()
        self.mapped.close()
        events = self.pipeline.finish()
        self._consume(events, [0] * len(events), lambda _: _FINISHING)
        handed = [name for name in self.wanted if len(self.sink.rows[name]) or name not in SPILLABLE]
        rest = self.run.finish()
        for name in handed:
            self.run.write(name, rest[name])
        self._put_journal()
        self.out += self.pieces.close()
        self.out.append((OPENED, ipc_bytes(pa.table({"pos": pa.array(self.opened_at, pa.int64()),
                                                     "ts": pa.array([ts for ts, _ in self.places], pa.int64())})),
                          None))  # fmt: skip
        ids = [str(t) for t in self.sink.topic_names]
        names = list(self.sink.topic_names.values())
        self.out.append((TOPICS, ipc_bytes(pa.table({
            "topic_id": pa.array(ids, pa.string()), "topic": pa.array(names, pa.string()),
            "seen_ts": pa.array([ts for ts, _ in self.topic_seen], pa.int64()),
            "seen": pa.array([pos for _, pos in self.topic_seen], pa.int64())})), None))  # fmt: skip
        # segments of no connection: additive over tasks
        stray = self.pipeline.reassembler.ignored_segments - self.ticks
        self.out.append((STATS, json.dumps({"units": self.stats, "stray": stray}).encode(), None))
        self.out.append((merge.FIGURES, pickle.dumps(self.figures), None))

    def take(self) -> Iterator[Envelope]:
        out, self.out = self.out, []
        return iter(out)

    def write(self, name: str, columns: Columns) -> None:
        """A piece of a table (counted into the figures by the run), as Arrow with what the merge needs."""
        table = to_arrow(name, columns)
        positions = pa.array(self.opened_at, pa.int64())
        if "connection_id" in table.column_names:
            index = table.column_names.index("connection_id")
            table = table.set_column(index, "connection_id", positions.take(table["connection_id"]))
        if "topic" in table.column_names:
            table = table.append_column(TOPIC_ID, _topic_ids(columns["_topic_id"]))
        if name == "records":
            start = self.task << merge.ROW_BITS | self.records
            table = table.append_column(merge.ROW, pa.array(np.arange(start, start + table.num_rows, dtype=np.int64)))
            if self.sink.repeats is not None:
                table = table.append_column(BACK, self.sink.repeats.column(self.records, table.num_rows))
            if self.staged_locally:
                table = staged_runs.encoded(table)
            self.records += table.num_rows
        if name == "brokers":
            seen, self.broker_seen = self.broker_seen[: table.num_rows], self.broker_seen[table.num_rows :]
            table = table.append_column(BROKER_SEEN_TS, pa.array([ts for ts, _ in seen], pa.int64()))
            table = table.append_column(BROKER_SEEN, pa.array([pos for _, pos in seen], pa.int64()))
        self.out += self.pieces.put(name, table)


@cache
def _kept_inflations() -> InflateCache:
    """The record payloads this process inflated lately, kept across its tasks (a Spark worker runs one
    after another): a batch a consumer fetches in another task than the one its producer's or another
    consumer's fetch was decoded in is inflated once, not once per task, as the local engine's run-wide
    cache does (bounded as that one; reports/spark-core-2026-11-30.md)."""
    return InflateCache()


def _topic_ids(column: list | Runs | Parts) -> pa.Array:
    """Topic ids (UUIDs; None or the zero id: none) as text, made once per UUID object (a message's rows
    share their topic's) and per id across pieces, per run when the column is runs; all null with no text
    made when no row has an id (most rows: a topic named, or the zero id). The objects are told apart by
    identity, not value: a UUID's hash and equality are Python code, twice per row before
    (reports/spark-core-2026-11-30.md)."""
    values = column.value_list() if isinstance(column, Runs) else cells(column)
    _, first, index = np.unique(np.fromiter(map(id, values), np.int64, len(values)), return_index=True,
                                return_inverse=True)  # fmt: skip
    texts = [_id_text(values[i]) for i in first.tolist()]
    if not any(texts):
        return pa.nulls(len(index) if not isinstance(column, Runs) else sum(column.counts), pa.string())
    if isinstance(column, Runs):
        index = np.repeat(index, column.counts)
    return pa.array(texts, pa.string()).take(pa.array(index.astype(np.int64, copy=False)))


def _id_text(topic_id: object) -> str | None:
    return None if topic_id is None or topic_id.int == 0 else _uuid_text(topic_id.int)  # type: ignore[attr-defined]


@lru_cache(maxsize=1 << 14)  # (a run's topics recur in every piece)
def _uuid_text(value: int) -> str:
    return str(UUID(int=value))


def decode_partition(batches: Iterable[pa.RecordBatch], files: list[str], options: Options, tables: list[str],
                     pieces: InlinePieces | StagedPieces | None = None, task: int = 0,
                     figures: Callable[[], Figures] = Figures, several_inputs: bool | None = None
                     ) -> Iterator[pa.RecordBatch]:  # fmt: skip
    """Segment batches of one partition (task number ``task``) in, envelope batches
    (``ENVELOPE_SCHEMA``) out; the task's ``figures`` among them. ``several_inputs``: whether a packet
    may repeat one of another file (``units.Census.repeats``; None: whenever there are several)."""
    decoder = PartitionDecoder(files, options, tables, pieces, task, figures=figures, several_inputs=several_inputs)
    for batch in batches:
        decoder.feed(batch)
        yield from _envelope(decoder.take())
    decoder.finish()
    yield from _envelope(decoder.take())


def _envelope(rows: Iterator[Envelope]) -> Iterator[pa.RecordBatch]:
    columns = list(zip(*rows, strict=True))
    if columns:
        yield pa.RecordBatch.from_arrays([pa.array(c, t) for c, t in zip(columns, ENVELOPE_SCHEMA.types, strict=True)],
                                         schema=ENVELOPE_SCHEMA)  # fmt: skip


def unit_decoder(unit: Unit, attempt: int, files: list[str], options: Options, tables: list[str],
                 staging: str | None, figures: Callable[[], Figures], first_task: int) -> PartitionDecoder:  # fmt: skip
    """The decoder of a read task's own connections (those wholly inside its unit): the same core as
    every decode task, numbered after them (``first_task``: the number of decode tasks), its pieces
    staged under a name of its own (``attempt``: a retry's are never read)."""
    pieces = InlinePieces() if staging is None else StagedPieces(staging, f"unit-{unit.index:05d}-{attempt}")
    return PartitionDecoder(files, options, tables, pieces, first_task + unit.index, figures=figures,
                            several_inputs=False)  # fmt: skip
