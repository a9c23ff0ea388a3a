"""A long live run without a network: a real capture replayed into :class:`LiveRun` many times faster
than real time, with memory sampled as it goes. Shared by the CI test (a smaller count) and
``bench/bench_live_memory.py`` (a million exchanges and more, by hand)."""

from __future__ import annotations

import resource
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kdissect.engines.live import LiveOptions, LiveRun
from kdissect.options import Options
from kdissect.tables.columns import TABLES, cells
from kdissect.testing.replay import capture_segments, replay


def rss_bytes() -> int:
    """The process's resident set now (not its peak)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


@dataclass
class LongRun:
    """What a long run measured: exchanges, rows handed out, and samples of what it held."""

    exchanges: int = 0
    rows_spilled: Counter[str] = field(default_factory=Counter)
    rss: list[int] = field(default_factory=list)  # bytes, one sample per checkpoint
    rows_held: list[int] = field(default_factory=list)  # table rows held by the sink
    figures_held: list[int] = field(default_factory=list)  # latency values held by the rolling figures
    connections_held: list[int] = field(default_factory=list)


def long_run(
    capture: Path, broker_ports: set[int], min_exchanges: int, checkpoints: int = 20, spill_rows: int = 5_000
) -> LongRun:
    """Replay ``capture`` until ``min_exchanges`` exchanges went through every table and figure."""
    segments = capture_segments(capture.read_bytes())
    result = LongRun()

    def spill(name: str, columns) -> None:  # the rows are counted and dropped: no disk in the loop
        result.rows_spilled[name] += len(cells(next(iter(columns.values())))) if columns else 0

    options = Options(spill_rows=spill_rows, idle_ns=60_000_000_000)
    run = LiveRun(LiveOptions(options, tables=list(TABLES), spill=spill))
    probe = LiveRun(LiveOptions())
    for seg in segments:
        probe.feed_segment(seg)
    probe.finish()
    per_round = max(1, probe.figures.exchanges)
    rounds = -(-min_exchanges // per_round)
    every = max(1, rounds // checkpoints) * len(segments)
    assert run.sink is not None
    for i, seg in enumerate(replay(segments, broker_ports, rounds), start=1):
        run.feed_segment(seg)
        if i % every == 0:
            result.rss.append(rss_bytes())
            result.rows_held.append(sum(len(rows) for rows in run.sink.rows.values()))
            result.figures_held.append(run.figures.bucket_count())
            result.connections_held.append(run.open_connections)
    run.finish()
    result.exchanges = run.figures.exchanges
    return result
