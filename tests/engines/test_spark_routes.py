"""The decode tasks' shares (``engines/routes.py``): the crossing connections dealt by the census's
weights, heaviest first, and their rows sent by Spark's own hash partitioning to the task of their
share. Where a row goes decides no answer (the parity tests, with ``spark_helpers.simulate`` routing
as Spark does, check those); these check that the work is where it was planned."""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from kdissect.analysis.summary import Figures
from kdissect.engines.partition import unit_decoder
from kdissect.engines.routes import decoding_work, routes, routing_keys, shares, spark_partition, writing_work
from kdissect.engines.spark import by_connection, census, decode, segment_rows
from kdissect.engines.spark_session import session
from kdissect.engines.units import (
    PIECE,
    RUN,
    RUN_HEADER,
    SEGMENT,
    Census,
    connection_key,
    largest_first,
    plan_units,
    read_units,
    unit_census,
)
from kdissect.options import Options
from kdissect.tables.columns import TABLES
from tests.conftest import require_tool
from tests.engines.spark_helpers import REAL_CAPTURES, local_tables, rotate

CAPTURE = next(p for p in REAL_CAPTURES if p.endswith("librdkafka-produce-consume.pcap"))
VALUES = [0, 1, 2, 3, 41, 42, 1 << 31, (1 << 32) + 7, 2**63 - 1, -1, -2, -(2**63), 3_735_928_559, -123_456_789_012]


@pytest.fixture(scope="module")
def spark() -> Iterator:
    require_tool("java")
    s = session("local[2]")
    yield s
    s.stop()


def test_spark_partition_is_where_spark_s_hash_partitioning_puts_a_long(spark) -> None:
    values = VALUES + routing_keys(7) + list(range(100))
    df = spark.createDataFrame([(v,) for v in values], "v long")
    for partitions in (1, 2, 3, 4, 7, 16):
        got = df.repartition(partitions, "v").select("v", F.spark_partition_id().alias("p")).collect()
        assert sorted((r["v"], r["p"]) for r in got) == sorted((v, spark_partition(v, partitions)) for v in values)


def test_routing_keys_name_every_partition_once() -> None:
    for partitions in (1, 2, 4, 9, 64):
        keys = routing_keys(partitions)
        assert [spark_partition(k, partitions) for k in keys] == list(range(partitions))


def test_the_heaviest_key_goes_first_to_the_lightest_share_and_shares_come_heaviest_first() -> None:
    # ten keys of one file each: dealt as the longest-processing-time rule deals them
    crossing = {100 + i: (w, i) for i, w in enumerate([50, 40, 30, 30, 20, 20, 10, 5, 5, 2])}
    dealt = shares(crossing, 3)
    assert dealt == [[100, 105, 109], [101, 104, 106], [102, 103, 107, 108]]
    loads = [sum(crossing[k][0] for k in share) for share in dealt]
    assert loads == sorted(loads, reverse=True) and max(loads) - min(loads) <= 20
    assert sorted(k for share in dealt for k in share) == sorted(crossing)
    assert shares({}, 3) == [[], [], []] and shares({5: (1, 0)}, 2) == [[5], []]


def test_a_file_s_connections_stay_in_one_share_while_it_is_not_far_over_an_even_share() -> None:
    # three copies of a chatty capture (three busy clients each, files 0-2) and a record-heavy one's
    # many small connections (file 3), as in mixed-1g: each copy's busy clients in one task
    crossing = {10 * copy + i: (80_000 - 100 * i, copy) for copy in range(3) for i in range(3)}
    crossing |= {1000 + i: (4_000, 3) for i in range(50)}
    dealt = shares(crossing, 4)
    assert sorted(sorted({crossing[k][1] for k in share}) for share in dealt) == [[0], [1], [2], [3]]
    # over the bound a key goes to the lightest share, as when files are not kept together
    alone = {1: (100, 0), 2: (100, 0), 3: (100, 0), 4: (10, 1)}
    assert sorted(map(sorted, shares(alone, 3))) == [[1, 4], [2], [3]]


def test_routes_send_each_share_to_its_partition_heaviest_in_the_first() -> None:
    crossing = {10: (5, 0, 0), 11: (4, 0, 1), 12: (3, 0, 2), 13: (3, 0, 3), 14: (1, 0, 4)}
    routed = routes(crossing, [], 2)
    where = {key: spark_partition(route, 2) for key, route in routed.connections.items()}
    assert where == {10: 0, 13: 0, 11: 1, 12: 1, 14: 1}
    # a segment weighs as 1 KB of payload to decode
    assert decoding_work(3, 5 << 10) == 8 and writing_work(3, 5 << 10) == 43


def test_each_unit_s_pieces_go_to_the_task_with_the_least_writing_after_the_crossing_shares() -> None:
    # mixed-1g's shape: three chatty copies' busy clients (much to decode, little to write) in shares of
    # their own, and a record-heavy capture's many small crossing connections (much to write) in the
    # fourth; then the units' own connections: six chatty files' few, eighteen record-heavy files' many
    crossing = {10 * copy + i: (80_000, 14_000_000, copy) for copy in range(3) for i in range(3)}
    crossing |= {1000 + i: (150, 3_700_000, 3) for i in range(80)}
    own = [(100, 4_000)] * 6 + [(4_000, 40_000_000 - 2_000_000 * (u % 6)) for u in range(18)]
    partitions = 4
    routed = routes(crossing, own, partitions)
    assert sorted(routed.units) == list(range(24))
    writing = [0] * partitions
    for key, route in routed.connections.items():
        writing[spark_partition(route, partitions)] += writing_work(*crossing[key][:2])
    decoding = list(writing)
    for unit, route in routed.units.items():
        writing[spark_partition(route, partitions)] += writing_work(*own[unit])
    largest = max(writing_work(*work) for work in own)
    assert max(writing) - min(writing) <= largest  # (the longest-processing-time rule's bound)
    # the record-heavy share, heaviest to write, takes the fewest units
    heavy = decoding.index(max(decoding))
    taken = [sum(spark_partition(r, partitions) == p for r in routed.units.values()) for p in range(partitions)]
    assert taken[heavy] == min(taken)
    # as the pieces went before, by a hash of the unit's index, one task wrote far more than the others
    hashed = list(decoding)
    for unit, work in enumerate(own):
        hashed[spark_partition(unit, partitions)] += writing_work(*work)
    assert max(hashed) - min(hashed) > 2 * largest


def test_the_census_counts_each_connection_s_segments_and_payload(tmp_path: Path) -> None:
    paths = rotate(CAPTURE, tmp_path, 3)
    units = plan_units([(p, os.path.getsize(p)) for p in paths], 1 << 40)
    found = Census.merge(unit_census(u) for u in units)
    rows = pa.Table.from_batches(list(read_units([pa.record_batch({"id": range(len(units))})], units))).to_pylist()
    counts: dict[int, list] = {}  # key -> [segments, payload bytes, files]
    starts: dict[int, tuple[int, int]] = {}  # key -> (earliest time, its file)
    for r in rows:
        if r["kind"] == RUN:
            lengths = np.frombuffer(r["run"], RUN_HEADER)["payload_len"].tolist()
        elif r["kind"] == SEGMENT:
            lengths = [r["payload_len"]]
        else:
            continue
        key = connection_key(r["src_ip"], r["src_port"], r["dst_ip"], r["dst_port"])
        counted = counts.setdefault(key, [0, 0, set()])
        counted[0] += len(lengths)
        counted[1] += sum(lengths)
        counted[2].add(r["file_index"])
        starts[key] = min(starts.get(key, (r["ts"], r["file_index"])), (r["ts"], r["file_index"]))
    assert found.crossing, "the rotation cuts a connection"
    assert any(payload > 0 for _, payload, _ in found.crossing.values())
    assert found.crossing == {key: (*counts[key][:2], starts[key][1]) for key in found.crossing}
    assert len({file for _, _, file in found.crossing.values()}) > 1
    # what each unit holds alone: its connections that no other unit holds
    own = [[0, 0] for _ in units]
    for key, (segments, payload, files) in counts.items():
        if key not in found.crossing:
            (file,) = files
            own[file][0] += segments
            own[file][1] += payload
    assert found.own == [tuple(work) for work in own] and sum(s for s, _ in found.own)


def _rotated_census(spark, tmp_path: Path) -> tuple[list, list, Census]:
    """The test capture rotated in three, its units and their census, which finds connections crossing files."""
    paths = rotate(CAPTURE, tmp_path, 3)
    units = plan_units([(p, os.path.getsize(p)) for p in paths], 1 << 40)
    found = census(spark, units)
    assert found is not None and found.crossing
    return paths, units, found


def test_crossing_connections_rows_meet_in_the_partition_of_their_share(spark, tmp_path: Path) -> None:
    paths, units, found = _rotated_census(spark, tmp_path)
    partitions = 3
    rows = (by_connection(segment_rows(spark, units, found, partitions=partitions), partitions, len(paths))
            .filter(F.col("kind").isin(RUN, SEGMENT))
            .select("src_ip", "src_port", "dst_ip", "dst_port", "key", F.spark_partition_id().alias("p")).collect())
    weighed = {key: (decoding_work(work[0], work[1]), work[2]) for key, work in found.crossing.items()}
    planned = {key: p for p, share in enumerate(shares(weighed, partitions)) for key in share}
    routed = routes(found.crossing, found.own, partitions).connections
    seen = 0
    for r in rows:
        key = connection_key(r["src_ip"], r["src_port"], r["dst_ip"], r["dst_port"])
        if key in planned:
            seen += 1
            assert (r["key"], r["p"]) == (routed[key], planned[key])
        else:
            assert r["key"] == key
    assert seen


def test_each_unit_s_pieces_meet_in_the_partition_routes_deal_it_to(spark, tmp_path: Path) -> None:
    paths, units, found = _rotated_census(spark, tmp_path)
    partitions = 3
    decoder = partial(unit_decoder, files=paths, options=Options(), tables=list(TABLES), staging=None,
                      figures=Figures, first_task=max(partitions, len(units)))  # fmt: skip
    rows = (by_connection(segment_rows(spark, units, found, decoder, partitions), partitions, len(paths))
            .filter(F.col("kind") == PIECE).select("key", "pos", F.spark_partition_id().alias("p")).collect())
    routed = routes(found.crossing, found.own, partitions).units
    assert {r["pos"] >> 32 for r in rows} == set(range(len(units)))  # (a piece's place: its unit, then its order)
    for r in rows:
        assert r["key"] == routed[r["pos"] >> 32] and r["p"] == spark_partition(r["key"], partitions)


def test_the_read_tasks_take_the_largest_unit_first(spark, tmp_path: Path) -> None:
    small, large = (next(p for p in REAL_CAPTURES if p.endswith(name))
                    for name in ("kafka-python-admin.pcap", "librdkafka-midstream-produce.pcap"))  # fmt: skip
    sizes = {path: os.path.getsize(path) for path in (small, large)}
    units = plan_units([(small, sizes[small]), (large, sizes[large])], 1 << 40)  # (the small one's times first)
    assert [u.path for u in largest_first(units, sizes)] == [large, small]
    ranges = plan_units([(large, sizes[large])], 1 << 20)  # a range's bytes, the last range's to the file's end
    assert [u.index for u in largest_first(ranges, {})] == [u.index for u in ranges]  # (sizes unknown: in order)
    assert [u.index for u in largest_first(ranges, sizes)][-1] == ranges[-1].index
    # nothing crosses the two captures: each read task decodes its unit and its pieces are written by it
    decoded = decode(spark, [small, large], staging=str(tmp_path / "staging"))
    try:
        decoded.write(str(tmp_path / "out"), ["connections"])
    finally:
        decoded.close()
    first = pq.read_table(tmp_path / "out" / "connections" / "part-00000.parquet")
    ends = ["client_port", "broker_port"]
    assert sorted(first.select(ends).to_pylist(), key=str) == sorted(
        local_tables([large])[0]["connections"].select(ends).to_pylist(), key=str)


def test_the_census_runs_a_task_per_slot_and_finds_what_the_units_censuses_merged_find(spark, tmp_path: Path) -> None:
    paths = rotate(CAPTURE, tmp_path, 5)
    units = plan_units([(p, os.path.getsize(p)) for p in paths], 1 << 40)
    assert len(units) > 2
    context = spark.sparkContext
    context.setJobGroup("census-tasks", "the census' tasks")
    try:
        found = census(spark, units)
    finally:
        context.setJobGroup("", "")
    tracker = context.statusTracker()
    stages = [stage for job in tracker.getJobIdsForGroup("census-tasks")
              for stage in tracker.getJobInfo(job).stageIds]  # fmt: skip
    assert sum(tracker.getStageInfo(stage).numTasks for stage in stages) == context.defaultParallelism == 2
    assert found == Census.merge(unit_census(u) for u in units)
