"""The report's latency figures as one mergeable value: equal to the tables' figures on every corpus
capture, the same however a run's pieces are split and merged, and bounded on hostile many-keys input."""

from __future__ import annotations

import itertools
import pickle
import random
from pathlib import Path

import pytest

from kdissect.analysis.clients import inventory
from kdissect.analysis.frames import analysis_frames, in_capture_order
from kdissect.analysis.latency import DIMENSIONS, latency_by
from kdissect.analysis.overview import overview
from kdissect.analysis.report_figures import KEYED, OTHER, REPORT_FIGURES_ONLY, ReportFigures, figures_of
from kdissect.analysis.throughput import capture_span_s, compression, per_partition
from kdissect.analysis.time_figures import BIN_LIMIT, NS, TimeFigures
from kdissect.analysis.timeseries import step_for, time_series
from kdissect.analysis.transactions import transactional_records
from kdissect.decoders.apis import removed_version
from kdissect.engines import local
from kdissect.options import Options
from kdissect.tables.columns import TABLES, cells

CAPTURES = sorted(p for p in (Path(__file__).parents[2] / "captures").iterdir() if ".pcap" in p.name)


def _by_key(frame, dimension):
    by = DIMENSIONS[dimension]
    return frame.sort_values(by, key=lambda c: c.astype(str)).reset_index(drop=True).astype(str)


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_the_figures_of_a_run_are_the_tables_figures(capture):
    """Fed piece by piece by the run (the report's way), every latency table equals the one pandas
    computes from the run's tables (``latency_by``), row for row."""
    figures = ReportFigures()
    run = local.analyze([capture], figures=figures)
    tables = in_capture_order(analysis_frames(run.tables))
    for dimension in KEYED:
        want, got = latency_by(tables, dimension), figures.latency_table(dimension)
        assert list(got.columns) == list(want.columns)
        assert _by_key(got, dimension).equals(_by_key(want, dimension)), dimension
        assert got["count"].sum() == tables["exchanges"]["latency_ms"].notna().sum()  # a complete breakdown


def _pieces(columns: dict[str, list], cuts: list[int]) -> list[dict[str, list]]:
    edges = [0, *cuts, len(next(iter(columns.values()), []))]
    return [{c: v[a:b] for c, v in columns.items()} for a, b in itertools.pairwise(edges)]


@pytest.mark.parametrize("seed", range(6))
def test_pieces_split_at_random_points_merge_into_the_figures_of_one_piece(seed):
    """As on Spark: the connections are dealt to tasks (a connection's rows all in one), each task's
    tables come in pieces cut at random points, and the tasks' figures merge in any order."""
    rng = random.Random(seed)
    capture = CAPTURES[seed % len(CAPTURES)] if seed < 3 else rng.choice(CAPTURES)
    tables = {name: {c: list(cells(v)) for c, v in columns.items()}
              for name, columns in local.analyze([capture]).tables.items()}
    whole = ReportFigures()
    for name, columns in tables.items():
        whole.add(name, columns)
    tasks = rng.randrange(2, 6)
    parts = [ReportFigures() for _ in range(tasks)]
    for name, columns in tables.items():
        n = len(next(iter(columns.values()), []))
        owner = [hash(c) % tasks for c in columns.get("connection_id", [])] or [rng.randrange(tasks)] * n
        for task, part in enumerate(parts):
            mine = {c: [v for v, o in zip(values, owner, strict=True) if o == task] for c, values in columns.items()}
            rows = sum(1 for o in owner if o == task)
            cuts = sorted(rng.sample(range(rows), min(rows, rng.randrange(0, 8))))
            for piece in _pieces(mine, cuts):
                part.add(name, piece)
    merged = ReportFigures()
    for part in rng.sample(parts, len(parts)):
        merged.merge(pickle.loads(pickle.dumps(part)))  # as Spark tasks' figures travel
    for dimension in KEYED:
        assert merged.latency[dimension] == whole.latency[dimension]
        assert merged.latency_table(dimension).equals(whole.latency_table(dimension))
    assert merged.summary(local.RunStats().source) == whole.summary(local.RunStats().source)
    assert merged.clients == whole.clients
    assert merged.clients.inventory(removed_version).equals(whole.clients.inventory(removed_version))
    assert merged.time == whole.time and merged.batches == whole.batches
    assert (merged.times, merged.client_ids, merged.without_answer) == (whole.times, whole.client_ids,
                                                                        whole.without_answer)


def _hostile(n: int) -> dict[str, list]:
    """``n`` exchanges, each from its own client address and client id (a fleet, or a forged one)."""
    columns: dict[str, list] = {name: [None] * n for name, _ in TABLES["exchanges"]}
    columns.update(api_name=["Metadata"] * n, api_version=[12] * n, status=["ok"] * n,
                   broker_ip=["10.0.0.1"] * n, broker_port=[9092] * n,
                   client_ip=[f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}" for i in range(n)],
                   client_id=[f"client-{i}" for i in range(n)], latency_ms=[float(i % 977) for i in range(n)])
    return columns


def test_many_keys_stay_bounded_and_the_rest_is_one_named_other_row():
    limit, n = 50, 5000
    figures = ReportFigures(limit)
    columns = _hostile(n)
    for piece in _pieces(columns, list(range(700, n, 700))):
        figures.add("exchanges", piece)
    for dimension in ("client_id", "client_host"):
        assert len(figures.latency[dimension].groups) == limit
        table = figures.latency_table(dimension)
        assert len(table) == limit + 1 and table.iloc[-1, 0] == OTHER
        assert table["count"].sum() == n  # nothing lost: the others are counted
    # which keys are kept does not depend on the order the rows came in
    reordered = ReportFigures(limit)
    backwards = {c: v[::-1] for c, v in columns.items()}
    reordered.add("exchanges", backwards)
    assert reordered.latency["client_host"] == figures.latency["client_host"]


def test_figures_of_frames_are_the_run_figures():
    capture = CAPTURES[0]
    figures = ReportFigures()
    run = local.analyze([capture], figures=figures)
    again = figures_of(in_capture_order(analysis_frames(run.tables)))
    for dimension in KEYED:
        assert again.latency_table(dimension).equals(figures.latency_table(dimension))


def _inventory_by_key(frame):
    return frame.sort_values(["client_id", "client_ip"], key=lambda c: c.astype(str)).reset_index(drop=True).astype(str)


@pytest.mark.parametrize("spill_rows", [3, 50_000])
@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_the_inventory_from_figures_is_the_tables_inventory(capture, spill_rows):
    """The report's run keeps no connection rows (they go into the figures as they grow: in pieces
    of 3 rows, a connection's row comes before the last piece of its exchanges); its inventory is
    the one pandas computes from the whole tables."""
    figures = ReportFigures()
    run = local.analyze([capture], Options(spill_rows=spill_rows), figures=figures, counted_only=REPORT_FIGURES_ONLY)
    assert "connections" not in run.tables
    tables = analysis_frames(local.analyze([capture]).tables)
    want, got = inventory(tables, removed_version), figures.clients.inventory(removed_version)
    assert list(got.columns) == list(want.columns)
    assert _inventory_by_key(got).equals(_inventory_by_key(want))
    assert list(got["requests"]) == sorted(got["requests"], reverse=True)


def test_the_inventory_keeps_a_bounded_number_of_clients_and_counts_the_rest():
    limit, n = 40, 3000
    figures = ReportFigures(limit)
    columns = _hostile(n)
    columns["connection_id"] = list(range(n))
    connections = {name: [None] * n for name, _ in TABLES["connections"]}
    connections.update(connection_id=list(range(n)), is_kafka=[True] * n, software_name=["kcat"] * n,
                       software_version=["1.7"] * n)
    for exchanges, conns in zip(_pieces(columns, list(range(500, n, 500))),
                                _pieces(connections, list(range(500, n, 500))), strict=True):
        figures.add("connections", conns)  # the rows before their exchanges: waiting for one piece
        figures.add("exchanges", exchanges)
    table = figures.clients.inventory(removed_version)
    assert len(table) == limit + 1 and table.iloc[-1]["client_id"] == OTHER
    assert table["requests"].sum() == n and table["connections"].sum() == n
    assert set(table["software"]) == {"kcat 1.7"}
    assert len(figures.clients._open) == 0  # nothing left waiting


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_traffic_over_time_from_figures_is_the_tables_time_series(capture):
    figures = ReportFigures()
    run = local.analyze([capture], figures=figures)
    tables = in_capture_order(analysis_frames(run.tables))
    want = time_series(tables, step_for(capture_span_s(tables)))
    assert figures.time.step_s == step_for(capture_span_s(tables))  # spans under BIN_LIMIT s: 1 s
    assert figures.time.table().equals(want)


def test_time_bins_stay_bounded_and_pieces_merge_into_the_whole():
    rng = random.Random(5)
    n = 4000
    columns = _hostile(n)
    start = 1_700_000_000 * NS
    columns["request_ts"] = sorted(start + rng.randrange(30 * 86_400) * NS + rng.randrange(NS) for _ in range(n))
    columns["request_bytes"] = [rng.randrange(1000) for _ in range(n)]
    whole = TimeFigures()
    whole.add_exchanges(columns)
    assert len(whole.bins) <= BIN_LIMIT and whole.step_s & (whole.step_s - 1) == 0  # a power of two
    assert (max(whole.bins) - min(whole.bins)) * whole.step_s >= 29 * 86_400 // 2
    table = whole.table()
    assert table["requests"].sum() == n and table["bytes_to_brokers"].sum() == sum(columns["request_bytes"])
    for seed in range(4):
        rng = random.Random(seed)
        order = list(range(n))
        rng.shuffle(order)  # pieces of any times, in any order
        shuffled = {c: [v[i] for i in order] for c, v in columns.items()}
        parts = [TimeFigures() for _ in range(3)]
        for piece in _pieces(shuffled, sorted(rng.sample(range(1, n), 9))):
            rng.choice(parts).add_exchanges(piece)
        merged = TimeFigures()
        for part in parts:
            merged.merge(pickle.loads(pickle.dumps(part)))
        assert merged == whole


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_throughput_and_the_overview_from_figures_are_the_tables(capture):
    figures = ReportFigures()
    run = local.analyze([capture], Options(spill_rows=7), figures=figures, counted_only=REPORT_FIGURES_ONLY)
    assert "batches" not in run.tables
    tables = in_capture_order(analysis_frames(local.analyze([capture]).tables))
    assert figures.batches.per_partition(figures.span_s).astype(str).equals(per_partition(tables).astype(str))
    assert figures.batches.compression().astype(str).equals(compression(tables).astype(str))
    assert figures.span_s == capture_span_s(tables)
    assert overview(tables, run.summary, [str(capture)], figures) == overview(tables, run.summary, [str(capture)])


@pytest.mark.parametrize("spill_rows", [2, 50_000])
def test_the_report_run_keeps_only_the_transactional_records(spill_rows):
    """The local report hands records over as they grow and keeps the transactional ones: the rows
    the transactions section reads, marks and all (while a transaction is open the sink holds its
    records back, so an abort still marks them)."""
    capture = next(c for c in CAPTURES if "transactions" in c.name)
    figures = ReportFigures(keep_records=True)
    run = local.analyze([capture], Options(spill_rows=spill_rows), figures=figures,
                        counted_only=figures.counted_only)  # fmt: skip
    assert not {"records", "batches", "exchanges", "txn_events"} & set(run.tables)
    kept = {**run.tables, "records": figures.journal.records(), "exchanges": figures.record_exchanges(),
            "txn_events": figures.txn_events.events()}
    got = transactional_records(in_capture_order(analysis_frames(kept)))
    want = transactional_records(in_capture_order(analysis_frames(local.analyze([capture]).tables)))
    assert len(got) > 0 and got.astype(str).equals(want.astype(str))
