"""The report's pictures, drawn with matplotlib as SVG (text kept as text: small, sharp, searchable).

Only this module imports matplotlib, and only when a report is built. Series are thinned to a few
hundred points each, so a picture stays tens of kilobytes whatever the capture's size. Labels that
come from the wire pass through :func:`kdissect.render.safe_text`; math-text parsing is off, so a
``$`` in a topic name is just a dollar sign.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .render import safe_text

if TYPE_CHECKING:
    import pandas as pd

MAX_POINTS = 400
MAX_SERIES = 8
_SECOND = 1 / 86400  # in matplotlib's date unit (days)
_STYLE = {
    "svg.fonttype": "none",
    "text.parse_math": False,
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.hashsalt": "kdissect",
}


@contextmanager
def _canvas(**subplots: Any) -> Iterator[tuple[Any, Any]]:
    """A figure and its axes in the report's style (matplotlib's object API: no pyplot, no GUI backend)."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(_STYLE):
        fig = Figure(figsize=subplots.pop("figsize"))
        yield fig, fig.subplots(**subplots)


def _plain_ticks(axis: Any) -> None:
    """Tick labels as plain numbers (log axes otherwise write math text, which is switched off)."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def _time_axis(fig: Any, ax: Any) -> None:
    """Wall-clock times (UTC) on the x axis, slanted so they do not overlap."""
    from matplotlib.dates import AutoDateLocator, DateFormatter

    low, high = ax.dataLim.intervalx
    if high - low < _SECOND:  # one instant: matplotlib would widen the axis to four years (and warn)
        ax.set_xlim(low - _SECOND, high + _SECOND)
    ax.xaxis.set_major_locator(AutoDateLocator(maxticks=8))
    ax.xaxis.set_major_formatter(DateFormatter("%H:%M:%S"))
    ax.set_xlabel("time (UTC)")
    fig.autofmt_xdate()


def _svg(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    return buf.getvalue()


def _thin(values: Sequence[Any], points: int = MAX_POINTS) -> list[Any]:
    """At most ``points`` values spread evenly, first and last kept."""
    n = len(values)
    if n <= points:
        return list(values)
    return [values[round(i * (n - 1) / (points - 1))] for i in range(points)]


def latency_cdf(answered: pd.DataFrame) -> bytes:
    """Cumulative share of answered requests (latency > 0) within x ms, one line per API (the busiest
    ones), log x axis."""
    with _canvas(figsize=(7.5, 3.6)) as (fig, ax):
        counts = answered["api_name"].value_counts()
        for api in counts.index[:MAX_SERIES]:
            values = sorted(answered.loc[answered["api_name"] == api, "latency_ms"].astype(float))
            n = len(values)
            idx = _thin(range(n))
            ax.step(
                [values[i] for i in idx], [(i + 1) / n for i in idx], where="post", label=f"{safe_text(str(api))} ({n})"
            )
        ax.set_xscale("log")
        _plain_ticks(ax.xaxis)
        ax.set_xlabel("latency (ms, log scale)")
        ax.set_ylabel("share of requests")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right", fontsize=7)
        return _svg(fig)


def traffic_over_time(series: pd.DataFrame) -> bytes:
    """Requests/s, bytes each way, latency p50/p99 and error rate on a shared time axis."""
    rows = series.iloc[_thin(range(len(series)))]
    t = rows["time"].dt.tz_convert(None)
    with _canvas(nrows=4, sharex=True, figsize=(7.5, 6.4)) as (fig, axes):
        axes[0].plot(t, rows["requests_per_s"], color="tab:blue")
        axes[0].set_ylabel("requests/s")
        axes[1].plot(t, rows["bytes_to_brokers"] / 1024, label="to brokers", color="tab:orange")
        axes[1].plot(t, rows["bytes_to_clients"] / 1024, label="to clients", color="tab:green")
        axes[1].set_ylabel("KiB per step")
        axes[1].legend(fontsize=7)
        axes[2].plot(t, rows["p50_ms"].astype(float), label="p50", color="tab:purple")
        axes[2].plot(t, rows["p99_ms"].astype(float), label="p99", color="tab:red")
        axes[2].set_ylabel("latency ms")
        axes[2].set_yscale("symlog", linthresh=1)
        _plain_ticks(axes[2].yaxis)
        axes[2].legend(fontsize=7)
        axes[3].plot(t, rows["error_rate"] * 100, color="tab:red")
        axes[3].set_ylabel("errors %")
        for ax in axes:
            ax.grid(True, alpha=0.3)
        _time_axis(fig, axes[-1])
        return _svg(fig)


def lag_over_time(lag: pd.DataFrame) -> bytes:
    """Fetch lag (high watermark - fetch offset) over time for the partitions that lagged most."""
    keyed = lag.assign(
        _key=[
            f"{safe_text(str(c))} {safe_text(str(t))}[{p}]"
            for c, t, p in zip(lag["client_id"], lag["topic"], lag["partition"], strict=True)
        ]
    )
    worst = keyed.groupby("_key")["lag"].max().sort_values(ascending=False).index[:MAX_SERIES]
    with _canvas(figsize=(7.5, 3.2)) as (fig, ax):
        for key in worst:
            g = keyed[keyed["_key"] == key]
            g = g.iloc[_thin(range(len(g)))]
            ax.step(g["request_ts"].dt.tz_convert(None), g["lag"].astype(float), where="post", label=key, marker=".")
        ax.set_ylabel("lag (messages)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        _time_axis(fig, ax)
        return _svg(fig)


def group_timeline(events: pd.DataFrame) -> bytes:
    """Group requests over time, one row per group and API, errors in red (normal steps in grey)."""
    rows = events.assign(
        _row=[f"{safe_text(str(g))} · {a}" for g, a in zip(events["group_id"], events["api_name"], strict=True)]
    )
    names = sorted(rows["_row"].unique())[:24]
    rows = rows[rows["_row"].isin(names)]
    with _canvas(figsize=(7.5, 0.6 + 0.28 * len(names))) as (fig, ax):
        y = {n: i for i, n in enumerate(names)}
        failed = rows["error_name"].notna() & (rows["error_name"] != "NONE")
        for mask, color, label in (
            (~failed, "tab:blue", "ok"),
            (failed & ~rows["expected"], "tab:red", "error"),
            (failed & rows["expected"], "grey", "normal step"),
        ):
            part = rows[mask]
            if not part.empty:
                ax.scatter(
                    part["request_ts"].dt.tz_convert(None),
                    [y[n] for n in part["_row"]],
                    s=14,
                    color=color,
                    label=label,
                    marker="|" if color == "tab:blue" else "o",
                )
        ax.set_yticks(range(len(names)), names)
        ax.grid(True, axis="x", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
        _time_axis(fig, ax)
        return _svg(fig)
