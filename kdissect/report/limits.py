"""What a section's intro says of its bounds: each listing's limit beside its true total, and each
table keyed by what clients choose, how many keys it keeps. The report's figures keep bounded
parts of the capture (docs/report-figures.md, "Bounds"); the reader is told in the report itself,
in every format, not only in the docs."""

from __future__ import annotations

from kdissect.analysis.bounded import KEY_LIMIT
from kdissect.analysis.exchange_figures import CLIENT_IDS_NAMED, SLOWEST, ExchangeFigures
from kdissect.analysis.group_figures import (
    COMMITS_NAMED,
    GROUPS_NAMED,
    MEMBERSHIP,
    MEMBERSHIP_LIMIT,
    TICKS,
    GroupFigures,
)
from kdissect.analysis.journal import EVENT_LIMIT, RECORD_LIMIT
from kdissect.analysis.lag_figures import LISTED, POINTS, LagFigures
from kdissect.analysis.report_figures import BROKER_ROWS, KEPT_KEYS, ReportFigures
from kdissect.analysis.topology_figures import ROW_LIMIT, TopologyFigures

from .document import LISTING_ROWS


def first(what: str, limit: int, total: int, order: str = "in time order") -> str:
    """One listing's bound: ``what``, its first ``limit`` rows, of ``total``."""
    shown = f"all {total:,}" if total <= limit else f"the first {limit:,} {order} of {total:,}"
    return f"{what}: {shown} (limit {limit:,})"


def bounds(*parts: str) -> str:
    return "Bounds: " + "; ".join(parts) + "."


def kafka_latency(joined: ExchangeFigures) -> str:
    slow = joined.slowest.total
    return bounds(first("JoinGroup waits", LISTING_ROWS, joined.joins.total, "in capture order"),
                  f"slowest requests: the {min(SLOWEST, slow):,} slowest of {slow:,} answered outside a wait "
                  f"(limit {SLOWEST})")  # fmt: skip


def errors() -> str:
    return f"{KEPT_KEYS} Requests without a usable answer name the {CLIENT_IDS_NAMED} smallest client ids of each row."


def groups(kept: GroupFigures, lag: LagFigures) -> str:
    return bounds(
        first("timeline", LISTING_ROWS, kept.first.total),
        first(f"rebalances and member epochs are found in the {', '.join(MEMBERSHIP)} events",
              MEMBERSHIP_LIMIT, kept.membership.total),
        first("committed offsets", LISTED, lag.commits.total),
        f"a commit's group is known for the first {COMMITS_NAMED:,} OffsetCommit requests",
        f"{GROUPS_NAMED} groups named per client id",
        f"the plots keep {TICKS} points per group, API and outcome and {POINTS} per client and partition",
    ) + " " + KEPT_KEYS


def transactions(records: int, events: int, record_limit: int = RECORD_LIMIT, event_limit: int = EVENT_LIMIT) -> str:
    """The section's bounds: the journal's limits are the run's (``Options`` may set them)."""
    return bounds(
        first("transactional data records decided", record_limit, records, "in capture order")
        + ("" if records <= record_limit else ", the rest counted per topic as not kept"),
        first("transaction events walked", event_limit, events),
        first("records listed", LISTING_ROWS, records, "in capture order"),
    )


def topology(kept: TopologyFigures, brokers: int, figures: ReportFigures) -> str:
    """The section's bounds: ``brokers`` rows of the brokers table, the announcements of others counted."""
    partitions = kept.partitions
    others = figures.brokers_not_kept
    other = f", and {kept.not_kept:,} rows of partitions past that" if kept.not_kept else ""
    return bounds(
        f"brokers: {brokers:,}, the first distinct in capture order (limit {BROKER_ROWS:,}"
        + (f"; {others:,} announcements of others not kept, counted as brokers_not_kept anomalies)" if others else ")"),
        first("leader changes are found in the Metadata partition rows", ROW_LIMIT, kept.first.kept.total),
        f"partitions described: {partitions:,} (limit {KEY_LIMIT:,}, smallest CRC-32{other})",
        first("all partitions listed", LISTING_ROWS, partitions, "by topic and partition"),
    )


def anomalies(total: int) -> str:
    return " " + bounds(first("anomaly rows", LISTING_ROWS, total, "in capture order"))
