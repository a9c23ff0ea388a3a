"""Shared by the Spark engine tests: the local engine's tables as Arrow, rows compared order aside,
captures cut into rotated files, and the distributed steps run in-process (no Spark) for fast checks."""

from __future__ import annotations

import os
import random
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from kdissect.analysis.summary import Figures, Summary
from kdissect.engines import local
from kdissect.engines.partition import decode_partition, unit_decoder
from kdissect.engines.units import Census, plan_units, read_units, segment_order, unit_census
from kdissect.options import Options
from kdissect.sources.files import in_time_order
from kdissect.sources.reader import CaptureParser
from kdissect.sources.shapes import CaptureRecord
from kdissect.tables import merge
from kdissect.tables.arrow import to_arrow
from kdissect.tables.columns import TABLES
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.pcapwrite import write_capture
from kdissect.testing.synthetic import MS, T0, kafka_messages

REPO = Path(__file__).resolve().parents[2]
REAL_CAPTURES = sorted(str(p) for p in (REPO / "captures").glob("*.pcap*"))


def local_tables(paths: list[str]) -> tuple[dict[str, pa.Table], Summary]:
    """The local engine's tables (nothing spilled) and summary figures."""
    run = local.analyze(paths, Options())
    return {name: to_arrow(name, run.tables[name]) for name in TABLES}, run.summary


def rows(table: pa.Table, drop: tuple[str, ...] = ()) -> list[str]:
    """The table's rows, order aside (each row as the repr of its sorted cells), without ``drop``."""
    keep = [c for c in table.column_names if c not in drop]
    return sorted(repr(sorted(r.items())) for r in table.select(keep).to_pylist())


def read_parquet_dir(directory: Path) -> pa.Table:
    parts = [pq.read_table(p) for p in sorted(directory.glob("*.parquet"))]
    return pa.concat_tables(parts)


def simulate(paths: list[str], split_bytes: int = 1 << 40, partitions: int = 3) -> dict[str, pa.Table]:
    """The Spark engine's steps without Spark: the units' census, units read (their own connections
    decoded there), the other rows hashed into partitions and sorted, each partition decoded apart,
    the pieces merged."""
    paths = in_time_order(list(paths))  # as the Spark engine plans them
    units = plan_units([(p, os.path.getsize(p)) for p in paths], split_bytes)
    census = Census.merge(unit_census(unit) for unit in units)
    own = partial(unit_decoder, attempt=0, files=list(paths), options=Options(), tables=list(TABLES), staging=None,
                  figures=Figures, first_task=partitions)  # fmt: skip
    ids = [pa.record_batch({"id": range(len(units))})]
    segments = pa.Table.from_batches(list(read_units(ids, units, census.crossing, own, census.last_ts)))
    keys = np.asarray(segments["key"])
    order = segment_order(len(paths))
    envelope = []
    for part in range(partitions):
        mine = segments.filter(pa.array(keys % partitions == part)).sort_by([(c, "ascending") for c in order])
        envelope += decode_partition(mine.to_batches(), list(paths), Options(), list(TABLES), task=part,
                                     several_inputs=census.repeats)  # fmt: skip
    pieces = [(n, d) for b in envelope for n, d in zip(b["table"].to_pylist(), b["data"].to_pylist(), strict=True)]
    opened = merge.Opened.of_pieces(merge.read_ipc(d) for n, d in pieces if n == merge.OPENED)
    topics = merge.topic_names(merge.read_ipc(d) for n, d in pieces if n == merge.TOPICS)
    journals = ([merge.read_ipc(d)] for n, d in pieces if n == merge.JOURNAL)
    settled = merge.Settled(opened, topics, merge.aborted_marks(journals, topics))
    tables = {}
    for name in TABLES:
        done = [merge.finish_piece(name, merge.read_ipc(d), settled) for n, d in pieces if n == name]
        if name == "brokers":
            tables[name] = merge.first_brokers(done)
        else:
            tables[name] = pa.concat_tables(done) if done else to_arrow(name, {c: [] for c, _ in TABLES[name]})
    return tables


def record_ends(data: bytes) -> list[int]:
    """Byte offsets where each record of a pcap file ends (after the global header)."""
    parser = CaptureParser()
    records = [ev for ev in parser.feed(data) + parser.close() if isinstance(ev, CaptureRecord)]
    return [r.offset + 16 + len(r.data) for r in records]


def rotate(capture: str, out: Path, cuts: int, seed: int = 0) -> list[str]:
    """``capture`` (classic pcap) cut into ``cuts + 1`` files at random record boundaries, as
    ``tcpdump -C`` would: each file starts with the global header."""
    data = Path(capture).read_bytes()
    ends = record_ends(data)[:-1]
    at = sorted(random.Random(seed).sample(ends, min(cuts, len(ends))))
    return write_rotated(data, at, out)


def write_rotated(data: bytes, cut_at: list[int], out: Path) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    paths, start = [], 24
    for i, end in enumerate([*cut_at, len(data)]):
        path = out / f"part{i:03d}.pcap"
        path.write_bytes(data[:24] + data[start:end])
        paths.append(str(path))
        start = end
    return paths


def interleaved_rotations(out: Path) -> list[str]:
    """Two captures whose connections interleave in time (the second on another subnet), each rotated
    into two files, as a set of rotated captures from two places: a connection of a file read later
    (by first time) opens before some of an earlier file's, and reveals the broker first. The first
    capture's first connection only produces, so its file starts before any Metadata answer."""
    files = []
    for subnet, starts in (("10.0.0.", (0, 40, 80)), ("10.0.1.", (20, 60, 100))):
        segments = []
        for i, start in enumerate(starts):
            messages = kafka_messages(2, t0=T0 + start * MS)
            if start == 0:
                messages = messages[2:4] + messages[6:]  # its Produce round trips only
            segments += tcp_conversation(messages, client=(f"{subnet}1", 40000 + i), server=(f"{subnet}2", 9092))
        data = write_capture(sorted(segments, key=lambda s: s.ts_ns))
        ends = record_ends(data)
        files += write_rotated(data, [ends[len(ends) // 2]], out / subnet.strip("."))
    return files


def assert_same_tables(got: dict[str, pa.Table], want: dict[str, pa.Table], drop: tuple[str, ...] = ()) -> None:
    for name in TABLES:
        assert got[name].schema.remove_metadata() == want[name].schema.remove_metadata(), name
        assert rows(got[name], drop) == rows(want[name], drop), name
