"""The brokers table on a capture that announces far more brokers than any cluster has (issue #20):
the first ``BROKER_ROWS`` kept, every announcement of another counted as an anomaly, the report's
memory flat however many are announced and its intro saying so, on the local and the Spark paths
(a Spark driver merges the tasks' brokers pieces and figures)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pyarrow as pa

from kdissect.analysis.bounded import KEY_LIMIT
from kdissect.analysis.report_figures import ReportFigures
from kdissect.engines import local
from kdissect.tables import merge
from kdissect.tables.arrow import to_arrow
from kdissect.tables.columns import cells
from kdissect.tables.sink import BROKER_ROWS, BROKERS_NOT_KEPT
from tests.bounds_helpers import MiB, assert_flat, hostile, two_sizes

PER_ANSWER = 1000  # distinct brokers each Metadata answer of hostile.many_brokers announces


def test_the_table_keeps_the_first_brokers_and_counts_every_other_announcement(tmp_path: Path) -> None:
    answers = 25
    run = local.analyze([hostile(tmp_path, "many_brokers", answers)], tables=["brokers", "anomalies"])
    assert cells(run.tables["brokers"]["node_id"]) == list(range(BROKER_ROWS)) and BROKER_ROWS == KEY_LIMIT
    anomalies = run.tables["anomalies"]
    counts = [n for kind, n in zip(cells(anomalies["kind"]), cells(anomalies["count"]), strict=True)
              if kind == BROKERS_NOT_KEPT]  # fmt: skip
    assert sum(counts) == answers * PER_ANSWER - BROKER_ROWS and len(counts) <= 101  # rows bounded too


def test_the_report_of_many_brokers_stays_flat_and_its_intro_states_the_bound(tmp_path: Path) -> None:
    """50,000 and 100,000 brokers: the report's peak RSS grew ~3.3 KB per broker (165 MiB between the
    two) before the bound; its topology intro gives the limit and the true number not kept."""
    out = tmp_path / "report.json"
    runs = two_sizes(tmp_path, "many_brokers", 50, "report", "-o", str(out))
    assert_flat(runs, 24 * MiB)
    (intro,) = [s["intro"] for s in json.loads(out.read_text())["sections"] if s["id"] == "topology"]
    assert (f"brokers: {BROKER_ROWS:,}, the first distinct in capture order (limit {BROKER_ROWS:,}; "
            f"{100 * PER_ANSWER - BROKER_ROWS:,} announcements of others not kept") in intro  # fmt: skip


def _brokers(nodes: range, seen: int) -> dict[str, list]:
    """A brokers piece: one row per node, first seen at ``seen`` plus the node id."""
    return {"node_id": list(nodes), "host": [f"b{n}" for n in nodes], "port": [9092] * len(nodes),
            "rack": [None] * len(nodes), "source": ["Metadata"] * len(nodes),
            "first_seen": [seen + n for n in nodes], "source_file": [None] * len(nodes)}  # fmt: skip


def test_a_spark_driver_keeps_the_first_brokers_of_the_tasks_pieces_and_figures() -> None:
    """Three tasks' pieces, each the bound's worth of brokers, the later tasks' first seen earlier:
    the driver's table and merged figures keep the first ``BROKER_ROWS`` by time, whichever task
    saw them, and the figures never hold more than the table."""
    half = BROKER_ROWS // 2
    tasks = [(range(t * half, t * half + BROKER_ROWS), 10_000_000 * (3 - t)) for t in range(3)]
    pieces, merged = [], ReportFigures()
    for position, (nodes, seen) in enumerate(tasks):
        columns = _brokers(nodes, seen)
        piece = to_arrow("brokers", columns)
        piece = piece.append_column(merge.BROKER_SEEN_TS, pa.array(columns["first_seen"], pa.int64()))
        pieces.append(piece.append_column(merge.BROKER_SEEN, pa.array([position] * len(nodes), pa.int64())))
        figures = ReportFigures()
        figures.add("brokers", columns)
        merged.merge(pickle.loads(pickle.dumps(figures)))  # as a task's figures reach the driver
        assert len(merged.brokers) <= BROKER_ROWS
    earliest: dict[int, int] = {}
    for nodes, seen in tasks:
        for n in nodes:
            earliest[n] = min(earliest.get(n, seen + n), seen + n)
    first = sorted((seen, n) for n, seen in earliest.items())[:BROKER_ROWS]
    table = merge.first_brokers(pieces)
    assert table["node_id"].to_pylist() == [n for _, n in first]
    assert sorted(key[0] for key in merged.brokers) == sorted(n for _, n in first)
