"""The Spark read side's packed path against its reference: segments the sources' native walk hands
over packed (``PackedSegments``), turned into runs and the census with numpy (``engines/units.py``),
give the same segments, payloads, places, counters and census as the same files read one segment at
a time with the native path off (records located by their bytes, as without the extension)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from kdissect.analysis.summary import Figures
from kdissect.engines import units
from kdissect.engines.partition import unit_decoder
from kdissect.engines.units import (
    RUN,
    RUN_HEADER,
    SEGMENT,
    MappedFiles,
    Unit,
    plan_units,
    read_unit,
    read_units,
    unit_census,
)
from kdissect.options import Options
from kdissect.sources import native_records
from kdissect.sources.native_records import PackedSegments
from kdissect.sources.shapes import SourceStats
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.pcapwrite import write_capture
from kdissect.testing.synthetic import T0, kafka_messages
from tests.engines.spark_helpers import (
    REAL_CAPTURES,
    assert_same_tables,
    interleaved_rotations,
    local_tables,
    record_ends,
    rotate,
    simulate,
    write_rotated,
)
from tests.sources.native_helpers import extension

pytestmark = pytest.mark.skipif(native_records._native is None, reason="the sources extension is not built")
S = 1_000_000_000


def segments(paths: list[str], split: int = 1 << 40) -> list[tuple]:
    """Every row of ``paths`` read as the Spark engine's units, a segment per place in capture order
    (runs unpacked, each segment in its own direction, its payload read from where it lies)."""
    planned = plan_units([(p, os.path.getsize(p)) for p in paths], split)
    rows = pa.Table.from_batches(list(read_units([pa.record_batch({"id": range(len(planned))})], planned))).to_pylist()
    mapped = MappedFiles(paths)
    out = []
    for r in rows:
        if r["kind"] == RUN:
            ends = ((r["src_ip"], r["src_port"]), (r["dst_ip"], r["dst_port"]))
            for header in np.frombuffer(r["run"], RUN_HEADER).tolist():
                pos, ts, seq, ack, flags, window, wire, captured, at, forward = header
                src, dst = ends if forward else ends[::-1]
                payload = mapped.payload(r["file_index"], at, captured) if at >= 0 else b""
                out.append((pos, r["file_index"], ts, *src, *dst, seq, ack, flags, window, wire, payload))
        elif r["kind"] == SEGMENT:
            out.append((r["pos"], r["file_index"], r["ts"], r["src_ip"], r["src_port"], r["dst_ip"], r["dst_port"],
                        r["seq"], r["ack"], r["flags"], r["window"], r["payload_len"], r["payload"]))  # fmt: skip
        else:  # anomalies and each unit's counters
            out.append((r["pos"], r["kind"], r["file_index"], r["ts"], r["anomaly"], r["offset"], r["detail"]))
    mapped.close()
    assert len({row[0] for row in out}) == len(out), "one row per place"
    return sorted(out)


def both_ways(paths: list[str], split: int = 1 << 40) -> tuple[list[tuple], list[tuple]]:
    """(packed, reference) segments of ``paths``."""
    packed = segments(paths, split)
    with extension(None):
        return packed, segments(paths, split)


def test_read_packed_when_the_native_walk_takes_the_records() -> None:
    unit = plan_units([(REAL_CAPTURES[0], os.path.getsize(REAL_CAPTURES[0]))], 1 << 40)[0]
    assert any(type(ev) is PackedSegments for ev in read_unit(unit, SourceStats(), packed=True))


@pytest.mark.parametrize("path", REAL_CAPTURES, ids=os.path.basename)
def test_every_capture_s_segments_and_census_are_the_reference_s(path: str) -> None:
    packed, reference = both_ways([path])
    assert packed == reference
    unit = plan_units([(path, os.path.getsize(path))], 1 << 40)[0]
    census = unit_census(unit)
    with extension(None):
        want = unit_census(unit)
    for name in ("keys", "first", "last", "segments", "payload"):
        assert getattr(census, name).tolist() == getattr(want, name).tolist(), name
    assert census.secrets == want.secrets and census.file_index == want.file_index


def test_byte_ranges_and_rotated_files_read_packed_as_the_reference(tmp_path: Path) -> None:
    capture = next(p for p in REAL_CAPTURES if p.endswith("librdkafka-produce-consume.pcap"))
    pcapng = next(p for p in REAL_CAPTURES if p.endswith(".pcapng"))
    for paths, split in (([capture], 5000), ([pcapng], 3000), (rotate(capture, tmp_path / "r", 4), 1 << 40),
                         (interleaved_rotations(tmp_path / "i"), 1 << 40)):  # fmt: skip
        packed, reference = both_ways(paths, split)
        assert packed == reference, (paths, split)


def test_runs_longer_than_a_row_holds_are_cut_as_the_reference_cuts_them(monkeypatch) -> None:
    monkeypatch.setattr(units, "RUN_SEGMENTS", 7)
    capture = next(p for p in REAL_CAPTURES if p.endswith("librdkafka-produce-consume.pcap"))
    packed, reference = both_ways([capture])
    assert packed == reference
    planned = plan_units([(capture, os.path.getsize(capture))], 1 << 40)
    rows = pa.Table.from_batches(list(read_units([pa.record_batch({"id": [0]})], planned))).to_pylist()
    runs = [len(r["run"]) // RUN_HEADER.itemsize for r in rows if r["kind"] == RUN]
    assert max(runs) == 7 and sum(runs) > 7 * len(runs) // 2


def test_a_unit_s_own_connection_among_crossing_ones_decodes_as_the_local_engine(tmp_path: Path) -> None:
    """A connection wholly inside the second file, left waiting for an answer past the idle limit, between
    packed segments of another connection that crosses files: the read task decodes it from the packed
    segments, its clock told by the other's, and the tables are the local engine's."""
    crossing = []
    for start in (0, 200, 1000, 1700):  # seconds: the crossing connection's bursts
        crossing += kafka_messages(1, t0=T0 + start * S)
    own = kafka_messages(1, t0=T0 + 300 * S)[:-1]  # its Produce request has no answer
    segs = sorted(tcp_conversation(crossing, client=("10.0.0.1", 40000))
                  + tcp_conversation(own, client=("10.0.0.3", 40001)), key=lambda s: s.ts_ns)  # fmt: skip
    data = write_capture(segs)
    ends = record_ends(data)
    first_own = next(i for i, s in enumerate(segs) if s.src_port == 40001 or s.dst_port == 40001)
    paths = write_rotated(data, [ends[first_own - 1]], tmp_path)
    assert_same_tables(simulate(paths), local_tables(paths)[0])
    with extension(None):
        assert_same_tables(simulate(paths), local_tables(paths)[0])


def test_clocks_at_many_times_sweep_as_one_clock_at_each() -> None:
    """``PartitionDecoder.clocks`` (a read task's clock told by a run of packed segments) runs the idle
    sweep exactly where ``clock`` at each segment would."""
    rng = np.random.default_rng(7)
    ts = T0 + np.cumsum(rng.integers(0, 90 * S, 400)) - rng.integers(0, 5 * S, 400)  # mostly forward, some back
    pos = np.arange(len(ts), dtype=np.int64)
    one, many = (unit_decoder(Unit(0, 0, REAL_CAPTURES[0], 0, -1), 0, [REAL_CAPTURES[0]], Options(), ["exchanges"],
                              None, Figures, 1) for _ in range(2))  # fmt: skip
    for t, p in zip(ts.tolist(), pos.tolist(), strict=True):
        one.clock(t, p)
    many.clocks(ts[:150], pos[:150])
    many.clocks(ts[150:], pos[150:])
    assert one.ticks == many.ticks > 10
    assert one.pipeline.reassembler.sweep_due() == many.pipeline.reassembler.sweep_due()


def _runs_of(paths: list[str]) -> tuple[np.ndarray, np.ndarray, list[units.Ends]]:
    """Every run of ``paths``' units, shuffled together as a decode task takes them: headers, each one's
    run (an index into the ends), and the runs' ends."""
    planned = plan_units([(p, os.path.getsize(p)) for p in paths], 1 << 40)
    rows = pa.Table.from_batches(list(read_units([pa.record_batch({"id": range(len(planned))})], planned))).to_pylist()
    rows = [r for r in rows if r["kind"] == RUN]
    headers = [np.frombuffer(r["run"], RUN_HEADER) for r in rows]
    runs = np.concatenate([np.full(len(h), i, np.int64) for i, h in enumerate(headers)])
    ends = [(r["src_ip"], r["src_port"], r["dst_ip"], r["dst_port"], r["file_index"]) for r in rows]
    order = np.random.default_rng(0).permutation(len(runs))  # files and runs interleaved
    return np.concatenate(headers)[order], runs[order], ends


def _segments_both_ways(headers: np.ndarray, runs: np.ndarray, ends: list, paths: list[str]) -> tuple[list, list]:
    """(native, reference) ``units.run_segments``, each with its own maps."""
    got = units.run_segments(headers, runs, ends, MappedFiles(paths))
    with extension(None):
        want = units.run_segments(headers, runs, ends, MappedFiles(paths))
    return got, want


def test_a_decode_task_s_runs_become_the_reference_s_segments(tmp_path: Path, monkeypatch) -> None:
    """Runs of rotated files mixed (every file mapped and unmapped again: two maps at a time), and headers
    whose payload lies past a file's end or is cut by it: the native run walk makes the reference's segments."""
    assert units._NATIVE_RUNS, "the native run walk is taken on this machine"
    monkeypatch.setattr(units, "_MAPPED_FILES", 2)
    capture = next(p for p in REAL_CAPTURES if p.endswith("librdkafka-produce-consume.pcap"))
    paths = rotate(capture, tmp_path, 5)
    headers, runs, ends = _runs_of(paths)
    assert len({end[4] for end in ends}) == len(paths) and len(headers) > 100
    size = os.path.getsize(paths[ends[runs[0]][4]])
    headers[0]["payload_at"], headers[0]["captured"] = size - 3, 10  # cut by the file's end
    headers[1]["payload_at"] = 1 << 50  # past it
    headers[2]["payload_at"] = -1  # none captured
    got, want = _segments_both_ways(headers, runs, ends, paths)
    assert got == want and len(got) == len(headers)
    assert [len(s.payload) for s in got[:3]] == [3, 0, 0]
    assert sum(len(s.payload) for s in got) > 10_000 and {type(s.payload) for s in got} == {bytes}


def test_a_run_index_or_file_index_out_of_range_raises_as_the_reference(tmp_path: Path) -> None:
    """Past either end: a negative index too, which a Python list would take from the end."""
    capture = next(p for p in REAL_CAPTURES if p.endswith("librdkafka-produce-consume.pcap"))
    headers, runs, ends = _runs_of([capture])
    for bad_runs, bad_ends in ((runs + len(ends), ends), (runs - len(ends), ends),
                               (runs, [(*end[:4], 1) for end in ends]), (runs, [(*end[:4], -1) for end in ends])):
        for native in (native_records._native, None):
            with extension(native), pytest.raises(IndexError):
                units.run_segments(headers, bad_runs, bad_ends, MappedFiles([capture]))
