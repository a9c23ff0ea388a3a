"""Every command over one shaped capture, and every figure invariant over its tables.

:func:`command_failures` runs each face of the command line in this process (``analyze`` with and
without ``--out`` in every format, ``show``, ``show --json``, ``report`` in every format, ``live
--read ... --no-follow --report``) and says which ended otherwise than documented: a traceback,
or an exit status other than 0 (the input was read). :func:`figure_failures` checks
:mod:`tests.shapes.invariants` on the run's tables, summary and live figures. Both return
sentences (empty: all well), so a test over many shapes can say which shape broke what.
"""

from __future__ import annotations

import contextlib
import io
import traceback
from collections.abc import Sequence
from pathlib import Path

from kdissect.testing.shapes import Shape, segments_of

REPORT_FORMATS = ("html", "md", "json")


def write_shape(shape: Shape, directory: Path) -> list[Path]:
    """The shape's files in ``directory``, named so that a directory listing reads them in order."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, data in enumerate(shape.files):
        path = directory / f"part-{i:03d}.pcap"
        path.write_bytes(data)
        paths.append(path)
    return paths


def commands(files: Sequence[Path], work: Path) -> list[list[str]]:
    """Every face of the command line over ``files``, writing under ``work``."""
    from kdissect.tables.writer import FORMATS

    names = [str(f) for f in files]
    # live reads one file, or a directory of rotated files (with --write, for its report)
    live_in = names[0] if len(names) == 1 else str(files[0].parent)
    live = ["live", "--read", live_in, "--no-follow", "--quiet", "--report", str(work / "live.html")]
    if len(names) > 1:
        live += ["--write", str(work / "live-copy.pcapng")]
    return [
        ["analyze", *names],
        *(["analyze", *names, "--out", str(work / f"tables-{fmt}"), "--format", fmt] for fmt in FORMATS),
        ["show", *names],
        ["show", "--json", *names],
        *(["report", *names, "-o", str(work / f"report.{fmt}")] for fmt in REPORT_FORMATS),
        live,
    ]


def command_failures(files: Sequence[Path], work: Path) -> list[str]:
    """The commands over ``files`` that raised or did not exit 0, with the traceback's last lines."""
    from kdissect.cli import main

    failures = []
    for argv in commands(files, work):
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = main(argv)
        except BaseException:
            failures.append(f"kdissect {argv[0]} {' '.join(argv[1:])}: {traceback.format_exc(limit=-3)}")
            continue
        if status != 0:
            failures.append(f"kdissect {' '.join(argv)}: exit {status}: {err.getvalue().strip()[-500:]}")
        if "Traceback" in out.getvalue() + err.getvalue():
            failures.append(f"kdissect {' '.join(argv)}: printed a traceback")
    return failures


def figure_failures(files: Sequence[Path]) -> list[str]:
    """Invariants of the figures: the report's breakdowns, the summary against the report, and
    (one file) the live figures and the Prometheus series against the summary and the report."""
    from kdissect.analysis.frames import analysis_frames, in_capture_order
    from kdissect.analysis.report_figures import ReportFigures
    from kdissect.engines import local
    from kdissect.engines.live import LiveOptions, LiveRun
    from kdissect.engines.live_metrics import LiveMetrics
    from kdissect.options import Options
    from tests.shapes import invariants

    run = local.analyze(files)
    tables = in_capture_order(analysis_frames(run.tables))
    broken = invariants.report_figures(tables) + invariants.summary_agrees(tables, run.summary)
    figures = ReportFigures(keep_records=True)  # the report's run, its pieces small
    local.analyze(files, Options(spill_rows=7), figures=figures, counted_only=figures.counted_only)
    broken += invariants.kept_figures_agree(tables, figures)
    if len(files) == 1:
        metrics = LiveMetrics(max_label_values=1 << 20)  # no label capped: every series comparable
        live = LiveRun(LiveOptions(), metrics=metrics)
        for seg in segments_of(files[0].read_bytes()):
            live.feed_segment(seg)
        live.finish()
        broken += invariants.live_agrees(run.summary, live.figures)
        broken += invariants.prometheus_agrees(tables, run.summary, metrics)
    return broken
