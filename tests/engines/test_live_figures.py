"""The live run's figures and what it prints: buckets roll over, counters keep a bounded number of keys,
percentiles come from the one percentile function, and wire strings reach the terminal inert."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Histogram
from rich.console import Console

from kdissect.analysis.distribution import RELATIVE_ERROR
from kdissect.analysis.latency import quantile as _quantile
from kdissect.analysis.rolling import NS, OTHER, Exchanged, LabelCap, Labels, RollingFigures, in_order
from kdissect.engines import live
from kdissect.engines.live import LiveOptions, LiveRun
from kdissect.engines.live_histogram import PieceHistogram
from kdissect.engines.live_metrics import LATENCY_BUCKETS, LiveMetrics
from kdissect.report.console import PlainView, RichView, summary_lines
from kdissect.sources.decoder import decode_capture
from kdissect.testing.replay import capture_segments

CAPTURE = Path(__file__).resolve().parents[2] / "captures" / "librdkafka-produce-consume.pcap"
HOSTILE = "evil\x1b[2J\x1b]0;owned\x07\u202egnp.exe\u200b"


def _row(
    second: int, latency: float | None = 1.0, *, client: str = "c", status: str = "ok", errors: tuple[str, ...] = ()
) -> dict[str, list]:
    """The columns of one Produce exchange (``Exchanged.of_rows``' arguments)."""
    return {"ts_ns": [second * NS], "labels": [Labels("Produce", "10.0.0.1:9092", f"{client} @ 10.0.0.2", client)],
            "latency_ms": [latency], "status": [status], "request_bytes": [100], "response_bytes": [50],
            "error_names": [errors], "topics": [("orders",)], "failed": [status == "error"]}


def _ex(second: int, latency: float | None = 1.0, **kwargs) -> Exchanged:
    """A piece of one Produce exchange."""
    return Exchanged.of_rows(**_row(second, latency, **kwargs))


def _joined(rows: list[dict[str, list]]) -> Exchanged:
    """One piece of the exchanges of ``rows``, in their order."""
    return Exchanged.of_rows(**{name: [v for row in rows for v in row[name]] for name in rows[0]})


def test_buckets_roll_over_and_old_seconds_are_dropped():
    f = RollingFigures(window=5)
    for s in range(100):
        f.add_exchanges(_ex(s))
    assert [b.second for b in f.seconds] == [95, 96, 97, 98, 99]
    f.add_exchanges(_ex(10))  # long rolled off: counted in the totals, not in a bucket
    assert f.apis["Produce"].count == 101 and sum(b.requests for b in f.seconds) == 5
    f.add_exchanges(_ex(1000))  # a jump opens only the window's worth of seconds
    assert len(f.seconds) == 5 and f.seconds[-1].second == 1000


def test_rates_and_latency_cover_the_recent_seconds():
    f = RollingFigures(window=60)
    for s in range(10):
        for i in range(s + 1):
            f.add_exchanges(_ex(s, latency=float(i)))
    req_s, bytes_s = f.rates(2)
    assert req_s == (9 + 10) / 2 and bytes_s == req_s * 150
    ((n, pct),) = f.latency_by(1).values()
    assert n == 10 and pct == (_quantile(list(range(10)), 0.5), _quantile(list(range(10)), 0.99))


def test_samples_and_counters_stay_bounded():
    f = RollingFigures(window=3, per_second_samples=10, max_keys=4)
    for i in range(10_000):
        f.add_exchanges(_ex(i // 1000, latency=float(i), client=f"client-{i}"))
    assert f.bucket_count() <= 3 * 10
    latency = f.apis["Produce"].latency
    assert latency.count == 10_000 and not latency.exact  # folded: bounded, whatever the run's length
    assert len(f.clients) == 5 and f.clients[OTHER] == 10_000 - 4
    (p50,) = latency.quantiles((0.5,))
    assert p50 == pytest.approx(4_999.5, rel=RELATIVE_ERROR)  # the summary's figure, within its bound


def test_label_cap_admits_the_first_values_only():
    cap = LabelCap(2)
    assert [cap(v) for v in ("a", "b", "c", "a", "d")] == ["a", "b", OTHER, "a", OTHER]


def _figures_with_hostile_client() -> RollingFigures:
    figures = RollingFigures()
    figures.add_exchanges(_ex(1, client=HOSTILE, status="error", errors=(HOSTILE,)))
    return figures


def test_wire_strings_reach_the_terminal_escaped():
    figures = _figures_with_hostile_client()
    console = Console(file=io.StringIO(), force_terminal=True, width=200)
    view = RichView.__new__(RichView)
    view.title = HOSTILE
    console.print(view.render(figures, 1.0))
    text = console.file.getvalue()
    for line in [text, *summary_lines(figures, 1.0, "SIGINT")]:
        assert "\x1b]0" not in line and "\x07" not in line and "\u202e" not in line and "\u200b" not in line
        assert "\x1b[2J" not in line
    assert "\\x1b[2J" in "\n".join(summary_lines(figures, 1.0, "SIGINT"))


def test_plain_view_prints_one_line_per_interval():
    out = io.StringIO()
    view = PlainView(interval=5, out=out)
    for t in range(1, 12):
        view.update(RollingFigures(), float(t))
    assert [line.split(":")[0] for line in out.getvalue().splitlines()] == ["live 5s", "live 10s"]


def test_replayed_capture_feeds_figures_and_metrics_like_the_tables():
    metrics = LiveMetrics(max_label_values=3)
    run = LiveRun(LiveOptions(), metrics=metrics)
    events, _ = decode_capture(CAPTURE.read_bytes())
    assert len(capture_segments(CAPTURE.read_bytes())) == sum(1 for e in events if hasattr(e, "seq"))
    for seg in capture_segments(CAPTURE.read_bytes()):
        run.feed_segment(seg)
    run.finish()
    assert run.figures.exchanges == 76 and run.figures.statuses == {"ok": 75, "error": 1}
    # a first join's MEMBER_ID_REQUIRED is a normal step (kdissect.analysis.expected): no error in any face
    assert run.figures.errors == {} and run.figures.failed == 0
    samples = [s for m in metrics.registry.collect() for s in m.samples]
    assert not [s for s in samples if s.name == "kdissect_request_errors_total"]
    assert [(s.labels["error"], s.value) for s in samples if s.name == "kdissect_expected_answers_total"] == [
        ("MEMBER_ID_REQUIRED", 1.0)
    ]
    assert run.figures.topics["orders"] == 46
    client_ids = {
        s.labels["client_id"] for m in metrics.registry.collect() if m.name == "kdissect_requests" for s in m.samples
    }
    assert len(client_ids) == 4 and OTHER in client_ids  # three admitted, the rest as (other)
    total = sum(
        s.value
        for m in metrics.registry.collect()
        if m.name == "kdissect_requests"
        for s in m.samples
        if s.name == "kdissect_requests_total"
    )
    assert total == 76


def test_the_figures_take_the_exchanges_at_each_tick_or_a_full_piece(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exchanges read wait in the reader until the next tick (the view's refresh) or a full piece, then
    count once: none lost, none twice, no piece past ``PIECE_EXCHANGES``."""
    run = LiveRun(LiveOptions())
    pieces: list[int] = []
    add = run.figures.add_exchanges
    monkeypatch.setattr(run.figures, "add_exchanges", lambda piece: (pieces.append(len(piece)), add(piece)))
    segments = capture_segments(CAPTURE.read_bytes())
    for seg in segments[: len(segments) // 2]:
        run.feed_segment(seg)
    waiting = run.reader.pending
    assert waiting and run.figures.exchanges + waiting == sum(pieces) + waiting
    run.tick(None)
    assert run.reader.pending == 0 and run.figures.exchanges == sum(pieces) >= waiting
    monkeypatch.setattr(live, "PIECE_EXCHANGES", 5)
    for seg in segments[len(segments) // 2 :]:
        run.feed_segment(seg)
    assert run.reader.pending < 5 and max(pieces[-3:]) == 5
    run.finish()
    assert run.figures.exchanges == sum(pieces) == 76 and run.reader.pending == 0


def _figures_state(f: RollingFigures) -> tuple:
    seconds = [(s.second, s.requests, s.errors, s.request_bytes, s.response_bytes, s.latency) for s in f.seconds]
    apis = {k: (t.count, t.errors, t.unanswered, t.max_ms, t.latency) for k, t in f.apis.items()}
    return (f.exchanges, f.failed, seconds, apis, list(f.statuses.items()), list(f.errors.items()),
            list(f.clients.items()), list(f.topics.items()), f.first_ns, f.last_ns)


def test_a_piece_counts_as_its_exchanges_one_by_one():
    """In bulk (the lanes' pieces) as row by row: seconds met out of order, capped keys, errors, no latency."""
    rows = [_row((i % 7) + (i // 50) * 3, float(i % 13) if i % 5 else None, client=f"c{i % 9}",
                 status="error" if i % 4 == 0 else "unanswered" if i % 11 == 0 else "ok",
                 errors=("NOT_LEADER_OR_FOLLOWER", f"E{i % 6}") if i % 4 == 0 else ())
            for i in range(300)]  # fmt: skip
    joined = _joined(rows)
    one_by_one, at_once = RollingFigures(window=5, max_keys=4), RollingFigures(window=5, max_keys=4)
    for row in rows:
        one_by_one.add_exchanges(Exchanged.of_rows(**row))
    at_once.add_exchanges(joined)
    assert len(joined) == 300 and at_once.failed == 75
    assert _figures_state(at_once) == _figures_state(one_by_one)


def _series(metrics: LiveMetrics) -> list:
    return [(s.name, sorted(s.labels.items()), s.value) for m in metrics.registry.collect() for s in m.samples
            if not s.name.endswith("_created")]  # fmt: skip


def test_metrics_take_a_piece_as_its_exchanges_one_by_one():
    """Label sets grouped, capped (brokers, clients and error names each as first met), bytes summed and
    latencies observed per label set in bulk, as row by row (which has one label set per piece)."""
    rows = [_row(i // 40, float(i % 17) * 7.3 if i % 5 else None, client=f"c{i % 7}",
                 status="error" if i % 4 == 0 else "ok",
                 errors=("MEMBER_ID_REQUIRED", f"E{i % 5}") if i % 4 == 0 else ())
            for i in range(300)]  # fmt: skip
    for i, row in enumerate(rows):
        row["labels"][0] = row["labels"][0]._replace(broker=f"10.0.0.{i % 5}:9092",
                                                     api=("Produce", "Fetch", "JoinGroup")[i % 3])
        row["request_bytes"][0] = i * 1_000_003
    joined = _joined(rows)
    one_by_one, at_once = LiveMetrics(max_label_values=3), LiveMetrics(max_label_values=3)
    for row in rows:
        one_by_one.add_exchanges(Exchanged.of_rows(**row))
    at_once.add_exchanges(joined)
    series = _series(at_once)
    assert series == _series(one_by_one)
    counts = [s for s in series if s[0] == "kdissect_request_latency_seconds_count"]
    assert len(counts) == 3 * 4 * 4 and sum(s[2] for s in counts) == 240  # (three of each label admitted)


@given(st.lists(st.lists(st.floats(allow_nan=False, min_value=-1.0, max_value=100.0) | st.sampled_from(LATENCY_BUCKETS),
                         max_size=40), min_size=1, max_size=4))  # fmt: skip
def test_the_piece_histogram_is_prometheus_clients_histogram(pieces: list[list[float]]):
    """Bounds, cumulative buckets, count and sum as ``Histogram.observe`` gives them, value by value."""
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    piece_histogram = PieceHistogram("h", "doc", ("api",), LATENCY_BUCKETS, ours)
    histogram = Histogram("h", "doc", ("api",), buckets=LATENCY_BUCKETS, registry=theirs)
    for i, values in enumerate(pieces):
        piece_histogram.observe_many((f"a{i % 2}",), values)
        child = histogram.labels(f"a{i % 2}")  # (a label set shows its empty buckets once named)
        for value in values:
            child.observe(value)
    assert ([(s.name, s.labels, s.value) for m in ours.collect() for s in m.samples]
            == [(s.name, s.labels, s.value) for m in theirs.collect() for s in m.samples if s.name != "h_created"])


@given(st.lists(st.tuples(st.integers(0, 40) | st.integers(0, 400), st.none() | st.floats(0, 50, allow_nan=False),
                          st.integers(0, 5), st.sampled_from(["ok", "error", "unanswered"])), min_size=1, max_size=60),
       st.lists(st.integers(1, 20), max_size=8))  # fmt: skip
def test_pieces_of_any_size_count_as_one_by_one(rows: list[tuple], cuts: list[int]) -> None:
    """However a run's exchanges are cut into pieces (seconds out of order, past the window, jumps), the figures
    are those of adding them one at a time: buckets, samples (capped), per-API latencies, capped keys."""
    made = [_row(second, latency, client=f"c{n}", status=status,
                 errors=("NOT_LEADER_OR_FOLLOWER",) if status == "error" else ())
            for second, latency, n, status in rows]  # fmt: skip
    one_by_one, in_pieces = (RollingFigures(window=4, per_second_samples=3, max_keys=3) for _ in range(2))
    for row in made:
        one_by_one.add_exchanges(Exchanged.of_rows(**row))
    start = 0
    for size in [*cuts, len(made)]:
        if start < len(made):
            in_pieces.add_exchanges(_joined(made[start:start + size]))
        start += size
    assert _figures_state(in_pieces) == _figures_state(one_by_one)


@given(st.lists(st.integers(0, 3) | st.integers(0, 1 << 20), max_size=50), st.data())
def test_in_order_groups_as_a_loop_would(numbers: list[int], data: st.DataObject) -> None:
    """Each number's chosen indexes in order, the numbers as their first chosen index comes (both sorts:
    the radix one below 2**16, the other past it)."""
    chosen = data.draw(st.lists(st.booleans(), min_size=len(numbers), max_size=len(numbers)))
    expected: dict[int, list[int]] = {}
    for i, (n, pick) in enumerate(zip(numbers, chosen, strict=True)):
        if pick:
            expected.setdefault(n, []).append(i)
    got = in_order(np.array(numbers, dtype=np.int64), np.array(chosen, dtype=bool))
    assert [(n, rows.tolist()) for n, rows in got] == list(expected.items())
