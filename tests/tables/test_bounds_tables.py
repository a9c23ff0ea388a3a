"""Resource bounds of the tables: what is held in memory, and what is written out in pieces."""

from __future__ import annotations

from pathlib import Path

from kdissect.engines import local
from kdissect.events import Anomaly
from kdissect.options import Options
from kdissect.tables.columns import cells
from kdissect.tables.sink import TableSink
from kdissect.testing.hostile import inflating_batch
from tests.bounds_helpers import MiB, assert_bounded, assert_flat, assert_linear, two_sizes


def test_inflating_batches_are_spilled_by_bytes(tmp_path: Path, tmp_path_factory) -> None:
    """16 MiB of values per request: records were spilled every 50,000 rows only (5.8 GB peak)."""
    out = tmp_path_factory.mktemp("out")
    runs = two_sizes(tmp_path, "inflating_batch", 12, "--out", str(out))
    assert_bounded(runs, budget=512 * MiB, flat=True)
    assert "wrote" in runs[2].stdout and "(384 rows)" in runs[2].stdout


def test_records_held_with_no_output_stop_keeping_payloads_past_the_budget(tmp_path: Path) -> None:
    """A run that writes nothing out (``open_capture``) holds its records: past the payload budget
    they keep sizes only, with one cap anomaly."""
    capture = tmp_path / "inflating.pcap"
    capture.write_bytes(inflating_batch(3))  # 3 requests of 16 MiB of values
    run = local.analyze([capture], Options(payload_bytes=20 * MiB), tables=["records"])
    records, anomalies = run.tables["records"], run.tables["anomalies"]
    values = cells(records["value"])
    assert [len(v) for v in values] == [1 << 20] * 32 + [0] * 16
    assert cells(records["value_size"]) == [1 << 20] * 48  # sizes stay right
    assert cells(anomalies["kind"]) == ["cap"] and "20971520 payload bytes" in cells(anomalies["detail"])[0]


def test_with_output_files_every_table_is_written_in_pieces(tmp_path: Path, tmp_path_factory) -> None:
    """The exchanges and connections tables were held whole to the end (~1 KB per exchange): 100k
    more exchanges added 62 MiB of peak RSS. Now flat: each table is written as it grows."""
    out = tmp_path_factory.mktemp("out")
    runs = two_sizes(tmp_path, "many_exchanges", 100_000, "--out", str(out), "--format", "csv")
    assert_linear(runs)
    assert_bounded(runs, budget=512 * MiB)
    assert_flat(runs, 24 * MiB)
    assert "exchanges.csv (200,000 rows)" in runs[2].stdout and "records.csv (1,600,000 rows)" in runs[2].stdout


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
