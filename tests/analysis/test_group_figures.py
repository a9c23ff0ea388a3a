"""The report's consumer group, topology and anomaly figures: each equal to the pandas expression
over the whole tables (docs/report-figures.md) on every corpus capture, with the run's pieces as
small as 2 rows; the same however a run is split and merged; and bounded on hostile input."""

from __future__ import annotations

import itertools
import pickle
import random
from pathlib import Path

import pytest

from kdissect.analysis import groups, topology
from kdissect.analysis.frames import analysis_frames, in_capture_order
from kdissect.analysis.group_figures import MEMBERSHIP, GroupFigures
from kdissect.analysis.listing import FirstRows
from kdissect.analysis.report_figures import ANOMALIES_LISTED, PLACED, ReportFigures
from kdissect.analysis.topology_figures import TopologyFigures
from kdissect.engines import local
from kdissect.options import Options
from kdissect.report.document import LISTING_ROWS
from kdissect.tables.columns import TABLES, cells
from kdissect.testing.cluster import cluster_capture

CAPTURES = sorted(p for p in (Path(__file__).parents[2] / "captures").iterdir() if ".pcap" in p.name)
CLUSTER = "synthetic-cluster"  # kdissect.testing.cluster's: KIP-848 epochs, leader changes, unhealthy partitions


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Path:
    return cluster_capture(tmp_path_factory.mktemp("cluster") / "cluster.pcap")


def _capture(capture: Path | str, cluster: Path) -> Path:
    return cluster if capture == CLUSTER else capture  # type: ignore[return-value]


def _text(frame):
    return frame.astype(str).reset_index(drop=True)


@pytest.fixture(scope="module", params=[2, 50_000], ids=["pieces-of-2", "whole"])
def spill_rows(request):
    return request.param


@pytest.mark.parametrize("capture", [*CAPTURES, CLUSTER], ids=lambda p: getattr(p, "name", p))
def test_each_group_topology_and_anomaly_figure_is_its_pandas_expression(capture, spill_rows, cluster):
    capture = _capture(capture, cluster)
    figures = ReportFigures(keep_records=True)
    run = local.analyze([capture], Options(spill_rows=spill_rows), figures=figures, counted_only=figures.counted_only)
    assert not set(PLACED) & set(run.tables)  # the report's run keeps none of their rows
    tables = in_capture_order(analysis_frames(local.analyze([capture]).tables))
    kept, events = figures.groups, tables["group_events"]
    assert _text(kept.rebalances()).equals(_text(groups.rebalances(tables)))
    assert _text(kept.member_epochs()).equals(_text(groups.member_epochs(tables)))
    assert _text(kept.group_errors()).equals(_text(groups.group_errors(tables)))
    assert kept.members_by_client() == groups.members_by_client(tables)
    timeline = groups.timeline(tables)
    assert kept.first.total == len(events) and _text(kept.timeline()).equals(_text(timeline.head(LISTING_ROWS)))
    commits = events[events["api_name"] == "OffsetCommit"]
    assert kept.commit_groups() == dict(zip(zip(commits["connection_id"], commits["correlation_id"], strict=True),
                                            commits["group_id"], strict=True))  # fmt: skip
    ticks = kept.ticks_frame()
    assert len(ticks) <= len(events) and set(ticks["request_ts"]) <= set(timeline["request_ts"].fillna(
        timeline["response_ts"]))  # the plot's points are request times of the rows
    newest = figures.topology.newest_rows()
    assert _text(topology.partition_health(newest)).equals(_text(topology.partition_health(tables)))
    assert _text(topology.unhealthy(newest)).equals(_text(topology.unhealthy(tables)))
    assert _text(figures.topology.leader_changes()).equals(_text(topology.leader_changes(tables)))
    assert figures.topology.first.kept.total == len(tables["metadata_partitions"])
    anomalies = tables["anomalies"]
    assert figures.anomalies.kept.total == len(anomalies)
    assert _text(figures.anomalies.frame()).equals(_text(anomalies.head(ANOMALIES_LISTED)))


def test_some_capture_has_rebalances_epochs_group_errors_leader_changes_and_anomalies(cluster):
    """The captures exercise every figure above (a test over empty tables proves nothing)."""
    seen = set()
    for capture in [*CAPTURES, cluster]:
        tables = in_capture_order(analysis_frames(local.analyze([capture]).tables))
        shown = {"rebalances": groups.rebalances(tables), "errors": groups.group_errors(tables),
                 "epochs": groups.member_epochs(tables), "leaders": topology.leader_changes(tables),
                 "unhealthy": topology.unhealthy(tables), "anomalies": tables["anomalies"],
                 "commits": tables["group_events"].query("api_name == 'OffsetCommit'")}  # fmt: skip
        seen |= {name for name, frame in shown.items() if len(frame)}
    assert seen == {"rebalances", "errors", "epochs", "leaders", "unhealthy", "anomalies", "commits"}


def _placed_figures() -> tuple[GroupFigures, TopologyFigures, FirstRows]:
    return GroupFigures(), TopologyFigures(), FirstRows("anomalies", ANOMALIES_LISTED)


def _feed(figures: tuple, name: str, columns: dict) -> None:
    group, topo, anomalies = figures
    if name == "group_events":
        group.add(columns)
    elif name == "metadata_partitions":
        topo.add(columns)
    else:
        anomalies.add(zip(*(columns[c] for c, _ in TABLES["anomalies"]), strict=True))


def _split_and_merged(tables: dict, rng: random.Random, placed: bool) -> tuple:
    """The tables' connections dealt to tasks, each task's tables cut at random rows (with
    ``placed``, its connections named by place, as a Spark task names them), the tasks' figures
    pickled and merged in any order (and settled)."""
    tasks = rng.randrange(2, 6)
    parts = [_placed_figures() for _ in range(tasks)]
    for task, part in enumerate(parts):
        for name, columns in tables.items():
            mine = {c: [v for v, conn in zip(values, columns["connection_id"], strict=True)
                        if (conn or 0) % tasks == task] for c, values in columns.items()}  # fmt: skip
            if placed:
                mine["connection_id"] = [None if conn is None else (0, conn) for conn in mine["connection_id"]]
            n = len(mine["connection_id"])
            cuts = [0, *sorted(rng.sample(range(1, n), min(n - 1, rng.randrange(0, 6)))), n] if n > 1 else [0, n]
            for a, b in itertools.pairwise(cuts):
                _feed(part, name, {c: values[a:b] for c, values in mine.items()})
    merged = _placed_figures()
    for part in rng.sample(parts, len(parts)):
        for mine, theirs in zip(merged, pickle.loads(pickle.dumps(part)), strict=True):
            mine.merge(theirs)
    if placed:
        for figures in merged:
            figures.settle(lambda place: place[1])
    return merged


def _shown(figures: tuple) -> list[str]:
    """Every table the report shows of the figures, as text."""
    group, topo, anomalies = figures
    frames = [group.rebalances(), group.member_epochs(), group.group_errors(), group.timeline(), group.ticks_frame(),
              topo.leader_changes(), topology.partition_health(topo.newest_rows()), anomalies.frame()]  # fmt: skip
    return [frame.astype(str).to_csv() for frame in frames] + [str(group.members_by_client()),
                                                               str(group.commit_groups())]


@pytest.mark.parametrize("seed", range(6))
def test_tasks_split_at_random_rows_merge_into_the_figures_of_one_piece(seed, cluster):
    """As on Spark: connections dealt to tasks, each task's tables cut at random rows, the tasks'
    figures pickled and merged in any order: the same figures as one piece (and where the tasks
    named connections by place, the same tables once settled)."""
    rng = random.Random(seed)
    capture = cluster if seed == 0 else rng.choice(CAPTURES)
    tables = {name: {c: list(cells(v)) for c, v in columns.items()}
              for name, columns in local.analyze([capture]).tables.items() if name in PLACED}  # fmt: skip
    whole = _placed_figures()
    for name in PLACED:
        _feed(whole, name, tables[name])
    assert _split_and_merged(tables, rng, placed=False) == whole
    assert _shown(_split_and_merged(tables, rng, placed=True)) == _shown(whole)


def _events(n: int, **values) -> dict[str, list]:
    columns = {name: [None] * n for name, _ in TABLES["group_events"]}
    columns.update({name: list(v) for name, v in values.items()})
    return columns


def test_many_groups_clients_and_heartbeats_stay_bounded():
    limit, n = 40, 30_000
    figures = GroupFigures(limit)
    figures.add(_events(n, connection_id=range(n), correlation_id=[1] * n, request_ts=range(0, n * 10**6, 10**6),
                        api_name=[("Heartbeat", "JoinGroup", "OffsetCommit")[i % 3] for i in range(n)],
                        group_id=[f"g{i}" for i in range(n)], client_id=[f"c{i}" for i in range(n)],
                        error_name=["REBALANCE_IN_PROGRESS"] * n))  # fmt: skip
    assert figures.first.total == n and len(figures.first.rows()) == LISTING_ROWS
    assert figures.membership.total == n // 3 and len(figures.membership.rows()) <= 10_000
    assert len(figures.errors.groups) == limit and figures.group_errors()["count"].sum() == n
    assert len(figures.joined.groups) == limit and len(figures.ticks.groups) == limit
    assert all(len(t.times) <= 256 for t in figures.ticks.groups.values())
    assert len(figures.commits.rows()) <= 1_000
    assert set(figures.membership.rows()[0]) and {r[2] for r in figures.membership.rows()} <= set(MEMBERSHIP)


def test_many_partitions_and_metadata_rows_stay_bounded():
    limit, n = 40, 25_000
    figures = TopologyFigures(limit)
    columns = {name: [None] * n for name, _ in TABLES["metadata_partitions"]}
    columns.update(connection_id=[1] * n, correlation_id=list(range(n)), response_ts=list(range(n)),
                   topic=[f"t{i % 500}" for i in range(n)], partition=[i % 7 for i in range(n)],
                   leader_id=[i % 3 for i in range(n)])
    figures.add(columns)
    assert figures.partitions == limit and figures.first.kept.total == n and len(figures.first.kept.rows()) == 10_000
    assert len(topology.partition_health(figures.newest_rows())) == limit


def test_rows_at_one_time_are_kept_in_connection_order_by_place_too():
    """A Spark task's connections are places, (file, packet) tuples: rows at the same time keep
    the order of their connections (as ids order them locally), not the order of their text."""
    names = [name for name, _ in TABLES["anomalies"]]

    def row(conn: object) -> tuple:
        values = dict.fromkeys(names)
        values.update(kind="gap", connection_id=conn, ts=7, count=1)
        return tuple(values[name] for name in names)

    for conns, settle in (([12, 5], None), ([(0, 12), (0, 5)], lambda place: place[1])):
        first = FirstRows("anomalies", 1)
        first.add([row(conn) for conn in conns])
        if settle is not None:
            first.settle(settle)
        assert first.frame()["connection_id"].tolist() == [5]
