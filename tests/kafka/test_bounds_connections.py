"""Resource bounds of connections, reassembly and hunting, through the command line."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

from kdissect.events import Anomaly, ConnectionSummary
from kdissect.kafka.pipeline import KafkaPipeline
from kdissect.options import Options
from kdissect.sources.segment import ACK, SYN, TcpSegment
from tests.bounds_helpers import (
    anomaly_count,
    assert_bounded,
    assert_costs_like,
    assert_linear,
    hostile,
    two_sizes,
)
from tests.conftest import PURE_PYTHON_FORCED

T0 = 1_700_000_000_000_000_000


def _syn(i: int) -> TcpSegment:
    return TcpSegment(T0 + i, "10.0.0.1", 1024 + i, "10.0.0.2", 9092, 1000, 0, SYN, 65535, b"", 0)


def test_many_short_connections_cost_little_each(tmp_path: Path) -> None:
    """A SYN, or one data segment, per connection: ~6 KB each were kept (100k: 700 MB)."""
    runs = two_sizes(tmp_path, "short_connections", 10_000)
    assert_linear(runs)
    assert_bounded(runs)
    per_connection = (runs[2].peak_rss - runs[1].peak_rss) / (2 * 10_000)  # two connections per step
    assert per_connection < 2_500, f"{per_connection:.0f} bytes per connection"


def test_connections_over_the_bound_end_early_with_a_counted_anomaly() -> None:
    pipeline = KafkaPipeline(Options(max_connections=10))
    events = [ev for i in range(25) for ev in pipeline.feed(_syn(i))] + pipeline.finish()
    caps = [ev for ev in events if isinstance(ev, Anomaly) and ev.kind == "cap"]
    assert len(caps) == 15 and "more than 10 connections" in caps[0].detail
    assert len([ev for ev in events if isinstance(ev, ConnectionSummary)]) == 25
    assert len(pipeline.connections) == 0


def test_an_ended_connection_is_freed_without_the_cycle_collector() -> None:
    pipeline = KafkaPipeline()
    data = TcpSegment(T0 + 1, "10.0.0.1", 1024, "10.0.0.2", 9092, 1001, 1, ACK, 65535, b"\0" * 8, 8)
    pipeline.feed(_syn(0))
    pipeline.feed(data)
    conn = weakref.ref(pipeline.connections[0])
    gc.disable()
    try:
        pipeline.finish()
        assert conn() is None
    finally:
        gc.enable()


def test_hunting_through_plausible_frame_heads_costs_about_what_ordinary_traffic_does(tmp_path: Path) -> None:
    # Candidates are proven only once the bytes they claim (up to ~200 KiB here) have arrived, and
    # those forgotten while MAX_WAITING others wait are tried again at the connection's end (up to
    # the 4 MiB hunt window): below that the work grows faster than the input, so sizes above it
    # measure the slope, not that offset.
    runs = two_sizes(tmp_path, "frame_heads", 4096)
    assert_linear(runs)
    assert_bounded(runs, flat=True)
    # Each proof decoded (and built) the ~200 KiB its candidate claimed: some 60x ordinary traffic.
    # The C scan and walk make it cheap; the pure Python fallback is only linear.
    if not PURE_PYTHON_FORCED:
        assert_costs_like(runs, hostile(tmp_path, "midstream_traffic", 8192), 8)


def test_proofs_that_would_walk_far_are_capped(tmp_path: Path) -> None:
    """Every 18 bytes a head whose proof walks ~60,000 topics before failing (``long_walks``):
    linear once proofs spend a budget earned per byte hunted, with the cut reported."""
    runs = two_sizes(tmp_path, "long_walks", 2048)
    assert_linear(runs)
    assert anomaly_count(runs[2].stdout, "cap") == 1
    if not PURE_PYTHON_FORCED:  # Python decoders cannot count steps: a proof costs a step per byte claimed
        assert_costs_like(runs, hostile(tmp_path, "midstream_traffic", 4096), 8)


def test_out_of_order_segments_are_linear(tmp_path: Path) -> None:
    runs = two_sizes(tmp_path, "out_of_order_segments", 30_000)
    assert_linear(runs)
    assert_bounded(runs)
