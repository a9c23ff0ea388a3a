"""Resource bounds of the summary run (``kdissect analyze`` without ``--out``), through the command line."""

from __future__ import annotations

from pathlib import Path

from kdissect.engines import local
from kdissect.tables.columns import cells
from kdissect.testing.hostile import legacy_crc_storm, many_exchanges
from tests.bounds_helpers import MiB, assert_bounded, assert_flat, assert_linear, two_sizes


def test_the_summary_run_holds_neither_exchanges_nor_records(tmp_path: Path) -> None:
    """The summary used to build every table to print the exchange figures: 50k more exchanges
    (400k records) added 120 MiB of peak RSS. Now it builds only what it shows, and hands the
    exchanges to its figures piece by piece."""
    runs = two_sizes(tmp_path, "many_exchanges", 50_000)
    assert_linear(runs)
    assert_bounded(runs, budget=256 * MiB)
    assert_flat(runs, 16 * MiB)
    assert "1 TCP connections (1 Kafka), 100,000 exchanges" in runs[2].stdout


def test_the_summary_does_not_decode_the_records_it_does_not_show(tmp_path: Path) -> None:
    """Issue 21, "do only the work asked": the summary shows no record, so record batches are not
    decoded (on chatty traffic that made it dearer than writing the exchanges table); their own
    anomalies (here bad checksums) are counted by a run that writes tables."""
    capture = tmp_path / "crc.pcap"
    capture.write_bytes(legacy_crc_storm(200))
    alone = local.summary([capture])
    whole = local.analyze([capture], tables=["exchanges", "anomalies"])
    assert alone.summary.exchanges == whole.summary.exchanges > 0
    assert "crc_mismatch" not in {a.kind for a in alone.summary.anomalies}
    assert {a.kind: a.count for a in whole.summary.anomalies}["crc_mismatch"] == 200


def test_the_summary_run_equals_the_figures_of_a_whole_run(tmp_path: Path) -> None:
    capture = tmp_path / "c.pcap"
    capture.write_bytes(many_exchanges(2_500))
    alone = local.summary([capture])
    whole = local.analyze([capture])
    assert alone.summary == whole.summary and alone.summary.exchanges == 2_500
    assert alone.tables == {} and len(cells(whole.tables["records"]["offset"])) == 20_000
