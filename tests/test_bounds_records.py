"""Resource bounds of record batches and the tables they fill, through the command line."""

from __future__ import annotations

import re
from pathlib import Path

from kdissect.sources.events import SourceAnomaly
from kdissect.sources.gunzip import GzipStream
from kdissect.synth.hostile import gzip_of_zeros
from tests.bounds_helpers import MiB, assert_bounded, assert_linear, two_sizes


def _count(stdout: str, kind: str) -> int:
    found = re.search(rf"^  {kind}: ([\d,]+)", stdout, re.M)
    assert found, stdout
    return int(found.group(1).replace(",", ""))


def test_lz4_batch_of_tiny_frames_is_linear(tmp_path: Path) -> None:
    """Each frame used to hand the decompressor (and get back a copy of) everything after it:
    200k frames took 17 s, 400k 87 s."""
    runs = two_sizes(tmp_path, "lz4_tiny_frames", 100_000, "--tables", "batches")
    assert_linear(runs)
    assert_bounded(runs)


def test_storm_of_bad_crc_legacy_messages_is_linear_and_flat(tmp_path: Path, tmp_path_factory) -> None:
    """Every message used to cost a row in the anomalies table and a batch object (8.5 GB, 284 s):
    now one counted row past 100 per connection, and 50,000 batches decoded per records field."""
    out = tmp_path_factory.mktemp("out")
    runs = two_sizes(tmp_path, "legacy_crc_storm", 60_000, "--out", str(out))
    assert_linear(runs)
    assert_bounded(runs, flat=True)
    assert _count(runs[2].stdout, "crc_mismatch") == 50_000  # counted, though held in 101 rows
    assert _count(runs[2].stdout, "cap") == 1


def test_crc_storm_anomalies_are_counted_not_listed(tmp_path: Path) -> None:
    runs = two_sizes(tmp_path, "legacy_crc_storm", 10_000)
    assert [_count(run.stdout, "crc_mismatch") for run in runs[1:]] == [10_000, 20_000]
    assert_bounded(runs, budget=512 * MiB)


def test_gzip_of_empty_records_is_linear_with_counted_anomalies(tmp_path: Path) -> None:
    """Millions of empty pcap records: each anomaly was a row held to the end (1.2 GB, 89 s)."""
    runs = two_sizes(tmp_path, "gzip_of_zeros", 3 * 1024, suffix=".pcap.gz")
    assert_linear(runs)
    assert_bounded(runs, flat=True)
    assert _count(runs[2].stdout, "truncated_packet") == 2 * _count(runs[1].stdout, "truncated_packet")


def test_gunzip_stops_at_the_inflation_bound_with_an_anomaly() -> None:
    bomb = gzip_of_zeros(4096)  # 4 MiB out of a few KiB
    stream = GzipStream(1 << 16, max_ratio=50, free=1 * MiB)
    pieces = list(stream.feed(bomb))
    out = sum(len(p) for p in pieces if isinstance(p, bytes))
    (cap,) = [p for p in pieces if isinstance(p, SourceAnomaly)]
    assert cap.kind == "cap" and "inflates more than 50 times" in cap.message
    assert 1 * MiB <= out <= 1 * MiB + (1 << 16)
    assert stream.close() == []


def test_inflating_batches_are_spilled_by_bytes(tmp_path: Path, tmp_path_factory) -> None:
    """16 MiB of values per request: records were spilled every 50,000 rows only (5.8 GB peak)."""
    out = tmp_path_factory.mktemp("out")
    runs = two_sizes(tmp_path, "inflating_batch", 12, "--out", str(out))
    assert_bounded(runs, budget=512 * MiB, flat=True)
    assert "wrote" in runs[2].stdout and "(384 rows)" in runs[2].stdout


def test_inflating_batches_in_the_summary_stop_keeping_payloads(tmp_path: Path) -> None:
    """Without --out nothing is written out: past the payload budget records keep sizes only."""
    runs = two_sizes(tmp_path, "inflating_batch", 24)
    assert_bounded(runs, budget=512 * MiB, flat=True)
    assert _count(runs[2].stdout, "cap") == 1
