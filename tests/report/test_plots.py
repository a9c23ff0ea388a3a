"""The report's pictures say what the data says: idle seconds are shown as idle (rates at zero, latency
lines broken, a "no traffic" band), a capture without errors says "no errors" instead of drawing a flat
line, time axes never repeat a label, lag is counted in whole messages from zero, and no matplotlib
warning is printed, whatever the shape of the data (one instant, a burst, a gap)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pandas as pd
import pytest

from kdissect.analysis.timeseries import TIMESERIES_COLUMNS
from kdissect.report import plots
from tests.report.test_report_formats import kdissect

T0 = pd.Timestamp("2026-11-22 08:47:46", tz="UTC")
CAPTURES = Path(__file__).resolve().parents[2] / "captures"


def _series(seconds: list[int], errors: int = 0) -> pd.DataFrame:
    """A per-second traffic series with requests in the given seconds only."""
    rows = [
        (T0 + pd.Timedelta(seconds=s), 10, 10.0, 1000, 2000, 0.5, 3.0, errors, errors / 10) for s in seconds
    ]
    return pd.DataFrame(rows, columns=TIMESERIES_COLUMNS)


def _ticks(svg: str, axis: str) -> list[str]:
    return re.findall(rf'<g id="{axis}tick_\d+">.*?<text[^>]*>([^<]*)<', svg, re.S)


def test_idle_seconds_zero_the_rates_and_break_the_latency() -> None:
    full, idle = plots._every_step(_series([0, 1, 4]), 1)
    assert list(idle) == [False, False, True, True, False, False]  # the last row closes the last step
    assert list(full["requests_per_s"].iloc[2:4]) == [0.0, 0.0]
    assert list(full["bytes_to_brokers"].iloc[2:4]) == [0.0, 0.0]
    assert full["p99_ms"].iloc[2:4].isna().all() and full["error_rate"].iloc[2:4].isna().all()
    assert "no traffic" in plots.traffic_over_time(_series([0, 1, 4]), 1).decode()
    assert "no traffic" not in plots.traffic_over_time(_series([0, 1, 2]), 1).decode()


def test_no_errors_is_said_not_drawn() -> None:
    clean = plots.traffic_over_time(_series([0, 1, 2]), 1).decode()
    assert ">no errors<" in clean and ">errors<" not in clean
    failing = plots.traffic_over_time(_series([0, 1, 2], errors=1), 1).decode()
    assert ">no errors<" not in failing and ">errors<" in failing


def test_axes_carry_units() -> None:
    svg = plots.traffic_over_time(_series([0, 1, 2]), 1).decode()
    labels = _ticks(svg, "y")
    assert any(label.endswith("/s") for label in labels)  # requests per second
    assert any(label.endswith(" kB") for label in labels)  # bytes
    assert any(label.endswith(" ms") for label in labels)  # latency


def _lag(offsets_s: list[float], lags: list[int]) -> pd.DataFrame:
    n = len(lags)
    return pd.DataFrame(
        {
            "client_id": ["consumer"] * n,
            "topic": ["orders"] * n,
            "partition": [0] * n,
            "lag": pd.array(lags, dtype="Int64"),
            "request_ts": [T0 + pd.Timedelta(seconds=s) for s in offsets_s],
        }
    )


@pytest.mark.parametrize("offsets_s", [[0.0, 0.3, 0.8], [0.0, 0.0, 0.0], [0.0, 40.0, 3600.0]])
def test_lag_axis_labels_are_distinct_whole_messages_from_zero(offsets_s: list[float]) -> None:
    svg = plots.lag_over_time(_lag(offsets_s, [3, 2, 0])).decode()
    x = _ticks(svg, "x")
    assert len(x) >= 3 and len(set(x)) == len(x), x
    assert _ticks(svg, "y") == ["0", "1", "2", "3"]


def test_one_instant_draws_without_warnings() -> None:
    events = pd.DataFrame(
        {
            "group_id": ["g"],
            "api_name": ["JoinGroup"],
            "outcome": ["ok"],
            "request_ts": [T0],
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plots.traffic_over_time(_series([0]), 1)
        plots.lag_over_time(_lag([0.0], [5]))
        plots.group_timeline(events)


def test_report_of_a_real_capture_prints_no_warning(tmp_path: Path) -> None:
    """kafka-python-admin's traffic fits in one second: matplotlib warned about it on every report."""
    done = kdissect("report", str(CAPTURES / "kafka-python-admin.pcap"), "-o", str(tmp_path / "r.html"))
    assert done.returncode == 0 and done.stderr == "", done.stderr
