"""Shared by the Spark engine tests: the local engine's tables as Arrow, rows compared order aside,
captures cut into rotated files, and the distributed steps run in-process (no Spark) for fast checks."""

from __future__ import annotations

import os
import pickle
import random
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from kdissect.analysis.report_figures import ReportFigures
from kdissect.analysis.summary import Figures, Summary
from kdissect.engines import local
from kdissect.engines.partition import ENVELOPE_SCHEMA, StagedPieces, decode_partition, read_pieces, unit_decoder
from kdissect.engines.routes import routes, spark_partition
from kdissect.engines.run import report_figures
from kdissect.engines.units import Census, plan_units, read_units, segment_order, unit_census
from kdissect.options import Options
from kdissect.sources.files import in_time_order
from kdissect.sources.reader import CaptureParser
from kdissect.sources.shapes import CaptureRecord
from kdissect.tables import merge
from kdissect.tables.arrow import to_arrow
from kdissect.tables.columns import TABLES
from kdissect.testing.cluster import Connection, metadata, produce, produced
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.pcapwrite import write_capture
from kdissect.testing.records_encode import control_record, encode_batch, new_record
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


def simulate(paths: list[str], split_bytes: int = 1 << 40, partitions: int = 3,
             options: Options | None = None, staging: str | None = None) -> dict[str, pa.Table]:  # fmt: skip
    """The Spark engine's steps without Spark: the units' census, units read (their own connections
    decoded there), the other rows hashed into partitions and sorted, each partition decoded apart,
    the pieces merged (``staging``: a directory the tasks stage their pieces in, else inline)."""
    pieces, settled = simulated_pieces(paths, split_bytes, partitions, options=options, staging=staging)
    tables = {}
    for name in TABLES:
        done = [merge.finish_piece(name, merge.read_ipc(d), settled) for n, d in pieces if n == name]
        if name == "brokers":
            tables[name] = merge.first_brokers(done)
        else:
            tables[name] = pa.concat_tables(done) if done else to_arrow(name, {c: [] for c, _ in TABLES[name]})
    return tables


def simulate_report(paths: list[str], options: Options, partitions: int = 3) -> tuple[ReportFigures, list]:
    """The Spark report's figures without Spark: the tasks' (each with its own journal), merged and
    settled as the driver does, with the aborted marks of the records the journal holds only (returned too)."""
    figures = partial(report_figures, options)
    pieces, settled = simulated_pieces(paths, partitions=partitions, figures=figures, options=options)
    merged = figures()
    for name, data in pieces:
        if name == merge.FIGURES:
            merged.merge(pickle.loads(data))
    journals = [merge.read_ipc(d) for n, d in pieces if n == merge.JOURNAL]
    marks = replayed_marks(journals, settled.topics, merged.journal.numbers())
    merged.settle(settled.opened.id_of, settled.topics, marks)
    return merged, marks


def simulated_pieces(paths: list[str], split_bytes: int = 1 << 40, partitions: int = 3,
                     figures: Callable[[], Figures] = Figures, options: Options | None = None,
                     staging: str | None = None) -> tuple[list[tuple[str, bytes]], merge.Settled]:  # fmt: skip
    """Every task's (table, piece) as the Spark engine's steps make them (staged in ``staging`` and read
    back, if given), and what the driver settles."""
    paths = in_time_order(list(paths))  # as the Spark engine plans them
    options = options or Options()
    units = plan_units([(p, os.path.getsize(p)) for p in paths], split_bytes)
    census = Census.merge(unit_census(unit) for unit in units)
    own = partial(unit_decoder, attempt=0, files=list(paths), options=options, tables=list(TABLES), staging=staging,
                  figures=figures, first_task=partitions)  # fmt: skip
    ids = [pa.record_batch({"id": range(len(units))})]
    routed = routes(census.crossing, census.own, partitions)
    read = read_units(ids, units, routed.connections, own, census.last_ts, routed.units)
    segments = pa.Table.from_batches(list(read))
    keys = np.array([spark_partition(key, partitions) for key in segments["key"].to_pylist()])  # as Spark hashes
    order = segment_order(len(paths))
    envelope = []
    for part in range(partitions):
        mine = segments.filter(pa.array(keys == part)).sort_by([(c, "ascending") for c in order])
        staged = None if staging is None else StagedPieces(staging, f"task-{part:05d}-0")
        envelope += decode_partition(mine.to_batches(), list(paths), options, list(TABLES), staged, task=part,
                                     figures=figures, several_inputs=census.repeats)  # fmt: skip
    rows = [row for b in envelope for row in zip(*(b[c].to_pylist() for c in ENVELOPE_SCHEMA.names), strict=True)]
    pieces = [(n, d) if p is None else (n, merge.ipc_bytes(piece)) for n, d, p in rows
              for piece in ([None] if p is None else read_pieces(None, p))]  # fmt: skip
    opened = merge.Opened.of_pieces(merge.read_ipc(d) for n, d in pieces if n == merge.OPENED)
    topics = merge.topic_names(merge.read_ipc(d) for n, d in pieces if n == merge.TOPICS)
    journals = [merge.read_ipc(d) for n, d in pieces if n == merge.JOURNAL]
    return pieces, merge.Settled(opened, topics, replayed_marks(journals, topics))


def replayed_marks(journals: list[pa.Table], topics: dict[str, str], rows: np.ndarray | None = None) -> merge.Marks:
    """The aborted marks as the Spark engine finds them: every task's journal calls sorted in capture
    order (``merge.JOURNAL_ORDER``) and replayed."""
    calls = pa.concat_tables([merge.JOURNAL_SCHEMA.empty_table(), *journals])
    ordered = calls.sort_by([(column, "ascending") for column in merge.JOURNAL_ORDER])
    return [mark for marks in merge.replayed([ordered], topics, rows) for mark in merge.marks_of(marks)]


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


PAYMENTS_ID, AUDIT_ID = uuid.UUID(int=0xA1), uuid.UUID(int=0xA0)  # ids that sort apart from the names


def _named(name: str, topic_id: uuid.UUID) -> dict:
    """A Metadata answer naming ``topic_id`` ``name`` (and the audit topic)."""
    answer = metadata()
    answer["topics"] = [{"name": name, "topic_id": topic_id, "partitions": answer["topics"][1]["partitions"]},
                        {"name": "zeta-audit", "topic_id": AUDIT_ID, "partitions": answer["topics"][1]["partitions"]}]
    return answer


def _by_id(offset: int, records: bytes = b"", watermark: int = 0) -> tuple[dict, dict]:
    """A read_committed Fetch v13 of payments[0] and zeta-audit[0] by topic id, and its answer: the
    same batches for both (Kafka names no topic in v13: a task whose connections never saw the
    Metadata knows them by id only)."""
    parts = [{"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]
    request = {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 24, "isolation_level": 1,
               "topics": [{"topic_id": t, "partitions": parts} for t in (PAYMENTS_ID, AUDIT_ID)]}
    answer = {"responses": [{"topic_id": t, "partitions": [{"partition_index": 0, "high_watermark": watermark,
                                                              "last_stable_offset": watermark, "records": records}]}
                            for t in (PAYMENTS_ID, AUDIT_ID)]}  # fmt: skip
    return request, answer


def transactions_at_two_places(out: Path, transactions: int) -> list[str]:
    """A transactional producer and a read_committed consumer captured at two places whose times
    interleave, each capture rotated into two files at a different time: on broker 1's host the
    Produce calls and the consumer's Fetch v13 (topics by id: payments, and zeta-audit whose id sorts
    before it) of each transaction's batch and marker; on broker 2's host (the transaction coordinator)
    InitProducerId and each EndTxn, every third one an abort (every sixth without a marker fetched:
    only the EndTxn marks its records). Broker 1's capture starts first, so its files are read
    first: the first naming of the topic id in time, "payments", is in a file read later than the
    one where "payments-stale" names it again; an EndTxn is read before the Produce it ends where
    the captures' cuts differ. Topic names, aborted marks and connection ids all hold only if a run
    replays both captures in time order."""
    tid = "tx-two-places"
    producer, consumer = Connection(1, 41001), Connection(1, 41002)
    coordinator, naming = Connection(2, 41003), Connection(2, 41004)
    consumer.call(18, 3, {"client_software_name": "c", "client_software_version": "1"}, {"api_keys": []}, 0.0, 0.1,
                  "c")  # fmt: skip
    producer.call(3, 12, {"topics": None}, _named("payments-stale", PAYMENTS_ID), 1.0, 0.5, "p")
    naming.call(3, 12, {"topics": None}, _named("payments", PAYMENTS_ID), 0.5, 0.2, "c")
    init = {"transactional_id": tid, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1}
    coordinator.call(22, 4, init, {"producer_id": 7000, "producer_epoch": 0}, 0.2, 0.1, "p")
    for i in range(transactions):
        at, abort = 10 + 10 * i, i % 3 == 0
        producer.call(0, 9, produce("payments", 0, -1, 2, tid, 7000), produced("payments", 0, 3 * i), at, 1, "p")
        coordinator.call(26, 3, {"transactional_id": tid, "producer_id": 7000, "producer_epoch": 0,
                                 "committed": not abort}, {}, at + 2, 1, "p")  # fmt: skip
        data = encode_batch([new_record(b"k", b"v", offset=j) for j in range(2)], base_offset=3 * i,
                            transactional=True, producer_id=7000, producer_epoch=0, base_sequence=2 * i)  # fmt: skip
        marker = encode_batch([control_record(0 if abort else 1)], base_offset=3 * i + 2, transactional=True,
                              control=True, producer_id=7000, producer_epoch=0)  # fmt: skip
        fetched = data if i % 6 == 3 else data + marker
        consumer.call(1, 13, *_by_id(3 * i, fetched, 3 * i + 3), at + 5, 1, "c")
    files = []
    for place, conns, cut in (("broker1", (producer, consumer), 0.4), ("broker2", (coordinator, naming), 0.6)):
        data = write_capture(sorted((s for c in conns for s in c.segments()), key=lambda s: s.ts_ns))
        ends = record_ends(data)
        files += write_rotated(data, [ends[int(len(ends) * cut)]], out / place)
    return files


def assert_same_tables(got: dict[str, pa.Table], want: dict[str, pa.Table], drop: tuple[str, ...] = ()) -> None:
    for name in TABLES:
        assert got[name].schema.remove_metadata() == want[name].schema.remove_metadata(), name
        assert rows(got[name], drop) == rows(want[name], drop), name
