"""The report's first section: what the capture holds and how completely it decoded."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kdissect.analysis.summary import AnomalyFigures, Summary
from kdissect.dataclass import dataclass

if TYPE_CHECKING:
    import pandas as pd

    from kdissect.analysis.report_figures import ReportFigures


@dataclass(frozen=True, slots=True)
class Overview:
    files: list[str]
    first: Any  # pandas Timestamp of the first request, or None
    last: Any  # of the last response
    span_s: float
    packets: int
    connections: int
    kafka_connections: int
    tls_connections: int
    decrypted_connections: int
    clients: int  # distinct client ids
    brokers: int  # distinct node ids the cluster described
    exchanges: int
    failed: int  # exchanges answered with an error that is not a normal protocol step (the summary's errors)
    errors: int  # error occurrences that are not normal protocol steps
    expected_errors: int  # normal protocol steps answered with an error code
    without_answer: int
    records: int  # data records decoded (control markers left out)
    anomalies: list[AnomalyFigures]


def overview(tables: Mapping[str, pd.DataFrame], summary: Summary, files: Sequence[str],
             figures: ReportFigures | None = None) -> Overview:
    """The overview from the run's figures (computed from ``tables`` when not given), the ``errors``
    and ``brokers`` tables and the summary."""
    import pandas as pd

    if figures is None:
        from kdissect.analysis.report_figures import figures_of

        figures = figures_of(tables)
    times = [pd.Timestamp(t, unit="ns", tz="UTC") for t in figures.times[:2] if t is not None]
    errors, expected_errors = figures.exchanges.error_codes
    return Overview(
        files=[str(f) for f in files],
        first=min(times) if times else None,
        last=max(times) if times else None,
        span_s=figures.span_s,
        packets=summary.packets,
        connections=summary.connections,
        kafka_connections=summary.kafka_connections,
        tls_connections=summary.tls_connections,
        decrypted_connections=summary.decrypted_connections,
        clients=len(figures.client_ids),
        brokers=int(tables["brokers"]["node_id"].nunique()),
        exchanges=summary.exchanges,
        failed=sum(a.errors for a in summary.apis),
        errors=errors,
        expected_errors=expected_errors,
        without_answer=figures.without_answer,
        records=figures.batches.records,
        anomalies=summary.anomalies,
    )
