"""The report's figures that join an exchange with its partition, parameter and error rows: each
equal to the pandas expression over the whole tables (docs/report-figures.md) on every corpus
capture, with the run's pieces as small as 2 rows; the same however a run is split and merged; and
bounded on hostile input."""

from __future__ import annotations

import itertools
import pickle
import random
from pathlib import Path

import pytest

from kdissect.analysis import errors, kafka_latency, lag
from kdissect.analysis.errors import ERROR_DIMENSIONS, expected_mask
from kdissect.analysis.exchange_figures import LISTED, SLOWEST, ExchangeFigures
from kdissect.analysis.frames import analysis_frames, in_capture_order
from kdissect.analysis.groups import members_by_client
from kdissect.analysis.lag_figures import POINTS
from kdissect.analysis.latency import broker_labels, latency_by
from kdissect.analysis.report_figures import ReportFigures
from kdissect.engines import local
from kdissect.options import Options
from kdissect.tables.columns import TABLES, cells
from kdissect.tables.sink import JOINED

CAPTURES = sorted(p for p in (Path(__file__).parents[2] / "captures").iterdir() if ".pcap" in p.name)


def _same_rows(got, want) -> bool:
    """Equal as sets of rows (ties may be listed in another order), as text."""
    def norm(frame):
        frame = frame.astype(str).reset_index(drop=True)
        return frame.sort_values(list(frame.columns), ignore_index=True)

    return list(got.columns) == list(want.columns) and len(got) == len(want) and norm(got).equals(norm(want))


@pytest.fixture(scope="module", params=[2, 50_000], ids=["pieces-of-2", "whole"])
def spill_rows(request):
    return request.param


def _report_run(capture: Path, spill_rows: int) -> tuple[ReportFigures, dict, object]:
    figures = ReportFigures(keep_records=True)
    run = local.analyze([capture], Options(spill_rows=spill_rows), figures=figures, counted_only=figures.counted_only)
    assert not set(JOINED) & set(run.tables)  # the report's run keeps none of them
    tables = in_capture_order(analysis_frames(local.analyze([capture]).tables))
    return figures, tables, run


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_each_joined_figure_is_its_pandas_expression(capture, spill_rows):
    figures, tables, _ = _report_run(capture, spill_rows)
    joined, label = figures.exchanges, figures.broker_label()
    for dimension in ("topic", "partition"):
        assert _same_rows(joined.topic_latency(dimension), latency_by(tables, dimension)), dimension
    assert joined.fetch_waits(label).astype(str).equals(kafka_latency.fetch_waits(tables).astype(str))
    assert _same_rows(joined.produce_by_acks(), kafka_latency.produce_by_acks(tables))
    joins, total = joined.join_waits()
    want = kafka_latency.join_waits(tables)
    assert total == len(want) and joins.astype(str).equals(want.head(LISTED).astype(str))
    slow, want = joined.slowest_requests(label), kafka_latency.slowest(tables, SLOWEST)
    assert slow["latency_ms"].tolist() == want["latency_ms"].tolist()  # ties may pick another row
    every = kafka_latency.slowest(tables, 10**9)
    tied = every[every["latency_ms"].isin(set(slow["latency_ms"]))]
    assert set(map(tuple, slow.astype(str).values)) <= set(map(tuple, tied.astype(str).values))
    assert _same_rows(joined.throttling(), errors.throttling(tables))
    assert _same_rows(joined.without_answer(), errors.without_answer(tables))
    for dimension in ERROR_DIMENSIONS:
        assert joined.errors_by(dimension, label).astype(str).equals(errors.errors_by(tables, dimension).astype(str))
    expected = int(expected_mask(tables["errors"]).sum())
    assert joined.error_codes == (len(tables["errors"]) - expected, expected)


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_lag_from_figures_is_the_tables_lag(capture, spill_rows):
    figures, tables, _ = _report_run(capture, spill_rows)
    by_client = members_by_client(tables)
    figured = figures.exchanges.lag
    assert _same_rows(figured.lag_summary(by_client), lag.lag_summary(tables))
    events = tables["group_events"]
    by_request = dict(zip(zip(events["connection_id"], events["correlation_id"], strict=True), events["group_id"],
                          strict=True))  # fmt: skip
    commits, total = figured.commit_lag(by_request)
    want = lag.commit_lag(tables)
    assert total == len(want) and _same_rows(commits, want.head(LISTED))
    points, every = figured.fetch_lag(by_client), lag.fetch_lag(tables)
    keys = ["client_id", "topic", "partition"]
    assert set(map(tuple, points[keys].astype(str).values)) == set(map(tuple, every[keys].astype(str).values))
    every = every.drop(columns=["fetch_offset", "high_watermark"]).astype(str)
    assert set(map(tuple, points.astype(str).values)) <= set(map(tuple, every.values))  # the plot's points are rows
    assert points.groupby(keys, dropna=False).size().max() <= POINTS if len(points) else True


def test_some_capture_has_lag_commits_errors_and_joins():
    """The corpus exercises every figure above (a test over empty tables proves nothing)."""
    seen = set()
    for capture in CAPTURES:
        tables = in_capture_order(analysis_frames(local.analyze([capture]).tables))
        shown = {"lag": lag.lag_summary(tables), "commits": lag.commit_lag(tables), "errors": errors.errors_by(tables),
                 "joins": kafka_latency.join_waits(tables), "fetch": kafka_latency.fetch_waits(tables),
                 "lost": errors.without_answer(tables)}  # fmt: skip
        seen |= {name for name, frame in shown.items() if len(frame)}
    assert seen == {"lag", "commits", "errors", "joins", "fetch", "lost"}


def _exchange_pieces(tables: dict[str, dict[str, list]], rng: random.Random) -> list[tuple[str, dict]]:
    """The joined tables cut as the sink cuts them: at random exchanges, each piece of exchanges
    followed by the other tables' rows of the same exchanges (and the records', which the sink cuts
    apart: here with them)."""
    ex = tables["exchanges"]
    n = len(ex["connection_id"])
    cuts = sorted(rng.sample(range(1, n), min(n - 1, rng.randrange(0, 8)))) if n > 1 else []
    edges = [0, *cuts, n]
    piece_of = {}
    for k, (a, b) in enumerate(itertools.pairwise(edges)):
        for i in range(a, b):
            piece_of.setdefault((ex["connection_id"][i], ex["correlation_id"][i]), k)
    out = []
    for k, (a, b) in enumerate(itertools.pairwise(edges)):
        out.append(("exchanges", {c: v[a:b] for c, v in ex.items()}))
        for name in (*JOINED[1:], "records"):
            columns = tables[name]
            rows = [i for i, key in enumerate(zip(columns["connection_id"], columns["correlation_id"], strict=True))
                    if piece_of.get(key) == k]  # fmt: skip
            out.append((name, {c: [v[i] for i in rows] for c, v in columns.items()}))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_tasks_split_at_random_exchanges_merge_into_the_figures_of_one_piece(seed):
    """As on Spark: connections dealt to tasks, each task's joined tables cut at random exchanges,
    the tasks' figures pickled and merged in any order: the same figures as one piece."""
    rng = random.Random(seed)
    capture = next(c for c in CAPTURES if "transactions" in c.name) if seed == 0 else rng.choice(CAPTURES)
    tables = {name: {c: list(cells(v)) for c, v in columns.items()}
              for name, columns in local.analyze([capture]).tables.items() if name in (*JOINED, "records")}  # fmt: skip
    whole = ExchangeFigures()
    for name in (*JOINED, "records"):
        _add(whole, name, tables[name])
    tasks = rng.randrange(2, 6)
    parts = [ExchangeFigures() for _ in range(tasks)]
    for task, part in enumerate(parts):
        mine = {name: {c: [v for v, conn in zip(values, columns["connection_id"], strict=True) if conn % tasks == task]
                       for c, values in columns.items()} for name, columns in tables.items()}  # fmt: skip
        for name, piece in _exchange_pieces(mine, rng):
            _add(part, name, piece)
    merged = ExchangeFigures()
    for part in rng.sample(parts, len(parts)):
        merged.merge(pickle.loads(pickle.dumps(part)))
    assert merged == whole
    assert len(whole.record_times) == len({key for key, flag in zip(zip(tables["records"]["connection_id"],
        tables["records"]["correlation_id"], strict=True), tables["records"]["transactional"], strict=True) if flag})


def _add(figures: ExchangeFigures, name: str, columns: dict[str, list]) -> None:
    """A piece as ReportFigures hands it over: the records' keys only, of the transactional ones."""
    if name != "records":
        figures.add(name, columns)
        return
    keys = list(zip(columns["connection_id"], columns["correlation_id"], strict=True))
    flags = columns["transactional"]
    figures.records_seen([k for k, flag in zip(keys, flags, strict=True) if flag], keys[-1] if keys else None)


def test_many_topics_and_error_keys_stay_bounded():
    limit, n = 40, 3000
    figures = ExchangeFigures(limit)
    ex = {name: [None] * n for name, _ in TABLES["exchanges"]}
    ex.update(connection_id=list(range(n)), correlation_id=[1] * n, api_name=["Produce"] * n, status=["ok"] * n,
              latency_ms=[float(i % 97) for i in range(n)], client_id=[f"c{i}" for i in range(n)])
    parts = {name: [None] * n for name, _ in TABLES["partitions"]}
    parts.update(connection_id=list(range(n)), correlation_id=[1] * n, api_name=["Produce"] * n,
                 topic=[f"topic-{i}" for i in range(n)], partition=[0] * n)
    errs = {name: [None] * n for name, _ in TABLES["errors"]}
    errs.update(connection_id=list(range(n)), correlation_id=[1] * n, api_name=["Produce"] * n,
                error_code=[6] * n, error_name=["NOT_LEADER_OR_FOLLOWER"] * n, topic=[f"topic-{i}" for i in range(n)],
                partition=[0] * n, path=["responses"] * n)
    for name, columns in (("exchanges", ex), ("partitions", parts), ("errors", errs)):
        figures.add(name, columns)
    figures.flush()
    assert len(figures.topic.groups) == limit and figures.topic.other.count == n - limit
    table = figures.topic_latency("topic")
    assert len(table) == limit + 1 and table["count"].sum() == n
    by_client = figures.errors_by("client_id", lambda ip, port: None)
    assert len(by_client) == limit + 1 and by_client["count"].sum() == n
    assert figures.errors_by("topic", lambda ip, port: None)["count"].sum() == n


def test_broker_names_in_joined_tables_are_the_tables_names():
    capture = next(c for c in CAPTURES if "admin" in c.name)
    figures, tables, _ = _report_run(capture, 3)
    slow = figures.exchanges.slowest_requests(figures.broker_label())
    assert set(slow["broker"]) <= set(broker_labels(tables["exchanges"], tables["brokers"]))


def test_only_exchanges_with_record_bytes_wait_for_their_records():
    """Empty Fetches (a chatty consumer's) are not remembered for records that never come: what the
    figures hold for the transactional records' times does not grow with them."""
    figures = ExchangeFigures()
    n = 5000
    for piece in range(4):
        ex = {name: [None] * n for name, _ in TABLES["exchanges"]}
        ex.update(connection_id=[piece] * n, correlation_id=list(range(n)), api_name=["Fetch"] * n, status=["ok"] * n)
        parts = {name: [None] * n for name, _ in TABLES["partitions"]}
        parts.update(connection_id=[piece] * n, correlation_id=list(range(n)), api_name=["Fetch"] * n,
                     topic=["t"] * n, partition=[0] * n, response_records_bytes=[0] * n)
        figures.add("exchanges", ex)
        figures.add("partitions", parts)
    figures.flush()
    assert figures._recent == {}
