"""The Spark engine's steps without Spark: proven split points, byte ranges and rotated files read
apart, connections decoded in separate partitions and merged — all equal to the local engine."""

from __future__ import annotations

import gzip
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from kdissect.engines.partition import StagedMarks, stage_marks
from kdissect.engines.request import Request
from kdissect.engines.request import run as run_request
from kdissect.engines.units import (
    RUN,
    RUN_HEADER,
    SEGMENT,
    MappedFiles,
    plan_units,
    read_unit,
    read_units,
)
from kdissect.options import Options
from kdissect.sources.files import in_time_order, iter_capture
from kdissect.sources.segment import TcpSegment
from kdissect.sources.shapes import SourceStats
from kdissect.sources.split import pcap_layout, pcapng_cuts, prove_boundary
from kdissect.tables import merge, transactions
from kdissect.testing.packets import Encapsulation
from kdissect.testing.pcapwrite import Interface, pcapng_section, segment_frame_list, write_capture
from kdissect.testing.synthetic import conversation
from tests.engines.spark_helpers import (
    REAL_CAPTURES,
    assert_same_tables,
    interleaved_rotations,
    local_tables,
    record_ends,
    rotate,
    rows,
    simulate,
    simulate_report,
    transactions_at_two_places,
    write_rotated,
)

MIDSTREAM = next(p for p in REAL_CAPTURES if "midstream" in p)
PRODUCE_CONSUME = next(p for p in REAL_CAPTURES if p.endswith("librdkafka-produce-consume.pcap"))


def test_a_proven_boundary_is_a_record_start() -> None:
    data = Path(PRODUCE_CONSUME).read_bytes()
    layout = pcap_layout(data)
    assert layout is not None
    starts = {24, *record_ends(data)[:-1]}
    for at in range(24, len(data) - 1, 997):
        found = prove_boundary(layout, data[at:], at_eof=True)
        assert found is not None and at + found in starts
        assert not any(at <= s < at + found for s in starts), "the first boundary after the offset"


def test_only_classic_pcap_is_cut_by_its_records() -> None:
    pcapng = next(p for p in REAL_CAPTURES if p.endswith(".pcapng"))
    assert pcap_layout(Path(pcapng).read_bytes()) is None
    assert pcap_layout(b"\x1f\x8b" + bytes(40)) is None


def sections(tmp: Path) -> Path:
    """A pcapng file of two sections (little- then big-endian), each with two interfaces of other
    timestamp units whose packets alternate, so a range needs its own section's interfaces."""
    first = [replace(f, interface=i % 2) for i, f in enumerate(segment_frame_list(conversation(6, client_port=41000)))]
    second = [replace(f, interface=1 - i % 2)
              for i, f in enumerate(segment_frame_list(conversation(6, client_port=42000)))]  # fmt: skip
    path = tmp / "sections.pcapng"
    path.write_bytes(pcapng_section(first, [Interface(1, 0, 6), Interface(1, 0, 9, tsoffset=5)])
                     + pcapng_section(second, [Interface(1, 0, 0x80 | 20), Interface(1, 0, 6)], byteorder="big"))
    return path


def block_starts(data: bytes) -> list[int]:
    """Every block's offset, walking the lengths in each section's byte order."""
    starts, at, order = [], 0, "little"
    while at < len(data):
        if data[at : at + 4] == bytes.fromhex("0a0d0d0a"):
            order = "little" if data[at + 8 : at + 12] == bytes.fromhex("4d3c2b1a") else "big"
        starts.append(at)
        at += int.from_bytes(data[at + 4 : at + 8], order)
    return starts


def test_pcapng_ranges_start_on_proven_blocks_and_read_as_the_whole_file(tmp_path: Path) -> None:
    pcapng = next(p for p in REAL_CAPTURES if p.endswith(".pcapng"))
    for path in (str(sections(tmp_path)), pcapng):
        data = Path(path).read_bytes()
        whole_stats = SourceStats()
        whole = list(iter_capture(path, stats=whole_stats))
        starts = set(block_starts(data))
        for split in (999, 4096, len(data) // 3):
            units = plan_units([(path, len(data))], split)
            assert len(units) > 2 and {u.start for u in units} <= starts
            stats = [SourceStats() for _ in units]
            got = [ev for u, st in zip(units, stats, strict=True) for ev in read_unit(u, st)]
            assert got == whole, (path, split)
            for name in ("packets", "tcp_segments", "anomalies", "bytes_read", "captured_bytes"):
                assert sum(getattr(st, name) for st in stats) == getattr(whole_stats, name), name


def test_a_pcapng_walk_stops_at_a_block_it_cannot_prove(tmp_path: Path) -> None:
    data = bytearray(sections(tmp_path).read_bytes())
    cuts = pcapng_cuts(bytes(data), 999)
    bad = cuts[len(cuts) // 2].at
    data[bad + 4 : bad + 8] = (0x7FFF_FFF0).to_bytes(4, "little")  # a leading length the trailing one denies
    assert [c.at for c in pcapng_cuts(bytes(data), 999)] == [c.at for c in cuts if c.at < bad]


def test_byte_ranges_of_a_pcapng_file_decode_as_the_whole(tmp_path: Path) -> None:
    for capture in (str(sections(tmp_path)), next(p for p in REAL_CAPTURES if p.endswith(".pcapng"))):
        want, _ = local_tables([capture])
        assert_same_tables(simulate([capture], split_bytes=3000, partitions=2), want)


def test_byte_ranges_read_apart_give_the_file_s_segments() -> None:
    whole = list(iter_capture(PRODUCE_CONSUME))
    size = os.path.getsize(PRODUCE_CONSUME)
    for split in (1000, 4096, 9999, size):
        units = plan_units([(PRODUCE_CONSUME, size)], split)
        got = [ev for u in units for ev in read_unit(u, SourceStats())]
        assert got == whole, split


def read_all(paths: list[str], split: int) -> list[dict]:
    """The segment rows of every unit of ``paths`` cut at ``split`` bytes."""
    units = plan_units([(p, os.path.getsize(p)) for p in paths], split)
    return pa.Table.from_batches(list(read_units([pa.record_batch({"id": range(len(units))})], units))).to_pylist()


def payload_rows(paths: list[str], split: int = 1 << 40) -> list[dict]:
    """The segments with payload bytes of ``paths`` read as the Spark engine's units (rows of their
    own, and the segments packed in runs), in capture order."""
    rows = read_all(paths, split)
    segments = [r for r in rows if r["kind"] == SEGMENT]
    for run in (r for r in rows if r["kind"] == RUN):  # by-reference segments travel packed in runs
        for header in np.frombuffer(run["run"], RUN_HEADER).tolist():
            fields = dict(zip(RUN_HEADER.names, header, strict=True))
            segments.append({**fields, "file_index": run["file_index"], "payload": None,
                             "payload_at": None if fields["payload_at"] < 0 else fields["payload_at"]})  # fmt: skip
    return sorted((r for r in segments if r["captured"]), key=lambda r: r["pos"])


def resolved(paths: list[str], rows: list[dict]) -> list[bytes]:
    mapped = MappedFiles(paths)
    try:
        return [r["payload"] if r["payload"] is not None else mapped.payload(r["file_index"], r["payload_at"],
                                                                             r["captured"]) for r in rows]  # fmt: skip
    finally:
        mapped.close()


def test_payloads_travel_by_reference_to_where_they_lie_in_local_files() -> None:
    pcapng = next(p for p in REAL_CAPTURES if p.endswith(".pcapng"))
    for paths, split in (([PRODUCE_CONSUME], 1 << 40), ([PRODUCE_CONSUME], 5000), ([pcapng], 1 << 40)):
        want = [s.payload for s in iter_capture(paths[0]) if isinstance(s, TcpSegment) and s.payload]
        rows = payload_rows(paths, split)
        assert all(r["payload"] is None and r["payload_at"] is not None for r in rows)
        packed = [r for r in read_all(paths, split) if r["kind"] == RUN]
        assert packed and len(packed) < len(rows) // 2  # a row per run of a 4-tuple's segments, not per segment
        assert resolved(paths, rows) == want


def test_payloads_not_lying_as_they_are_in_a_file_travel_inline(tmp_path: Path) -> None:
    zipped = tmp_path / "capture.pcap.gz"
    zipped.write_bytes(gzip.compress(Path(PRODUCE_CONSUME).read_bytes()))
    fragmented = tmp_path / "fragments.pcap"  # segments over 44 bytes are rebuilt from fragments: in no one record
    fragmented.write_bytes(write_capture(conversation(2), encap=Encapsulation(fragment_size=64)))
    for path, inline in ((zipped, 0), (fragmented, 44)):
        want = [s.payload for s in iter_capture(path) if isinstance(s, TcpSegment) and s.payload]
        rows = payload_rows([str(path)])
        assert resolved([str(path)], rows) == want
        spread = [r for r in rows if r["captured"] > inline]
        assert len(spread) > 2 and all(r["payload_at"] is None for r in spread)


def test_a_range_of_a_damaged_file_reports_anomalies_at_file_offsets(tmp_path: Path) -> None:
    data = bytearray(Path(PRODUCE_CONSUME).read_bytes())
    end = record_ends(bytes(data))[40]
    data[end + 8 : end + 12] = (0x7FFF_FFF0).to_bytes(4, "little")  # an impossible captured length
    path = tmp_path / "bad.pcap"
    path.write_bytes(bytes(data))
    whole = [ev for ev in iter_capture(path) if not hasattr(ev, "seq")]
    units = plan_units([(str(path), len(data))], 2000)
    apart = [ev for u in units for ev in read_unit(u, SourceStats()) if not hasattr(ev, "seq")]
    assert whole and apart == whole


def test_partitions_decoded_apart_equal_the_local_engine_for_every_capture() -> None:
    want, _ = local_tables(REAL_CAPTURES)
    assert_same_tables(simulate(REAL_CAPTURES, partitions=4), want)


def test_rotated_files_decode_as_the_unsplit_capture(tmp_path: Path) -> None:
    want, _ = local_tables([PRODUCE_CONSUME])
    for seed in range(3):
        files = rotate(PRODUCE_CONSUME, tmp_path / str(seed), cuts=6, seed=seed)
        got = simulate(files, partitions=3)
        for name in ("exchanges", "records", "batches", "partitions", "connections"):
            assert rows(got[name], ("source_file",)) == rows(want[name], ("source_file",)), (seed, name)


def test_rotated_files_that_interleave_in_time_number_connections_as_the_local_engine(tmp_path: Path) -> None:
    """Rotated files of two captures whose times interleave: the local engine meets (and numbers)
    connections in time order across files, not file by file. Every table is the local engine's,
    connection ids and the brokers' first sighting included (with the read tasks' own decoding, and
    with every connection crossing units)."""
    files = interleaved_rotations(tmp_path)
    want, _ = local_tables(files)
    read = {path: i for i, path in enumerate(in_time_order(files))}  # the order the Spark engine plans them in
    opened = want["connections"].select(["source_file", "connection_id"]).to_pylist()
    by_file = [r["connection_id"] for r in sorted(opened, key=lambda r: (read[r["source_file"]], r["connection_id"]))]
    assert by_file != sorted(by_file)  # numbered across files, not file by file
    for partitions in (1, 3):
        assert_same_tables(simulate(files, partitions=partitions), want)
    assert_same_tables(simulate(files, split_bytes=3000, partitions=2), want)


def test_a_file_boundary_inside_a_frame(tmp_path: Path) -> None:
    segs = conversation(4)  # produce requests of 3000 bytes: three segments each
    data = write_capture(segs)
    whole = tmp_path / "whole.pcap"
    whole.write_bytes(data)
    ends = record_ends(data)
    inside = [ends[i] for i, s in enumerate(segs[:-1]) if len(s.payload) == 1448]  # a full segment: its frame goes on
    assert inside
    files = write_rotated(data, inside[::2], tmp_path / "rotated")
    want, _ = local_tables([str(whole)])
    got = simulate(files, partitions=2)
    for name in ("exchanges", "records", "connections", "anomalies"):
        assert rows(got[name], ("source_file",)) == rows(want[name], ("source_file",)), name
    assert set(got["exchanges"]["status"].to_pylist()) == {"ok"}


def test_byte_ranges_of_one_large_file_decode_as_the_whole(tmp_path: Path) -> None:
    for capture in (PRODUCE_CONSUME, MIDSTREAM):
        want, _ = local_tables([capture])
        assert_same_tables(simulate([capture], split_bytes=5000, partitions=2), want)


def test_source_file_names_the_file_a_connection_opened_in(tmp_path: Path) -> None:
    files = rotate(PRODUCE_CONSUME, tmp_path, cuts=4, seed=1)
    local, _ = local_tables(files)
    assert_same_tables(simulate(files), local)
    opened = dict(zip(*(local["connections"][c].to_pylist() for c in ("connection_id", "source_file")), strict=True))
    ex = local["exchanges"]
    assert set(ex["source_file"].to_pylist()) <= set(files)
    for conn, source in zip(ex["connection_id"].to_pylist(), ex["source_file"].to_pylist(), strict=True):
        assert opened[conn] == source


@pytest.mark.parametrize("journal_calls", [merge.JOURNAL_CALLS, 1])
def test_records_of_aborted_transactions_are_marked_across_tasks(journal_calls: int, monkeypatch) -> None:
    """A transaction's records, its ABORT marker and its EndTxn travel on different connections, decoded
    in different tasks: the journals replayed in capture order mark what the local engine marks, also
    when each task hands its journal over a call at a time (the driver merging the pieces as a stream)."""
    monkeypatch.setattr(merge, "JOURNAL_CALLS", journal_calls)
    capture = next(p for p in REAL_CAPTURES if p.endswith("librdkafka-transactions.pcap"))
    want = local_tables([capture])[0]["records"]

    def marked(table: pa.Table) -> set:
        keys = ("direction", "topic", "partition", "offset", "aborted", "aborted_by")
        return {r for r in zip(*(table[k].to_pylist() for k in keys), strict=True) if r[4]}

    assert {m[0] for m in marked(want)} == {"produce", "fetch"}  # produced records marked by a fetched marker
    for partitions in (1, 3, 7):
        assert marked(simulate([capture], partitions=partitions)["records"]) == marked(want), partitions


def test_topic_ids_and_aborted_transactions_across_interleaved_rotations_as_the_local_engine(tmp_path: Path) -> None:
    """Two captures of one transaction stream, rotated at different times (``transactions_at_two_places``):
    the topic id named first in time (in a file read later) names the Fetch v13 records, and EndTxn
    calls read before the Produce calls they end still mark them, as in the local engine; every table
    is the local engine's, with the read tasks' own decoding and with every connection crossing units."""
    files = transactions_at_two_places(tmp_path, 60)
    want, _ = local_tables(files)
    records = want["records"].to_pandas()
    fetched = want["partitions"].to_pandas().query("api_name == 'Fetch'")
    assert set(records.topic) == set(fetched.topic) == {"payments", "zeta-audit"} and fetched.topic_id.notna().all()
    assert {"end_txn", "abort_marker"} <= set(records.aborted_by.dropna())
    for partitions in (1, 3):
        assert_same_tables(simulate(files, partitions=partitions), want)
    assert_same_tables(simulate(files, split_bytes=3000, partitions=2), want)


@pytest.mark.parametrize("limits", [(None, None), (150, 20)], ids=["below", "past"])
def test_the_tasks_journals_merge_to_the_local_report_s(tmp_path: Path, limits: tuple, monkeypatch) -> None:
    """Each task keeps its bounded journal of transactional records and events, the driver merges
    and settles them (connection ids, topic names of Fetch v13 answers, aborted marks decided by other
    tasks' calls, of the records held only): below the limits and past them (an answer cut by the
    limit, topics by id whose names sort otherwise than their ids) the kept tables are the local
    report's."""
    monkeypatch.setattr(transactions, "_FILTER_EVERY", 2)  # the replay drops marks of no record held as it goes
    files = transactions_at_two_places(tmp_path, 60)
    records, events = limits
    options = Options() if records is None else Options(journal_records=records, journal_events=events)
    local = run_request(Request(files, options, report=True)).figures
    assert local is not None and local.journal is not None
    past = bool(local.journal.not_kept())
    assert past == (records is not None) == (len(local.txn_events.kept.rows()) < local.txn_events.kept.total)
    for partitions in (1, 3):
        spark, marks = simulate_report(files, options, partitions)
        assert 0 < len(marks) <= len(spark.journal.rows()) + 1  # (an answer's rows past the limit)
        assert spark.journal.not_kept() == local.journal.not_kept()
        assert spark.kept_tables() == local.kept_tables(), partitions


def test_a_capture_read_with_a_copy_of_part_of_it_decodes_apart_as_alone(tmp_path: Path) -> None:
    """Packets read twice meet their copies in each partition (segments merged by time) and are dropped
    once, as in the local engine: the tables are the capture's alone, plus the anomaly that says so."""
    capture = next(p for p in REAL_CAPTURES if p.endswith("librdkafka-produce-consume.pcap"))
    data = Path(capture).read_bytes()
    ends = record_ends(data)
    copy = tmp_path / "copy.pcap"
    copy.write_bytes(data[:24] + data[ends[len(ends) // 4]: ends[3 * len(ends) // 4]])
    alone, _ = local_tables([capture])
    for paths in ([capture, str(copy)], [str(copy), capture]):
        want, _ = local_tables(paths)
        got = simulate(paths, partitions=3)
        assert_same_tables(got, want)
        assert rows(got["exchanges"], ("source_file",)) == rows(alone["exchanges"], ("source_file",))
        assert set(got["anomalies"]["kind"].to_pylist()) == {"duplicate_packets"}


def test_staged_marks_give_a_piece_only_those_that_may_hit_its_rows(tmp_path: Path) -> None:
    """Aborted marks staged a file per task (``stage_marks``): a piece of task 2's rows 0-5 gets the
    mark over rows 5-7 only, rows 8-99 none, and a task without marks none."""
    task2, task3 = 2 << merge.ROW_BITS, 3 << merge.ROW_BITS
    marks = [(task2 | 5, 3, "end_txn"), (task2 | 100, 2, "abort_marker"), (task3 | 1, 1, "end_txn")]
    table = pa.table({"task": [m[0] >> merge.ROW_BITS for m in marks], "first": [m[0] for m in marks],
                      "rows": [m[1] for m in marks], "rule": [m[2] for m in marks]},
                     schema=merge.MARKS_SCHEMA)  # fmt: skip
    written = pa.Table.from_batches(list(stage_marks(table.to_batches(max_chunksize=2), str(tmp_path))))
    assert written.to_pylist() == [{"task": 2, "rows": 2}, {"task": 3, "rows": 1}]
    staged = StagedMarks(str(tmp_path), frozenset(written["task"].to_pylist()))
    assert staged.hitting(2, task2, task2 | 6) == [marks[0]]
    assert staged.hitting(2, task2 | 8, task2 | 100) == []
    assert staged.hitting(3, task3, task3 | 2) == [marks[2]] and staged.hitting(4, 0, 1 << 62) == []
