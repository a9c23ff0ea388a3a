"""What ``kdissect live`` shows: a rich table refreshed every second, or plain periodic lines
(non-interactive output, ``--quiet``), and the summary printed when the run stops.

Every string from the wire (API names of unknown keys, client ids, topics, hosts, error names)
goes through :func:`kdissect.report.render.safe_text` and into rich as ``Text``, never as markup.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TextIO

from kdissect.analysis.rolling import RollingFigures, percentiles
from kdissect.report.render import safe_text
from kdissect.report.terminal import ANOMALY_MEANING, row_text
from kdissect.report.units import byte_rate_text, ms_text

LATENCY_SPAN = 10  # seconds of traffic the percentiles cover
RATE_SPAN = 5  # seconds the rates average over
TOP = 8


def _overall(figures: RollingFigures) -> tuple[float, ...] | None:
    values = [v for s in figures.recent(LATENCY_SPAN) for vs in s.latency.values() for v in vs]
    return percentiles(values)


def headline(f: RollingFigures, elapsed: float) -> str:
    req_s, bytes_s = f.rates(RATE_SPAN)
    pct = _overall(f)
    latency = f"p50 {ms_text(pct[0])} ms, p99 {ms_text(pct[1])} ms" if pct else "no latency yet"
    return (
        f"{elapsed:,.0f}s: {f.packets:,} packets, {f.exchanges:,} exchanges, {req_s:,.1f} req/s, "
        f"{byte_rate_text(bytes_s)}, {latency}, {f.failed:,} errors, "
        f"{f.open_connections} open connections, {f.kernel_drops:,} kernel drops, {f.gaps:,} gaps"
    )


def _top(counter: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    return sorted(counter, key=lambda kv: (-kv[1], kv[0]))[:TOP]


class PlainView:
    """One line every ``interval`` seconds (for logs, pipes and ``--quiet``)."""

    def __init__(self, interval: float = 10.0, out: TextIO | None = None) -> None:
        self.interval, self.out = interval, out or sys.stdout
        self._next = interval

    def update(self, f: RollingFigures, elapsed: float) -> None:
        if elapsed + 1e-6 < self._next:
            return
        self._next = elapsed + self.interval
        print(f"live {headline(f, elapsed)}", file=self.out, flush=True)

    def close(self) -> None:
        """The summary follows; nothing to tear down."""


class RichView:
    """The console view: headline, latency by API and broker, errors, top clients and topics."""

    def __init__(self, title: str) -> None:
        from rich.console import Console
        from rich.live import Live

        self.title = title
        self.console = Console()
        self.live = Live(console=self.console, auto_refresh=False, transient=False)
        self.live.start()

    def update(self, f: RollingFigures, elapsed: float) -> None:
        self.live.update(self.render(f, elapsed), refresh=True)

    def render(self, f: RollingFigures, elapsed: float):
        from rich.columns import Columns
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        apis = Table(title=f"last {LATENCY_SPAN} s by API and broker", title_justify="left")
        for name, justify in (
            ("api", "left"),
            ("broker", "left"),
            ("requests", "right"),
            ("p50 ms", "right"),
            ("p99 ms", "right"),
        ):
            apis.add_column(name, justify=justify)  # type: ignore[arg-type]
        by_key = sorted(f.latency_by(LATENCY_SPAN).items(), key=lambda kv: (-kv[1][0], kv[0]))
        for (api, broker), (n, pct) in by_key[:15]:
            apis.add_row(
                Text(safe_text(api)),
                Text(safe_text(broker)),
                f"{n:,}",
                ms_text(pct[0] if pct else None),
                ms_text(pct[1] if pct else None),
            )
        boxes = []
        for title, counter in (
            ("errors", f.errors.items()),
            ("top clients", f.clients.items()),
            ("top topics", f.topics.items()),
        ):
            box = Table(title=title, title_justify="left")
            box.add_column("name")
            box.add_column("count", justify="right")
            for name, n in _top(counter):
                box.add_row(Text(safe_text(name)), f"{n:,}")
            boxes.append(box)
        head = Text(f"kdissect live — {safe_text(self.title)} — {headline(f, elapsed)}")
        return Group(head, apis, Columns(boxes))

    def close(self) -> None:
        self.live.stop()


def summary_lines(f: RollingFigures, elapsed: float, reason: str) -> list[str]:
    """Whole-run figures: exchanges by API (percentiles in the summary's form), statuses, errors by
    name, top clients, anomalies."""
    lines = [
        f"stopped ({reason}) after {elapsed:,.1f} s: {f.packets:,} packets, {f.exchanges:,} exchanges, "
        f"{f.kernel_drops:,} kernel drops, {f.gaps:,} reassembly gaps"
    ]
    if f.apis:
        lines += ["", row_text(("api", "count", "p50 ms", "p99 ms", "max ms", "errors", "unanswered"))]
        for name in sorted(f.apis):
            t = f.apis[name]
            pct = t.latency.quantiles((0.5, 0.99)) if t.latency.count else None
            lines.append(
                row_text(
                    (
                        safe_text(name),
                        t.count,
                        ms_text(pct[0] if pct else None),
                        ms_text(pct[1] if pct else None),
                        ms_text(t.max_ms),
                        t.errors,
                        t.unanswered,
                    )
                )
            )
        other = sorted((k, v) for k, v in f.statuses.items() if k not in ("ok", "error"))
        if other:
            lines.append("status: " + ", ".join(f"{k} {v}" for k, v in other))
    for title, counter in (("errors", f.errors), ("top clients", f.clients), ("top topics", f.topics)):
        if counter:
            lines.append(f"{title}: " + ", ".join(f"{safe_text(k)} {v:,}" for k, v in _top(counter.items())))
    if f.anomalies:
        lines += ["", "not decoded / anomalies:"]
        for kind in sorted(f.anomalies):
            why = f" — {ANOMALY_MEANING[kind]}" if kind in ANOMALY_MEANING else ""
            lines.append(f"  {safe_text(kind)}: {f.anomalies[kind]:,}{why}")
    return lines
