"""The report's first section: what the capture holds and how completely it decoded."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kdissect.analysis.errors import NO_ANSWER, headline_errors
from kdissect.analysis.summary import AnomalyFigures, Summary
from kdissect.analysis.throughput import capture_span_s

if TYPE_CHECKING:
    import pandas as pd


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


def overview(tables: Mapping[str, pd.DataFrame], summary: Summary, files: Sequence[str]) -> Overview:
    ex, batches = tables["exchanges"], tables["batches"]
    times = [t for t in (ex["request_ts"].min(), ex["response_ts"].max()) if t == t and t is not None]
    errors = headline_errors(tables)
    data = ~batches["is_control"].fillna(False).astype(bool)
    return Overview(
        files=[str(f) for f in files],
        first=min(times) if times else None,
        last=max(times) if times else None,
        span_s=capture_span_s(tables),
        packets=summary.packets,
        connections=summary.connections,
        kafka_connections=summary.kafka_connections,
        tls_connections=summary.tls_connections,
        decrypted_connections=summary.decrypted_connections,
        clients=int(ex["client_id"].nunique()),
        brokers=int(tables["brokers"]["node_id"].nunique()),
        exchanges=summary.exchanges,
        failed=sum(a.errors for a in summary.apis),
        errors=errors,
        expected_errors=len(tables["errors"]) - errors,
        without_answer=int(ex["status"].isin(NO_ANSWER).sum()),
        records=int(batches.loc[data, "records_decoded"].sum()),
        anomalies=summary.anomalies,
    )
