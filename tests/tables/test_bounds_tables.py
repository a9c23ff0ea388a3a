"""Resource bounds of the tables: what is held in memory, and what is written out in pieces."""

from __future__ import annotations

from pathlib import Path

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
