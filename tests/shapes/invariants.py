"""What must hold between a run's figures whatever the capture: one count, one meaning.

Each check returns the invariants a run broke, as sentences (empty: all held), so a test over many
shaped captures can say which shape broke what. The figures checked are the ones the faces show:
the report's tables (:mod:`kdissect.analysis`), the terminal summary (:class:`Summary`), the live
figures (:class:`RollingFigures`) and the Prometheus series (:class:`LiveMetrics`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kdissect.analysis import clients, errors
from kdissect.analysis.expected import is_expected
from kdissect.analysis.latency import MIN_SAMPLES, PERCENTILE_COLUMNS, QUANTILES, latency_by
from kdissect.analysis.summary import Summary
from kdissect.decoders.apis import removed_version

if TYPE_CHECKING:
    import pandas as pd

    from kdissect.analysis.report_figures import ReportFigures
    from kdissect.analysis.rolling import RollingFigures
    from kdissect.engines.live_metrics import LiveMetrics

# Breakdowns in which every answered exchange falls in exactly one group.
COMPLETE_LATENCY = ("api", "api_version", "broker", "broker_api", "client_id", "client_host")
# Breakdowns in which every error occurrence falls in exactly one group.
COMPLETE_ERRORS = ("code", "client_id", "client_host", "broker")


def ordered_percentiles(table: pd.DataFrame) -> list[str]:
    """p50 <= p90 <= p99 <= p99.9 <= max on every row, over the figures the row shows; and a
    percentile shown only where the row's count supports it (``latency.MIN_SAMPLES``)."""
    broken = []
    for count, *row in table[PERCENTILE_COLUMNS].itertuples(index=False):
        shown = [v for v in row if v == v and v is not None]
        if shown != sorted(shown):
            broken.append(f"percentiles out of order: {row}")
        unsupported = [q for q, v in zip(QUANTILES, row, strict=False) if v == v and v is not None
                       and not count >= MIN_SAMPLES[q]]  # fmt: skip
        if unsupported:
            broken.append(f"percentiles {unsupported} shown from {count} latencies: {row}")
    return broken


def report_figures(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Every complete breakdown of the report adds up to its total; percentiles in order."""
    broken = []
    ex = tables["exchanges"]
    answered = int(ex["latency_ms"].notna().sum())
    for dimension in (*COMPLETE_LATENCY, "topic", "partition"):
        table = latency_by(tables, dimension)
        if dimension in COMPLETE_LATENCY and int(table["count"].sum()) != answered:
            broken.append(f"latency by {dimension} counts {int(table['count'].sum())}, not {answered} answered")
        broken += [f"by {dimension}: {b}" for b in ordered_percentiles(table)]
    occurrences = len(tables["errors"])
    for dimension in COMPLETE_ERRORS:
        counted = int(errors.errors_by(tables, dimension)["count"].sum())
        if counted != occurrences:
            broken.append(f"errors by {dimension} count {counted}, not {occurrences}")
    inventory = clients.inventory(tables, removed_version)
    if int(inventory["requests"].sum()) != len(ex):
        broken.append(f"client inventory counts {int(inventory['requests'].sum())} requests, not {len(ex)}")
    return broken


def summary_agrees(tables: Mapping[str, pd.DataFrame], summary: Summary) -> list[str]:
    """The terminal summary's figures are the report's: exchanges, per-API counts and percentiles."""
    broken = []
    ex = tables["exchanges"]
    if summary.exchanges != len(ex):
        broken.append(f"summary counts {summary.exchanges} exchanges, the table has {len(ex)}")
    if sum(a.count for a in summary.apis) + sum(1 for v in ex["api_name"] if v != v or v is None) != len(ex):
        broken.append("the summary's API counts do not add up to its exchanges")
    by_api = latency_by(tables, "api").set_index("api_name")
    for a in summary.apis:
        if a.name not in by_api.index:
            continue
        row = by_api.loc[a.name]
        for mine, theirs in ((a.p50_ms, row["p50"]), (a.p99_ms, row["p99"]), (a.max_ms, row["max"])):
            if (mine is None) != (theirs != theirs) or (mine is not None and abs(mine - theirs) > 1e-9):
                broken.append(f"{a.name}: summary {a.p50_ms}/{a.p99_ms}/{a.max_ms} ms, report {tuple(row)}")
                break
    return broken


def live_agrees(summary: Summary, figures: RollingFigures) -> list[str]:
    """The live figures count what the summary counts: exchanges, per API, errors and unanswered."""
    broken = []
    if figures.exchanges != summary.exchanges:
        broken.append(f"live counts {figures.exchanges} exchanges, the summary {summary.exchanges}")
    mine = {name: (t.count, t.errors, t.unanswered) for name, t in figures.apis.items()}
    theirs = {a.name: (a.count, a.errors, a.unanswered) for a in summary.apis}
    mine.pop("?", None)  # live names an exchange of no known API "?"; the summary leaves it out of its APIs
    if mine != theirs:
        broken.append(f"live per API (count, errors, unanswered) {mine} != summary {theirs}")
    if figures.failed != sum(a.errors for a in summary.apis):
        broken.append(f"live counts {figures.failed} errors, the summary {sum(a.errors for a in summary.apis)}")
    return broken


def prometheus_agrees(tables: Mapping[str, pd.DataFrame], summary: Summary, metrics: LiveMetrics) -> list[str]:
    """The Prometheus series count what the summary and the report count: requests per API, the
    latency histogram's observations per API (the answered exchanges), and every error code of the
    errors table, the failures and the expected answers (``analysis.expected``) apart. ``metrics``
    must cap no label (its ``max_label_values`` past the capture's distinct values)."""
    series: dict[str, Counter] = {name: Counter() for name in ("requests", "latency", "failures", "expected")}
    names = {"kdissect_requests_total": "requests", "kdissect_request_latency_seconds_count": "latency",
             "kdissect_request_errors_total": "failures", "kdissect_expected_answers_total": "expected"}  # fmt: skip
    for metric in metrics.registry.collect():
        for sample in metric.samples:
            if sample.name in names:
                key = sample.labels["error"] if "error" in sample.labels else sample.labels["api"]
                series[names[sample.name]][key] += int(sample.value)
    requests = sum(series["requests"].values())
    series["requests"].pop("?", None)  # an exchange of no known API: "?" in live, left out of the summary's APIs
    answered = latency_by(tables, "api").set_index("api_name")["count"]
    want = {"requests": Counter({a.name: a.count for a in summary.apis}),
            "latency": Counter({str(api): int(n) for api, n in answered.items()}),
            "failures": Counter(), "expected": Counter()}  # fmt: skip
    err = tables["errors"]
    for api, name in zip(err["api_name"].astype(str), err["error_name"].astype(str), strict=True):
        want["expected" if is_expected(api, name) else "failures"][name] += 1
    broken = [f"Prometheus {what} {dict(+series[what])} != {dict(+want[what])}" for what in series
              if +series[what] != +want[what]]  # fmt: skip
    if requests != summary.exchanges:
        broken.append(f"Prometheus counts {requests} requests, the summary {summary.exchanges}")
    return broken


def kept_figures_agree(tables: Mapping[str, pd.DataFrame], figures: ReportFigures) -> list[str]:
    """The report's group, topology and anomaly figures (a run that kept none of their rows) are
    the pandas functions over the whole tables (docs/report-figures.md)."""
    from kdissect.analysis import groups, topology

    kept, newest = figures.groups, figures.topology.newest_rows()
    shown = {
        "rebalances": (kept.rebalances(), groups.rebalances(tables)),
        "member epochs": (kept.member_epochs(), groups.member_epochs(tables)),
        "group errors": (kept.group_errors(), groups.group_errors(tables)),
        "timeline": (kept.timeline(), groups.timeline(tables).head(len(kept.timeline()))),
        "partitions": (topology.partition_health(newest), topology.partition_health(tables)),
        "leader changes": (figures.topology.leader_changes(), topology.leader_changes(tables)),
        "anomalies": (figures.anomalies.frame(), tables["anomalies"].head(len(figures.anomalies.frame()))),
    }
    broken = [f"{name}: the figures' table is not the tables' one" for name, (got, want) in shown.items()
              if not got.astype(str).reset_index(drop=True).equals(want.astype(str).reset_index(drop=True))]
    totals = {"timeline": (kept.first.total, len(tables["group_events"])),
              "anomalies": (figures.anomalies.kept.total, len(tables["anomalies"]))}  # fmt: skip
    broken += [f"{name}: {got} rows counted, the table has {want}" for name, (got, want) in totals.items()
               if got != want]
    if kept.members_by_client() != groups.members_by_client(tables):
        broken.append("a client's groups differ from the table's")
    return broken
