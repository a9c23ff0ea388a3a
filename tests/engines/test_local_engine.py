"""The local engine's surface: one call per use (analyze, events, exchanges), the same core."""

from __future__ import annotations

from pathlib import Path

import pytest

import kdissect
from kdissect.analysis.filters import compile_filter
from kdissect.engines import local
from kdissect.options import Options
from kdissect.sources import iter_capture
from kdissect.sources.segment import TcpSegment
from kdissect.tables.columns import TABLES, cells
from kdissect.testing.synthetic import conversation, write


@pytest.fixture
def capture(tmp_path: Path) -> Path:
    return write(tmp_path / "c.pcap", conversation(3, port=31337))


def test_analyze_returns_tables_and_their_figures(capture: Path) -> None:
    run = local.analyze([capture], tables=["exchanges"])
    assert set(run.tables) == {"exchanges", "connections", "anomalies"}
    assert run.summary.exchanges == len(cells(run.tables["exchanges"]["status"])) == 6
    assert {a.name: a.count for a in run.summary.apis} == {"Metadata": 3, "Produce": 3}
    assert run.stats.files == 1 and run.stats.source.packets == run.summary.packets > 0
    assert run.written == [] and not run.stats.nothing_read


def test_analyze_items_is_the_same_run_without_files(capture: Path) -> None:
    from_files = local.analyze([capture])
    from_items = local.analyze_items(iter_capture(capture), source=str(capture))  # names source_file
    for name in TABLES:
        assert {k: cells(v) for k, v in from_items.tables[name].items()} == {
            k: cells(v) for k, v in from_files.tables[name].items()
        }


def test_exchanges_come_with_their_rows_and_filter(capture: Path) -> None:
    where = compile_filter('api_name == "Produce"', dict(TABLES["exchanges"]))
    shown = list(local.exchanges([capture], where=where))
    assert [row["correlation_id"] for _, row in shown] == [101, 102, 103]
    assert all(ex.request.correlation_id == row["correlation_id"] for ex, row in shown)


def test_without_auto_detect_only_broker_ports_are_decoded(capture: Path) -> None:
    assert local.analyze([capture], Options(auto_detect=False)).summary.connections == 0
    assert local.analyze([capture], Options(ports=(31337,), auto_detect=False)).summary.exchanges == 6


def test_open_capture_takes_options_or_their_fields(capture: Path) -> None:
    cap = kdissect.open_capture(capture, auto_detect=False, ports=[31337])
    assert cap.options == Options(ports=(31337,), auto_detect=False)
    assert len(cap.exchanges) == 6 and cap.stats.source.packets > 0
    lean = kdissect.open_capture(capture, kdissect.Options(payloads=kdissect.Payloads.preview(0)))
    assert lean.options.payloads.keep == 0


class _Batches:
    """A core that records the batches it is fed: (segments, payload bytes) of each."""

    def __init__(self) -> None:
        self.batches: list[tuple[int, int]] = []
        self.source: str | None = None

    def feed_many(self, segments: list, sources: list) -> list:
        self.batches.append((len(segments), sum(len(s.payload) for s in segments)))
        return []


def test_the_core_is_fed_batches_cut_by_payload_bytes_too() -> None:
    """A batch's rows are made in one call and held until it returns: 1,024 segments of 64 KiB held
    ~480 MB more than 256. Large segments now go in batches of ``SEGMENT_BATCH_BYTES``, whether they come
    as a list (a run) or item by item, and small ones ``SEGMENT_BATCH`` at a time."""
    big = [TcpSegment(i, "a", 1, "b", 2, 0, 0, 0, 0, bytes(1 << 20), 1 << 20) for i in range(10)]
    small = [TcpSegment(i, "a", 1, "b", 2, 0, 0, 0, 0, b"x", 1) for i in range(2 * local.SEGMENT_BATCH + 5)]
    for runs in ([("f", big)], [("f", iter(big))], [("f", big[:3]), ("g", big[3:])]):
        core = _Batches()
        list(local.feed_runs(core, runs))  # type: ignore[arg-type]
        cap = local.SEGMENT_BATCH_BYTES
        assert [n for n, _ in core.batches] == [4, 4, 2] and all(size <= cap for _, size in core.batches), runs
    core = _Batches()
    list(local.feed_runs(core, [("f", small)]))  # type: ignore[arg-type]
    assert [n for n, _ in core.batches] == [local.SEGMENT_BATCH, local.SEGMENT_BATCH, 5]
