"""Real captures shaped the way production hands them over, through every command and every figure.

One capture per shape family keeps this fast (a few seconds a family); ``bench/shapes_sweep.py``
runs every capture of the corpus through every family.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from kdissect.testing import shapes
from kdissect.testing.shape_runs import command_failures, figure_failures, write_shape

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


@pytest.mark.xfail(strict=True, reason="files are read in the order given: rotated files given newest first are "
                   "not put back in time order (left to the lead: issue #20)")  # fmt: skip
def test_rotated_files_read_out_of_order_lose_no_exchange(tmp_path: Path) -> None:
    segs = segments(TRANSACTIONS)
    whole = _statuses(write_shape(shapes.Shape("whole", (shapes.write_capture(list(segs)),)), tmp_path / "whole"))
    assert _statuses(write_shape(shapes.rotated(segs, 3), tmp_path / "rotated")) == whole


@pytest.mark.xfail(strict=True, reason="duplicate packets across inputs: shapes-core's fix (issue #20 item 4)")
@pytest.mark.parametrize("copy", ["duplicated", "overlapping"])
def test_the_same_packets_read_twice_lose_and_double_no_exchange(copy: str, tmp_path: Path) -> None:
    segs = segments(TRANSACTIONS)
    whole = _statuses(write_shape(shapes.Shape("whole", (shapes.write_capture(list(segs)),)), tmp_path / "whole"))
    n = len(segs)
    shape = shapes.duplicated(segs) if copy == "duplicated" else shapes.overlapping(segs, n // 3, n * 2 // 3)
    assert _statuses(write_shape(shape, tmp_path / copy)) == whole
