"""Build a report from a run's tables and summary: compute the figures, lay them out as a
:class:`Document`, render it as HTML, Markdown or JSON. (Reading the captures is the engine's job:
``kdissect report`` runs :func:`kdissect.engines.local.analyze` and hands its tables here.)"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from kdissect.analysis import (
    throughput,
    topology,
    transactions,
)
from kdissect.analysis.exchange_figures import SLOWEST
from kdissect.analysis.frames import in_capture_order
from kdissect.analysis.latency import SUPPORT_RULE
from kdissect.analysis.overview import Overview, overview
from kdissect.analysis.report_figures import CLIENT_IDS_LIMIT, KEPT_KEYS, PERCENTILE_FORM, ReportFigures, figures_of
from kdissect.analysis.summary import Summary
from kdissect.analysis.time_figures import BIN_LIMIT
from kdissect.decoders.apis import removed_version

from . import limits, plots
from .document import LISTING_ROWS, Document, Figure, Section, Table, cell_text
from .terminal import ANOMALY_MEANING

if TYPE_CHECKING:
    import pandas as pd

FORMATS = ("html", "md", "json")


def _figure(
    title: str, data: pd.DataFrame, draw: Callable[[pd.DataFrame], bytes], note: str | None = None
) -> list[Figure]:
    """A picture of ``data``; none when there is nothing to draw."""
    return [] if data.empty else [Figure(title, data, draw, note)]


def _facts(o: Overview) -> list[tuple[str, str]]:
    span = f"{cell_text(o.first)} → {cell_text(o.last)} ({o.span_s:,.3f} s)" if o.first is not None else "-"
    return [
        ("captures", ", ".join(o.files)),
        ("time span", span),
        ("packets", f"{o.packets:,}"),
        ("TCP connections", f"{o.connections:,} ({o.kafka_connections:,} Kafka)"),
        *([("TLS connections", f"{o.tls_connections:,} ({o.decrypted_connections:,} decrypted)")]
          if o.tls_connections else []),  # a capture without TLS says nothing of it
        ("client ids", str(o.clients) if o.clients < CLIENT_IDS_LIMIT else f"at least {o.clients:,}"),
        ("brokers", str(o.brokers)),
        ("exchanges", f"{o.exchanges:,}"),
        (
            "errors",
            f"{o.failed:,} exchanges answered with an error ({o.errors:,} error codes in them; "
            f"plus {o.expected_errors:,} normal protocol steps)",
        ),
        ("without a usable answer", f"{o.without_answer:,}"),
        ("records", f"{o.records:,}"),
        ("anomalies", ", ".join(f"{a.kind} {a.count}" for a in o.anomalies) or "none: the capture decoded whole"),
    ]


def _overview_section(tables: Mapping[str, pd.DataFrame], o: Overview, figures: ReportFigures) -> Section:
    import pandas as pd

    answered = figures.answered()
    anomalies = pd.DataFrame(
        [(a.kind, a.count, a.bytes, ANOMALY_MEANING.get(a.kind)) for a in o.anomalies],
        columns=["kind", "count", "bytes", "meaning"],
    )
    return Section(
        "overview",
        "Overview",
        "What the capture holds and how completely it could be decoded. Every number in this report "
        "is one pandas expression over the tables `kdissect analyze --out` writes: docs/report-figures.md "
        "in kdissect's repository gives each.",
        [
            *_figure(
                "Latency distribution per API (share of requests answered within x ms)",
                answered,
                plots.latency_cdf,
                "Fetch and JoinGroup wait on purpose (long poll, rebalance): see Kafka-aware latency.",
            ),
            Table("Latency by API", figures.latency_table("api")),
            Table(
                "Anomalies: what could not be decoded",
                anomalies,
                "None: every byte of every connection was decoded." if anomalies.empty else None,
            ),
        ],
    )


def _latency_section(tables: Mapping[str, pd.DataFrame], figures: ReportFigures) -> Section:
    return Section(
        "latency",
        "Latency",
        "Percentiles of the time from a request's last packet to its "
        f"answer's first packet, by where the request went and who sent it; {SUPPORT_RULE}; {PERCENTILE_FORM}. "
        "A request counts once in each table (by topic: once in each topic it names). "
        f"{KEPT_KEYS}",
        [
            Table("Broker × API", figures.latency_table("broker_api")),
            Table("By API and version", figures.latency_table("api_version"), collapsed=True),
            Table("By broker", figures.latency_table("broker")),
            Table("By client id", figures.latency_table("client_id")),
            Table("By client host", figures.latency_table("client_host")),
            Table("By topic", figures.exchanges.topic_latency("topic")),
            Table("By topic and partition", figures.exchanges.topic_latency("partition"), collapsed=True),
        ],
    )


def _kafka_latency_section(figures: ReportFigures) -> Section:
    label, joined = figures.broker_label(), figures.exchanges
    joins, join_count = joined.join_waits()
    return Section(
        "kafka-latency",
        "Kafka-aware latency",
        "A Fetch long-polls up to its max_wait_ms when there is "
        "nothing to read, and a JoinGroup is held until the group has joined: such waits are not slowness. "
        "Produce latency depends on acks (-1 all in-sync replicas, 1 leader, 0 none). " + limits.kafka_latency(joined),
        [
            Table(
                "Fetch against its max wait",
                joined.fetch_waits(label),
                "waited_full: held ≥ 90% of max_wait_ms; overran: answered later than max_wait_ms allows.",
            ),
            Table("Produce by acks", joined.produce_by_acks()),
            Table("JoinGroup waits", joins, max_rows=LISTING_ROWS, total=join_count),
            Table(f"Slowest {SLOWEST} requests (waits within their bound left out)", joined.slowest_requests(label)),
        ],
    )


def _timeseries_section(figures: ReportFigures) -> Section:
    step, series = figures.time.step_s, figures.time.table()
    return Section(
        "timeseries",
        "Traffic over time",
        f"Per {step} s step, by request time (answer time for an answer whose request was not captured); "
        f"the step doubles as often as it takes to keep at most {BIN_LIMIT} steps.",
        [
            *_figure(
                "Requests, bytes, latency and errors over time",
                series,
                partial(plots.traffic_over_time, step_s=step),
            ),
            Table("Per step", series, collapsed=True),
        ],
    )


def _errors_section(figures: ReportFigures) -> Section:
    label, joined = figures.broker_label(), figures.exchanges
    return Section(
        "errors",
        "Errors",
        "Every non-zero error code in a response. A JoinGroup answered "
        "MEMBER_ID_REQUIRED is the normal first step of joining (KIP-394): expected, not an error. " + limits.errors(),
        [
            Table("By API, code and place in the response", joined.errors_by("code", label)),
            Table("By client id", joined.errors_by("client_id", label)),
            Table("By client host", joined.errors_by("client_host", label)),
            Table("By broker", joined.errors_by("broker", label)),
            Table("By topic and partition", joined.errors_by("topic", label)),
            Table("By group", joined.errors_by("group", label)),
            Table("Throttled responses", joined.throttling()),
            Table("Requests without a usable answer", joined.without_answer()),
        ],
    )


def _groups_section(figures: ReportFigures) -> Section:
    kept, lag = figures.groups, figures.exchanges.lag
    timeline = kept.timeline()
    by_client = kept.members_by_client()
    fetch_lag = lag.fetch_lag(by_client)
    commits, commit_count = lag.commit_lag(kept.commit_groups())
    return Section(
        "groups",
        "Consumer groups and lag",
        "Membership as the wire shows it (classic protocol and "
        "KIP-848 ConsumerGroupHeartbeat); lag is the Fetch answer's high watermark minus the offset "
        "the consumer fetched from. " + limits.groups(kept, lag),
        [
            *_figure("Group requests over time", kept.ticks_frame(), plots.group_timeline),
            Table("Rebalances", kept.rebalances()),
            Table("Group errors", kept.group_errors()),
            Table("Member epochs (KIP-848)", kept.member_epochs(), max_rows=LISTING_ROWS),
            *_figure("Fetch lag over time", fetch_lag, plots.lag_over_time),
            Table("Lag per group, client and partition", lag.lag_summary(by_client)),
            Table("Committed offsets against the log end", commits, max_rows=LISTING_ROWS, total=commit_count),
            Table(
                "Timeline",
                timeline.drop(columns=["connection_id", "correlation_id"]),
                max_rows=LISTING_ROWS,
                total=kept.first.total,
                collapsed=True,
            ),
        ],
    )


def _transactions_section(tables: Mapping[str, pd.DataFrame], figures: ReportFigures) -> Section:
    journal = figures.journal
    dropped = journal.not_kept() if journal is not None else {}
    listed = transactions.transactional_records(tables)
    records = len(listed) + sum(dropped.values())
    events = figures.txn_events.kept.total if figures.txn_events is not None else len(tables["txn_events"])
    return Section(
        "transactions",
        "Transactions",
        "Per transactional id: from the first call after InitProducerId "
        "(or the previous EndTxn) to EndTxn. Records are marked aborted by an ABORT marker in the capture, "
        "the broker's aborted-transactions list, or an EndTxn(abort) of their producer; `rule` says which. "
        + limits.transactions(records, events, *figures.journal_limits),
        [
            Table("Transactions", transactions.transactions(tables)),
            Table("Records by outcome", transactions.record_outcomes(tables, dropped)),
            Table(
                "Transactional records",
                listed,
                max_rows=LISTING_ROWS,
                total=records if dropped else None,
                collapsed=True,
            ),
        ],
    )


def _topology_section(tables: Mapping[str, pd.DataFrame], figures: ReportFigures) -> Section:
    kept = figures.topology
    newest = kept.newest_rows()
    health, unhealthy = topology.partition_health(newest), topology.unhealthy(newest)
    brokers = topology.brokers(tables)
    return Section(
        "topology",
        "Cluster topology",
        "From the Metadata responses: the newest state seen of each partition. "
        + limits.topology(kept, len(brokers), figures),
        [
            Table("Brokers", brokers),
            Table(
                "Partitions with a problem (no leader, ISR smaller than replicas, offline replicas)",
                unhealthy,
                None if len(unhealthy) else "None: every partition had a leader and a full ISR.",
            ),
            Table("Leader changes", kept.leader_changes(), max_rows=LISTING_ROWS),
            Table("All partitions", health, max_rows=LISTING_ROWS, collapsed=True),
        ],
    )


def _clients_section(figures: ReportFigures) -> Section:
    return Section(
        "clients",
        "Clients",
        "Software from ApiVersions v3+; removed_versions lists API versions the "
        f"newest Kafka no longer accepts (Kafka 4.0 removed many old ones). {KEPT_KEYS}",
        [
            Table("Client inventory", figures.clients.inventory(removed_version)),
        ],
    )


def _throughput_section(figures: ReportFigures) -> Section:
    partitions = figures.batches.per_partition(figures.span_s)
    return Section(
        "throughput",
        "Throughput",
        "From record batches; rates over the capture's span. Fetched "
        f"batches are data read again, so produce and fetch are kept apart. {KEPT_KEYS}",
        [
            Table("By topic", throughput.topic_sums(partitions)),
            Table("By partition", partitions, collapsed=True),
            Table("Compression by codec (ratio = decompressed / compressed)", figures.batches.compression()),
        ],
    )


def _anomaly_section(figures: ReportFigures) -> Section:
    listed = figures.anomalies
    an = listed.frame()
    return Section(
        "anomalies",
        "Anomalies",
        "Every byte that could not be decoded (gaps, resyncs, undecodable frames): how complete the picture above is."
        + limits.anomalies(listed.kept.total),
        [
            Table("Anomalies", an, "None." if an.empty else None, max_rows=LISTING_ROWS, total=listed.kept.total),
        ],
    )


def build_document(tables: Mapping[str, pd.DataFrame], summary: Summary, files: Sequence[str],
                   figures: ReportFigures | None = None) -> Document:
    """The report's content from a run's figures (:class:`~kdissect.analysis.report_figures.ReportFigures`,
    computed from ``tables`` when not given), its tables as DataFrames
    (:func:`kdissect.analysis.frames.analysis_frames`) and its summary. Rows are taken in
    :func:`~kdissect.analysis.frames.in_capture_order`, so every engine's tables give the same report."""
    tables = in_capture_order(tables)
    figures = figures if figures is not None else figures_of(tables)
    o = overview(tables, summary, files, figures)
    sections = [
        _overview_section(tables, o, figures),
        _latency_section(tables, figures),
        _kafka_latency_section(figures),
        _timeseries_section(figures),
        _errors_section(figures),
        _groups_section(figures),
        _transactions_section(tables, figures),
        _topology_section(tables, figures),
        _clients_section(figures),
        _throughput_section(figures),
        _anomaly_section(figures),
    ]
    return Document("kdissect report", _facts(o), sections)


def writer(fmt: str) -> Callable[[Document, TextIO], object]:
    """What writes a document in ``fmt``; JSON goes piece by piece (see :func:`.jsonout.write_json`)."""
    if fmt == "html":
        from .html import render_html

        return lambda document, out: out.write(render_html(document))
    if fmt == "md":
        from .markdown import render_markdown

        return lambda document, out: out.write(render_markdown(document))
    if fmt == "json":
        from .jsonout import write_json

        return write_json
    raise ValueError(f"unknown report format {fmt!r} (known: {', '.join(FORMATS)})")


def render(document: Document, fmt: str) -> bytes:
    text = io.StringIO()
    writer(fmt)(document, text)
    return text.getvalue().encode("utf-8")


SUFFIXES = {".html": "html", ".htm": "html", ".md": "md", ".markdown": "md", ".json": "json"}


def format_for(out: Path, fmt: str | None) -> str:
    """The format asked for, else the one the file name says, HTML for a name without an extension.
    Another extension is a ValueError: writing HTML into ``r.pdf`` would only surprise."""
    if fmt:
        return fmt
    if not out.suffix:
        return "html"
    try:
        return SUFFIXES[out.suffix.lower()]
    except KeyError:
        raise ValueError(f"cannot write a {out.suffix} report: the formats are html, md and json "
                         f"(from -o's extension, or --format)") from None


def write_report(
    tables: Mapping[str, pd.DataFrame], summary: Summary, files: Sequence[str], out: Path, fmt: str | None = None,
    figures: ReportFigures | None = None,
) -> Path:
    """Build the report and write it to ``out`` in ``fmt`` (default: from the file name)."""
    write = writer(format_for(out, fmt))  # an unknown format fails before the file is touched
    document = build_document(tables, summary, files, figures)
    with out.open("w", encoding="utf-8", newline="") as text:
        write(document, text)
    return out
