"""Resource bounds of the tables: what is held in memory, and what is written out in pieces."""

from __future__ import annotations

from pathlib import Path

from kdissect.events import Anomaly
from kdissect.options import Options
from kdissect.tables.columns import cells
from kdissect.tables.sink import TableSink
from tests.bounds_helpers import MiB, anomaly_count, assert_bounded, two_sizes


def test_inflating_batches_are_spilled_by_bytes(tmp_path: Path, tmp_path_factory) -> None:
    """16 MiB of values per request: records were spilled every 50,000 rows only (5.8 GB peak)."""
    out = tmp_path_factory.mktemp("out")
    runs = two_sizes(tmp_path, "inflating_batch", 12, "--out", str(out))
    assert_bounded(runs, budget=512 * MiB, flat=True)
    assert "wrote" in runs[2].stdout and "(384 rows)" in runs[2].stdout


def test_inflating_batches_in_the_summary_stop_keeping_payloads(tmp_path: Path) -> None:
    """Without --out nothing is written out: past the payload budget records keep sizes only."""
    runs = two_sizes(tmp_path, "inflating_batch", 24)
    assert_bounded(runs, budget=512 * MiB, flat=True)
    assert anomaly_count(runs[2].stdout, "cap") == 1


def test_anomalies_taken_in_pieces_keep_their_counts() -> None:
    """The live engine hands the anomalies table over as it grows: a counted row already handed
    over keeps its count, and the next anomalies of its kind start a new counted row."""
    sink = TableSink(["anomalies"], Options(anomaly_rows=2))
    gap = Anomaly("gap", 7, "request", 0, 10, 1, "10 bytes missing")
    pieces = []
    for n in (5, 3):
        for _ in range(n):
            sink.consume(gap)
        pieces.append(sink.take("anomalies"))
    counts = [cells(piece["count"]) for piece in pieces]
    assert counts == [[1, 1, 3], [3]] and sum(map(sum, counts)) == 8
    assert [sum(cells(piece["length"])) for piece in pieces] == [50, 30]
