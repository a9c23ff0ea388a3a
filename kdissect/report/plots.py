"""The report's pictures, drawn with matplotlib as SVG (text kept as text: small, sharp, searchable).

Only this module imports matplotlib, and only when a report is built. Series are thinned to a few
hundred points each, so a picture stays tens of kilobytes whatever the capture's size. Labels that
come from the wire pass through :func:`kdissect.render.safe_text`; math-text parsing is off, so a
``$`` in a topic name is just a dollar sign.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .render import safe_text
from .units import bytes_text, count_text, duration_text, per_second_text, share_text

if TYPE_CHECKING:
    import pandas as pd

MAX_POINTS = 400
MAX_SERIES = 8
MIN_SPAN_S = 2.0  # the narrowest time axis drawn
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


def _plain_ticks(axis: Any, text: Callable[[float], str] = lambda v: f"{v:g}") -> None:
    """Tick labels as plain text (log axes otherwise write math text, which is switched off), in a unit
    of :mod:`kdissect.report.units` when one is given."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: text(v)))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def _time_axis(ax: Any, times: pd.Series) -> None:
    """Wall-clock times (UTC) on the x axis. The limits span at least :data:`MIN_SPAN_S` (a capture of
    one instant still gets an axis AutoDateLocator can divide, instead of a warning and one repeated
    label), and labels carry the precision the ticks need (``23:36:50.2``), so none repeats."""
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter, date2num

    times = times.dropna()  # a row with neither time is drawn nowhere; it must not make the limits NaN
    if len(times):
        lo, hi = date2num(times.min()), date2num(times.max())
        pad = max((hi - lo) * 0.02, (MIN_SPAN_S / 86_400 - (hi - lo)) / 2)
        ax.set_xlim(lo - pad, hi + pad)
    locator = AutoDateLocator(minticks=3, maxticks=8)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(
        ConciseDateFormatter(locator, formats=["%Y", "%b", "%d", "%H:%M", "%H:%M", "%H:%M:%S.%f"], show_offset=True)
    )
    ax.set_xlabel("time (UTC)")


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
    ones), log x axis. ``answered``: per API its latencies as runs (``latency_ms``, ``count``: how
    many), ascending, as the report's figures keep them."""
    from matplotlib.ticker import LogLocator

    with _canvas(figsize=(7.5, 3.6)) as (fig, ax):
        counts = answered.groupby("api_name", sort=False)["count"].sum().sort_values(ascending=False, kind="stable")
        for api in counts.index[:MAX_SERIES]:
            runs = answered[answered["api_name"] == api]
            n = int(counts[api])
            shares = (runs["count"].cumsum() / n).tolist()
            values = runs["latency_ms"].astype(float).tolist()
            idx = _thin(range(len(values)))
            ax.step(
                [values[i] for i in idx], [shares[i] for i in idx], where="post", label=f"{safe_text(str(api))} ({n})"
            )
        ax.set_xscale("log")
        low, high = ax.get_xlim()
        narrow = math.log10(high / low) < 2  # within two decades, label 1-2-5 so some labels show
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0) if narrow else (1.0,)))
        _plain_ticks(ax.xaxis, duration_text)
        _plain_ticks(ax.yaxis, share_text)
        ax.set_xlabel("latency (log scale)")
        ax.set_ylabel("share of requests")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
        return _svg(fig)


def _every_step(series: pd.DataFrame, step_s: int) -> tuple[pd.DataFrame, pd.Series]:
    """The series on every step from the first to the last, plus one closing edge (each row holds the
    step that starts at its time). Steps without a request count zero requests and bytes, and have no
    latency or error share (a break in those lines); the mask says which steps had no traffic."""
    import pandas as pd

    first, last = series["time"].iloc[0], series["time"].iloc[-1]
    steps = pd.date_range(first, last + pd.Timedelta(seconds=step_s), freq=f"{step_s}s")
    full = series.set_index("time").reindex(steps)
    idle = full["requests"].isna()
    idle.iloc[-1] = False  # the closing edge is not a step
    counted = ["requests_per_s", "bytes_to_brokers", "bytes_to_clients"]
    full[counted] = full[counted].astype(float).fillna(0)
    full.iloc[-1] = full.iloc[-2]  # the last step drawn to its end
    return full, idle


def _shade_idle(ax: Any, idle: pd.Series, step_s: int) -> None:
    """Grey bands over the steps with no traffic."""
    import pandas as pd

    runs = (idle != idle.shift()).cumsum()[idle]
    for _, run in runs.groupby(runs):
        ax.axvspan(run.index[0], run.index[-1] + pd.Timedelta(seconds=step_s), color="0.9", lw=0)


def traffic_over_time(series: pd.DataFrame, step_s: int = 1) -> bytes:
    """Requests/s, bytes each way, latency p50/p99 and error share per ``step_s`` step (a step from
    :func:`kdissect.analysis.timeseries.step_for`, so at most a few hundred steps) on a shared time
    axis. Steps without traffic are grey bands: rates drop to zero there, latency lines break. When no
    request failed, the errors panel says so instead of drawing a flat line."""
    from matplotlib.patches import Patch

    full, idle = _every_step(series, step_s)
    t = full.index.tz_convert(None)
    steps = {"drawstyle": "steps-post"}
    with _canvas(nrows=4, sharex=True, figsize=(7.5, 6.4)) as (fig, axes):
        axes[0].plot(t, full["requests_per_s"], color="tab:blue", **steps)
        axes[0].set_ylabel("requests")
        _plain_ticks(axes[0].yaxis, per_second_text)
        axes[1].plot(t, full["bytes_to_brokers"], label="to brokers", color="tab:orange", **steps)
        axes[1].plot(t, full["bytes_to_clients"], label="to clients", color="tab:green", **steps)
        axes[1].set_ylabel(f"bytes per {step_s} s")
        _plain_ticks(axes[1].yaxis, bytes_text)
        axes[1].legend(fontsize=7)
        axes[2].plot(t, full["p50_ms"].astype(float), label="p50", color="tab:purple", **steps)
        axes[2].plot(t, full["p99_ms"].astype(float), label="p99", color="tab:red", **steps)
        axes[2].set_ylabel("latency")
        axes[2].set_yscale("symlog", linthresh=1)
        _plain_ticks(axes[2].yaxis, duration_text)
        axes[2].legend(fontsize=7)
        failed = bool(full["errors"].fillna(0).sum())
        if not failed:
            axes[3].text(0.5, 0.5, "no errors", transform=axes[3].transAxes, ha="center", va="center", color="0.35")
            axes[3].set_yticks([])
            axes[3].spines["left"].set_visible(False)
        else:
            axes[3].plot(t, full["error_rate"].astype(float), color="tab:red", **steps)
            axes[3].set_ylabel("errors")
            _plain_ticks(axes[3].yaxis, share_text)
        for ax in [axes[0], axes[1], *([axes[3]] if failed else [])]:
            ax.set_ylim(bottom=0)
        for ax in axes:
            ax.grid(True, alpha=0.3)
            _shade_idle(ax, idle.set_axis(t), step_s)
        if idle.any():
            axes[0].legend(handles=[Patch(color="0.9", label="no traffic")], fontsize=7)
        _time_axis(axes[-1], t.to_series())
        return _svg(fig)


def lag_over_time(lag: pd.DataFrame) -> bytes:
    """Fetch lag (high watermark - fetch offset) over time for the partitions that lagged most: whole
    messages on a y axis from zero, the legend beside the plot so it hides no point."""
    from matplotlib.ticker import MaxNLocator

    keyed = lag.assign(
        _key=[
            f"{safe_text(str(c))} {safe_text(str(t))}[{p}]"
            for c, t, p in zip(lag["client_id"], lag["topic"], lag["partition"], strict=True)
        ]
    )
    worst = keyed.groupby("_key")["lag"].max().sort_values(ascending=False).index[:MAX_SERIES]
    shown = keyed[keyed["_key"].isin(worst)]
    with _canvas(figsize=(7.5, 3.2)) as (fig, ax):
        for key in worst:
            g = shown[shown["_key"] == key]
            g = g.iloc[_thin(range(len(g)))]
            ax.step(g["request_ts"].dt.tz_convert(None), g["lag"].astype(float), where="post", label=key, marker=".")
        ax.set_ylim(0, max(1.0, float(shown["lag"].max())) * 1.08)
        ax.yaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
        _plain_ticks(ax.yaxis, count_text)
        ax.set_ylabel("lag (messages)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
        _time_axis(ax, shown["request_ts"].dt.tz_convert(None))
        return _svg(fig)


def group_timeline(events: pd.DataFrame) -> bytes:
    """Group requests over time, one row per group and API, errors in red (normal steps in grey):
    ``events`` has ``group_id``, ``api_name``, ``request_ts`` and ``outcome`` (one of
    :data:`kdissect.analysis.group_figures.OUTCOMES`)."""
    rows = events.assign(
        _row=[f"{safe_text(str(g))} · {a}" for g, a in zip(events["group_id"], events["api_name"], strict=True)]
    )
    names = sorted(rows["_row"].unique())[:24]
    rows = rows[rows["_row"].isin(names)]
    with _canvas(figsize=(7.5, 0.6 + 0.28 * len(names))) as (fig, ax):
        y = {n: i for i, n in enumerate(names)}
        for outcome, color, label in (("ok", "tab:blue", "ok"), ("error", "tab:red", "error"),
                                      ("normal step", "grey", "normal step")):  # fmt: skip
            part = rows[rows["outcome"] == outcome]
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
        _time_axis(ax, rows["request_ts"].dt.tz_convert(None))
        return _svg(fig)
