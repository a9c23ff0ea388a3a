"""A long live run without a network: a real capture replayed into the live engine many times faster
than real time. Memory must stay flat: the process's RSS, the rows the sink holds, the values the
rolling figures hold and the connections followed. CI replays 60,000 exchanges;
``bench/bench_live_memory.py`` runs the same loop for a million and more by hand."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from live_longrun import long_run  # noqa: E402

SPILL_ROWS = 5_000
MB = 1 << 20


def test_memory_stays_flat_over_a_long_replay():
    run = long_run(ROOT / "captures" / "librdkafka-produce-consume.pcap", {9092}, 60_000, spill_rows=SPILL_ROWS)
    assert run.exchanges >= 60_000
    assert run.rows_spilled["exchanges"] == run.exchanges  # every row went out, in pieces
    assert run.rows_spilled["connections"] >= run.exchanges // 76 * 13  # connections ended and were written
    assert max(run.rows_held) <= 8 * SPILL_ROWS
    assert max(run.figures_held) <= 60 * 256 * 20  # window x samples per (API, broker) x keys
    assert max(run.connections_held) <= 26  # one round's connections at most: ended ones are evicted
    half = len(run.rss) // 2
    assert run.rss[-1] - run.rss[half] < 8 * MB, [r // MB for r in run.rss]
