"""The one run module under every engine: events -> tables -> figures and files, the rule for
input nothing could be read from, and the one result every engine returns.

The local engine, the live engine and each Spark task wire their events through
:class:`TableRun`: a :class:`~kdissect.tables.sink.TableSink` whose pieces are handed over to the
figures (``Figures.add``, called in one place: :meth:`TableRun.count`) and to a writer (table
files, or a Spark task's Arrow pieces). So the figures a local run computes are by construction
the ones Spark merges from its tasks (``Figures.merge``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import field, fields
from typing import TYPE_CHECKING, Any

from kdissect.analysis.summary import Figures, Summary
from kdissect.dataclass import dataclass
from kdissect.engines import NothingReadable
from kdissect.options import Options
from kdissect.sources.shapes import AnomalyKind, CaptureFormatError, SourceAnomaly, SourceStats
from kdissect.tables.sink import SPILLABLE, Columns, Spill, TableSink

if TYPE_CHECKING:
    import pandas as pd

    from kdissect.analysis.report_figures import ReportFigures

UNREADABLE_FILE = AnomalyKind.UNREADABLE_FILE  # the anomaly kind of a file that is not a capture


@dataclass(slots=True)
class RunStats:
    """What was read: the sources' counters summed over the files (and per file), and the
    segments the reassembler could place in no connection."""

    files: int = 0
    source: SourceStats = field(default_factory=SourceStats)
    per_file: list[SourceStats] = field(default_factory=list)
    ignored_segments: int = 0
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (file, why) of files that are no capture

    @property
    def no_capture(self) -> bool:
        """No file named was a capture at all."""
        return bool(self.unreadable) and len(self.unreadable) == self.files

    @property
    def nothing_read(self) -> bool:
        """Damage is reported in the output; only input with no readable packet at all fails a run."""
        return self.no_capture or (self.source.packets == 0 and self.source.anomalies > 0)

    def add(self, part: SourceStats) -> None:
        self.per_file.append(part)
        for f in fields(SourceStats):
            setattr(self.source, f.name, getattr(self.source, f.name) + getattr(part, f.name))


@dataclass(slots=True)
class LiveOutcome:
    """How a live run went: its rolling figures (``analysis.rolling.RollingFigures``), how long it ran,
    why it stopped, and the packets its raw copy holds (None: no copy written)."""

    figures: Any
    elapsed: float
    reason: str
    packets_written: int | None = None


@dataclass(slots=True)
class RunResult:
    """A finished run, whichever engine ran it: what was read, the headline figures (a batch run's;
    None for a live run, whose figures roll over: ``live``), the files written, and the tables kept in
    memory (``tables``: columns, rows already handed to a writer or to the figures are not among them;
    ``frames``: the report's DataFrames and ``figures`` its mergeable figures, for a report run)."""

    stats: RunStats
    summary: Summary | None
    written: list[tuple[Any, int]] = field(default_factory=list)  # (path, rows) per table file
    tables: dict[str, Columns] = field(default_factory=dict)
    frames: dict[str, pd.DataFrame] | None = None
    figures: Figures | None = None  # a report run's figures (analysis.report_figures.ReportFigures)
    live: LiveOutcome | None = None
    inputs: list[str] = field(default_factory=list)  # the files read, as named (set by a request's run)

    @property
    def unreadable(self) -> list[tuple[str, str]]:
        return self.stats.unreadable


def report_figures(options: Options) -> ReportFigures:
    """The figures of a report's run, on any engine: it keeps no records or txn_events table, so they
    keep the transactional records and events, within the ``options``' journal bounds."""
    from kdissect.analysis.report_figures import ReportFigures

    limits = {"records": options.journal_records, "events": options.journal_events}
    return ReportFigures(keep_records=True, **{k: v for k, v in limits.items() if v is not None})


def unreadable_file(path: str, exc: CaptureFormatError, stats: SourceStats) -> SourceAnomaly:
    """What every engine yields for a file that is not a capture: one anomaly naming it, counted."""
    stats.anomalies += 1
    return SourceAnomaly(UNREADABLE_FILE, f"{path}: {exc}")


def no_capture(unreadable: list[tuple[str, str]]) -> NothingReadable:
    """The error of a run in which no file was a capture: (file, why) of each."""
    return NothingReadable("; ".join(f"{path}: {why}" for path, why in unreadable))


def check_some_capture(stats: RunStats) -> None:
    """Raise :class:`NothingReadable` if no file named was a capture (every engine, every caller)."""
    if stats.no_capture:
        raise no_capture(stats.unreadable)


def check_readable(stats: RunStats, names: Sequence[object]) -> None:
    """The command line's rule: a run fails (exit 1) when no file was a capture, or no packet at all
    could be read from them; damage short of that is reported in the output."""
    check_some_capture(stats)
    if stats.nothing_read:
        raise NothingReadable(f"nothing could be read from {', '.join(map(str, names))}")


class TableRun:
    """The wiring of events to tables: a sink building ``tables``, whose pieces (as they grow with
    ``spill``: those of ``spilled``, default every spillable one; and at :meth:`finish` the rest of
    the ``kept`` ones, default ``tables``) are counted
    into ``figures`` and the ``written`` ones handed to ``writer`` (a ``TableWriter``'s ``write``, a
    Spark task's Arrow pieces, a live run's spill)."""

    def __init__(
        self,
        options: Options | None,
        tables: Iterable[str],
        *,
        kept: Iterable[str] | None = None,
        written: Iterable[str] = (),
        writer: Spill | None = None,
        figures: Figures | None = None,
        spill: bool = True,
        spilled: Iterable[str] | None = None,
        resolve_topics: bool = True,
        record_anomalies: bool = True,
    ) -> None:
        tables = list(tables)
        self.kept = list(kept) if kept is not None else tables
        self.written = set(written) if writer is not None else set()
        self.writer = writer
        self.figures = figures
        self.sink = TableSink(tables, options, spill=self.hand_over if spill else None,
                              resolve_topics=resolve_topics, record_anomalies=record_anomalies,
                              spilled_tables=SPILLABLE if spilled is None else spilled)  # fmt: skip

    def count(self, name: str, columns: Columns) -> None:
        """The figures hook: every piece of every table kept passes here once."""
        if self.figures is not None and name in self.kept:
            self.figures.add(name, columns)

    def hand_over(self, name: str, columns: Columns) -> None:
        """A piece of a table, to the figures and (if it is written) the writer."""
        self.count(name, columns)
        self.write(name, columns)

    def write(self, name: str, columns: Columns) -> None:
        if name in self.written:
            self.writer(name, columns)  # type: ignore[misc]

    def spill(self, name: str) -> None:
        """Hand over what ``name`` holds now."""
        self.hand_over(name, self.sink.take(name))

    def finish(self) -> dict[str, Columns]:
        """The rest of every table kept, counted into the figures (and not yet written: the engine
        decides, see :meth:`write`)."""
        rest = {name: self.sink.take(name) for name in self.kept}
        for name, columns in rest.items():
            self.count(name, columns)
        if self.figures is not None and self.sink.resolve_topics and self.sink.unnamed_ids:
            # a topic id named by Metadata only after rows of it were handed over: named now
            self.figures.name_topics({str(tid): name for tid, name in self.sink.topic_names.items()})
        return rest

