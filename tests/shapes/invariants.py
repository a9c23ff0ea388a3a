"""What must hold between a run's figures whatever the capture: one count, one meaning.

Each check returns the invariants a run broke, as sentences (empty: all held), so a test over many
shaped captures can say which shape broke what. The figures checked are the ones the faces show:
the report's tables (:mod:`kdissect.analysis`), the terminal summary (:class:`Summary`) and the live
figures (:class:`RollingFigures`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kdissect.analysis import clients, errors
from kdissect.analysis.latency import PERCENTILE_COLUMNS, latency_by
from kdissect.analysis.summary import Summary
from kdissect.decoders.apis import removed_version

if TYPE_CHECKING:
    import pandas as pd

    from kdissect.analysis.report_figures import ReportFigures
    from kdissect.analysis.rolling import RollingFigures

# Breakdowns in which every answered exchange falls in exactly one group.
COMPLETE_LATENCY = ("api", "api_version", "broker", "broker_api", "client_id", "client_host")
# Breakdowns in which every error occurrence falls in exactly one group.
COMPLETE_ERRORS = ("code", "client_id", "client_host", "broker")


def ordered_percentiles(table: pd.DataFrame) -> list[str]:
    """p50 <= p90 <= p99 <= p99.9 <= max on every row, over the figures the row shows."""
    broken = []
    for row in table[PERCENTILE_COLUMNS[1:]].itertuples(index=False):
        shown = [v for v in row if v == v and v is not None]
        if shown != sorted(shown):
            broken.append(f"percentiles out of order: {row}")
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
