"""Real captures shaped the way production hands them over, through every command and every figure.

One capture per shape family keeps this fast (a few seconds a family); ``bench/shapes_sweep.py``
runs every capture of the corpus through every family.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from kdissect.testing import shapes
from tests.shapes.shape_runs import command_failures, figure_failures, write_shape

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
# A consumer group, commits and fetches (aiokafka), transactions (librdkafka): the shapes that broke the report.
GROUPS, TRANSACTIONS = "aiokafka-produce-consume.pcap", "librdkafka-transactions.pcap"


@cache
def segments(name: str) -> tuple:
    return tuple(shapes.segments_of((CAPTURES / name).read_bytes()))


def shaped(family: str, name: str) -> list[shapes.Shape]:
    segs = segments(name)
    if family == "cuts":
        return shapes.cuts(segs, positions=2)
    if family == "merged":
        return [shapes.merged(segs, segments(TRANSACTIONS))]
    return shapes.FAMILIES[family](segs)


CASES = [
    ("cuts", GROUPS),
    ("losses", GROUPS),
    ("losses", "kafkajs-produce-consume.pcap"),  # a Fetch answer without its request: lag crashed
    ("rotations", TRANSACTIONS),
    ("merged", GROUPS),
]


@pytest.mark.parametrize(("family", "name"), CASES)
def test_every_command_survives_every_shape(family: str, name: str, tmp_path: Path) -> None:
    failures = []
    for i, shape in enumerate(shaped(family, name)):
        files = write_shape(shape, tmp_path / f"shape-{i}" / "in")
        failures += [f"{shape.name}: {f}" for f in command_failures(files, tmp_path / f"shape-{i}")]
    assert failures == []


@pytest.mark.parametrize(("family", "name"), CASES)
def test_every_figure_adds_up_on_every_shape(family: str, name: str, tmp_path: Path) -> None:
    failures = []
    for i, shape in enumerate(shaped(family, name)):
        files = write_shape(shape, tmp_path / f"shape-{i}")
        failures += [f"{shape.name}: {f}" for f in figure_failures(files)]
    assert failures == []


def test_a_capture_started_mid_conversation_reports_groups_joined_before_it(tmp_path: Path) -> None:
    """aiokafka's group synced after packet 154; its JoinGroup before: the report used to end in a TypeError."""
    from kdissect.analysis import groups, lag
    from kdissect.analysis.frames import analysis_frames
    from kdissect.engines import local

    [files] = [write_shape(shapes.started_at(segments(GROUPS), 154), tmp_path)]
    tables = analysis_frames(local.analyze(files).tables)
    rebalances = groups.rebalances(tables)
    before = rebalances[rebalances["note"] == groups.JOINED_BEFORE]
    assert len(before) and before["duration_ms"].isna().all() and before["started"].isna().all()
    fetches = lag.fetch_lag(tables)
    assert fetches["request_ts"].notna().all()  # a Fetch whose request was not captured: at its answer's time


def _statuses(files: list[Path]) -> dict[str, int]:
    from collections import Counter

    from kdissect.engines import local
    from kdissect.tables.columns import cells

    return dict(Counter(cells(local.analyze(files).tables["exchanges"]["status"])))


def test_rotated_files_read_in_order_lose_no_exchange(tmp_path: Path) -> None:
    segs = segments(TRANSACTIONS)
    whole = _statuses(write_shape(shapes.Shape("whole", (shapes.write_capture(list(segs)),)), tmp_path / "whole"))
    in_order = shapes.Shape("in order", tuple(reversed(shapes.rotated(segs, 3).files)))
    assert _statuses(write_shape(in_order, tmp_path / "rotated")) == whole


def test_rotated_files_read_out_of_order_lose_no_exchange(tmp_path: Path) -> None:
    segs = segments(TRANSACTIONS)
    whole = _statuses(write_shape(shapes.Shape("whole", (shapes.write_capture(list(segs)),)), tmp_path / "whole"))
    assert _statuses(write_shape(shapes.rotated(segs, 3), tmp_path / "rotated")) == whole


@pytest.mark.parametrize("copy", ["duplicated", "overlapping"])
def test_the_same_packets_read_twice_lose_and_double_no_exchange(copy: str, tmp_path: Path) -> None:
    segs = segments(TRANSACTIONS)
    whole = _statuses(write_shape(shapes.Shape("whole", (shapes.write_capture(list(segs)),)), tmp_path / "whole"))
    n = len(segs)
    shape = shapes.duplicated(segs) if copy == "duplicated" else shapes.overlapping(segs, n // 3, n * 2 // 3)
    assert _statuses(write_shape(shape, tmp_path / copy)) == whole


def _spark_sample(tmp_path: Path) -> list[tuple[str, list[Path]]]:
    segs = segments(GROUPS)
    sample = [shapes.started_at(segs, 154), shapes.cut_at(segs, 100), shapes.dropped_every(segs, 7)]
    return [(s.name, write_shape(s, tmp_path / f"sample-{i}")) for i, s in enumerate(sample)]


def test_spark_steps_give_the_local_tables_on_shaped_captures(tmp_path: Path) -> None:
    """The Spark engine's steps (partitioned, decoded apart, merged; run in-process) on a sample of shapes."""
    from tests.engines.spark_helpers import assert_same_tables, local_tables, simulate

    for _name, files in _spark_sample(tmp_path):
        paths = [str(f) for f in files]
        assert_same_tables(simulate(paths), local_tables(paths)[0])


def test_the_spark_report_of_a_capture_started_mid_conversation_is_the_local_one(tmp_path: Path) -> None:
    """The Spark report ended in the groups TypeError on such a capture (its own session: a subprocess)."""
    import json
    import subprocess
    import sys

    from kdissect.cli import main

    [(_, files)] = _spark_sample(tmp_path)[:1]
    assert main(["report", *map(str, files), "-o", str(tmp_path / "local.json")]) == 0
    on_spark = subprocess.run([sys.executable, "-m", "kdissect.cli", "report", *map(str, files), "-o",
                               str(tmp_path / "spark.json"), "--engine", "spark", "--master", "local[2]"],
                              capture_output=True, text=True, timeout=600)  # fmt: skip
    assert on_spark.returncode == 0, on_spark.stderr[-3000:]
    assert json.loads((tmp_path / "spark.json").read_text()) == json.loads((tmp_path / "local.json").read_text())
