"""Resource bounds of the capture sources, through the command line (see ``bounds_helpers``)."""

from __future__ import annotations

from pathlib import Path

from kdissect.sources.gunzip import GzipStream
from kdissect.sources.shapes import SourceAnomaly
from kdissect.testing.hostile import gzip_of_zeros
from tests.bounds_helpers import MiB, anomaly_count, assert_bounded, assert_linear, two_sizes


def test_ip_fragments_are_linear_and_bounded(tmp_path: Path) -> None:
    """Thousands of fragments of each datagram, all holes and overlaps: each used to rescan every
    fragment of its datagram (2k fragments 2.5 s, 8k 34 s)."""
    runs = two_sizes(tmp_path, "ip_fragments", 12_000)
    assert_linear(runs)
    assert_bounded(runs, flat=True)
    assert "fragment_incomplete" in runs[2].stdout


def test_gzip_of_empty_records_is_linear_with_counted_anomalies(tmp_path: Path) -> None:
    """Millions of empty pcap records: each anomaly was a row held to the end (1.2 GB, 89 s)."""
    runs = two_sizes(tmp_path, "gzip_of_zeros", 3 * 1024, suffix=".pcap.gz")
    assert_linear(runs)
    assert_bounded(runs, flat=True)
    assert anomaly_count(runs[2].stdout, "truncated_packet") == 2 * anomaly_count(runs[1].stdout, "truncated_packet")


def test_gunzip_stops_at_the_inflation_bound_with_an_anomaly() -> None:
    bomb = gzip_of_zeros(4096)  # 4 MiB out of a few KiB
    stream = GzipStream(1 << 16, max_ratio=50, free=1 * MiB)
    pieces = list(stream.feed(bomb))
    out = sum(len(p) for p in pieces if isinstance(p, bytes))
    (cap,) = [p for p in pieces if isinstance(p, SourceAnomaly)]
    assert cap.kind == "cap" and "inflates more than 50 times" in cap.message
    assert 1 * MiB <= out <= 1 * MiB + (1 << 16)
    assert stream.close() == []
