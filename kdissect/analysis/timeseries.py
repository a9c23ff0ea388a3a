"""Traffic over time: request rate, bytes each way, latency percentiles and error rate per time step."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .errors import expected_mask
from .latency import percentiles
from .moments import moment

if TYPE_CHECKING:
    import pandas as pd

TIMESERIES_COLUMNS = [
    "time",
    "requests",
    "requests_per_s",
    "bytes_to_brokers",
    "bytes_to_clients",
    "p50_ms",
    "p99_ms",
    "errors",
    "error_rate",
]


def step_for(span_s: float, points: int = 600) -> int:
    """A step in whole seconds that gives at most ``points`` steps over the span (1 s when it can)."""
    return max(1, -(-int(span_s) // points))


def time_series(tables: Mapping[str, pd.DataFrame], step_s: int = 1) -> pd.DataFrame:
    """Per step of ``step_s`` seconds (by request time, else answer time): requests, request/response
    bytes, latency p50/p99 and the share of exchanges that failed (normal protocol steps such as
    MEMBER_ID_REQUIRED excluded)."""
    import pandas as pd

    ex = tables["exchanges"]
    when = moment(ex)
    ex, when = ex[when.notna()], when[when.notna()]
    if ex.empty:
        return pd.DataFrame(columns=TIMESERIES_COLUMNS)
    failed = (ex["status"] == "error") & ~expected_mask(ex)
    frame = pd.DataFrame(
        {
            "time": when.dt.floor(f"{step_s}s"),
            "request_bytes": ex["request_bytes"].fillna(0),
            "response_bytes": ex["response_bytes"].fillna(0),
            "latency_ms": ex["latency_ms"],
            "failed": failed,
        }
    )
    rows = []
    for time, g in frame.groupby("time", sort=True):
        lat = percentiles(g["latency_ms"].tolist())
        n = len(g)
        errors = int(g["failed"].sum())
        rows.append(
            (
                time,
                n,
                n / step_s,
                int(g["request_bytes"].sum()),
                int(g["response_bytes"].sum()),
                lat.p50,
                lat.p99,
                errors,
                errors / n,
            )
        )
    return pd.DataFrame(rows, columns=TIMESERIES_COLUMNS)
