"""The one run module under every engine: one result type, one figures hook, one rule for input
nothing could be read from, one Parquet writer, and the faces' single entry points."""

from __future__ import annotations

from pathlib import Path

import pytest

from kdissect.engines import NothingReadable, RequestError, local
from kdissect.engines.live import LiveRequest, watch
from kdissect.engines.request import Request, run
from kdissect.engines.run import RunResult, RunStats, check_readable
from kdissect.options import Options
from kdissect.sources.shapes import SourceStats
from kdissect.tables import writer as table_writer
from kdissect.testing.synthetic import conversation, write

ENGINES = Path(__file__).resolve().parents[2] / "kdissect" / "engines"


@pytest.fixture
def capture(tmp_path: Path) -> Path:
    return write(tmp_path / "c.pcap", conversation(3, port=9092))


def test_the_figures_hook_is_called_in_one_place() -> None:
    """``Figures.add`` is where report figures plug in: every engine's pieces reach it through the run module."""
    calls = {p.name: p.read_text(encoding="utf-8").count("figures.add(") for p in ENGINES.glob("*.py")}
    assert {name: n for name, n in calls.items() if n} == {"run.py": 1}


def test_figures_are_the_same_whether_tables_are_handed_over_in_pieces_or_whole(capture: Path, tmp_path: Path
                                                                                ) -> None:  # fmt: skip
    whole = local.analyze([capture]).summary
    pieces = local.analyze([capture], Options(spill_rows=1),
                           writer=table_writer.TableWriter(tmp_path / "out", "parquet")).summary  # fmt: skip
    assert pieces == whole and whole.exchanges == 6


def test_nothing_readable_is_one_rule() -> None:
    stats = RunStats(files=2, unreadable=[("a", "not a capture"), ("b", "empty")])
    with pytest.raises(NothingReadable, match=r"^a: not a capture; b: empty$"):
        check_readable(stats, ["a", "b"])
    damaged = RunStats(files=1, source=SourceStats(anomalies=1))
    with pytest.raises(NothingReadable, match=r"^nothing could be read from c$"):
        check_readable(damaged, ["c"])
    check_readable(RunStats(files=2, source=SourceStats(packets=1), unreadable=[("a", "x")]), ["a", "b"])


def test_a_request_runs_the_local_engine_and_returns_the_one_result(capture: Path, tmp_path: Path,
                                                                    monkeypatch) -> None:  # fmt: skip
    written: list[int] = []
    monkeypatch.setattr(table_writer.ParquetFile, "write",
                        lambda self, table, write=table_writer.ParquetFile.write: (written.append(table.num_rows),
                                                                                   write(self, table)))  # fmt: skip
    notes: list[str] = []
    result = run(Request([str(capture), str(capture)], out=str(tmp_path / "out"), tables=["exchanges"],
                         notify=notes.append))  # fmt: skip
    assert isinstance(result, RunResult) and result.summary is not None and result.summary.exchanges == 6
    assert result.written == [(tmp_path / "out" / "exchanges.parquet", 6)] and sum(written) == 6
    assert result.inputs == [str(capture)] and notes == [f"{capture} is {capture} again: read once"]
    report = run(Request([str(capture)], report=True))
    # the report keeps no exchange rows (they went into its figures), but the transactional records' times
    assert report.frames is not None and report.tables == {} and len(report.frames["exchanges"]) == 0
    assert report.summary is not None and report.summary.exchanges == 6


def test_a_request_fails_in_one_line_on_bad_inputs(tmp_path: Path) -> None:
    with pytest.raises(RequestError, match="no such file"):
        run(Request([str(tmp_path / "missing.pcap")]))
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"not a capture at all")
    with pytest.raises(NothingReadable, match=r"junk\.pcap: not a pcap"):
        run(Request([str(junk)]))


class _NoView:
    def update(self, figures: object, elapsed: float) -> None:
        pass

    def close(self) -> None:
        pass


def test_the_live_engine_returns_the_one_result(capture: Path, tmp_path: Path) -> None:
    request = LiveRequest(read=str(capture), follow=False, out=str(tmp_path / "out"), tables=("exchanges",))
    result = watch(request, lambda title: _NoView())
    assert isinstance(result, RunResult) and result.live is not None and result.live.reason == "end of input"
    assert result.live.figures.exchanges == 6 and result.stats.source.packets > 0
    assert result.written == [(tmp_path / "out" / "exchanges.parquet", 6)]
    with pytest.raises(RequestError, match="cannot read"):
        watch(LiveRequest(read=str(tmp_path / "missing.pcap")), lambda title: _NoView())
