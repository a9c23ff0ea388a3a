"""Errors, throttling and requests without a usable answer, by where they happened.

A JoinGroup answered MEMBER_ID_REQUIRED is the normal first step of joining a group (KIP-394:
the broker hands out the member id, the client joins again with it): it is counted, but marked
``expected`` and kept out of headline error counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .expected import is_expected
from .latency import broker_labels

if TYPE_CHECKING:
    import pandas as pd

NO_ANSWER = ("unanswered", "undecodable", "orphan_response", "truncated")


def expected_mask(frame: pd.DataFrame) -> pd.Series:
    """Per row of a frame with ``api_name`` and ``error_name``: is it a normal protocol step?"""
    import pandas as pd

    flags = [is_expected(a, e) for a, e in zip(frame["api_name"], frame["error_name"], strict=True)]
    return pd.Series(flags, index=frame.index, dtype=bool)


def _with_exchange_context(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    ex = tables["exchanges"]
    context = ex[["connection_id", "correlation_id", "client_id", "client_ip"]].copy()
    context["broker"] = broker_labels(ex, tables["brokers"])
    errors = tables["errors"].merge(
        context.drop_duplicates(["connection_id", "correlation_id"]), on=["connection_id", "correlation_id"], how="left"
    )
    errors["expected"] = expected_mask(errors)
    return errors


ERROR_DIMENSIONS = {
    "code": ["api_name", "error_code", "error_name", "retriable", "path"],
    "client_id": ["client_id", "error_name"],
    "client_host": ["client_ip", "error_name"],
    "broker": ["broker", "error_name"],
    "topic": ["topic", "partition", "error_name"],
    "group": ["group", "error_name"],
}


def errors_by(tables: Mapping[str, pd.DataFrame], dimension: str = "code") -> pd.DataFrame:
    """Error occurrences (every non-zero error code in a response) counted by a dimension, most first.

    ``expected`` says the group is only normal protocol steps (see :data:`kdissect.analysis.expected.EXPECTED_ERRORS`);
    ``first_message`` is an error message the broker sent with them, if any."""
    import pandas as pd

    by = ERROR_DIMENSIONS[dimension]
    errors = _with_exchange_context(tables)
    if dimension in ("topic", "group"):
        errors = errors[errors[by[0]].notna()]
    if errors.empty:
        return pd.DataFrame(columns=[*by, "count", "expected", "first_message"])
    grouped = errors.groupby(by, observed=True, dropna=False, sort=False)
    out = grouped.agg(
        count=("error_code", "size"), expected=("expected", "all"), first_message=("error_message", "first")
    ).reset_index()
    return out.sort_values(["expected", "count"], ascending=[True, False]).reset_index(drop=True)


def headline_errors(tables: Mapping[str, pd.DataFrame]) -> int:
    """Error occurrences that are not normal protocol steps."""
    errors = _with_exchange_context(tables)
    return int((~errors["expected"]).sum()) if len(errors) else 0


def throttling(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Responses that asked the client to back off (``throttle_time_ms`` > 0), by client and API."""
    ex = tables["exchanges"]
    throttled = ex[ex["throttle_time_ms"].fillna(0) > 0]
    columns = ["client_id", "api_name", "responses", "total_ms", "max_ms"]
    if throttled.empty:
        import pandas as pd

        return pd.DataFrame(columns=columns)
    out = (
        throttled.groupby(["client_id", "api_name"], observed=True)
        .agg(
            responses=("throttle_time_ms", "size"),
            total_ms=("throttle_time_ms", "sum"),
            max_ms=("throttle_time_ms", "max"),
        )
        .reset_index()
    )
    return out.sort_values("total_ms", ascending=False).reset_index(drop=True)[columns]


def without_answer(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Exchanges with no usable answer (unanswered, undecodable, orphan responses, truncated), by API and status."""
    ex = tables["exchanges"]
    lost = ex[ex["status"].isin(NO_ANSWER)]
    columns = ["api_name", "status", "count", "client_ids", "first_warning"]
    if lost.empty:
        import pandas as pd

        return pd.DataFrame(columns=columns)
    out = (
        lost.groupby(["api_name", "status"], observed=True, dropna=False)
        .agg(
            count=("status", "size"),
            client_ids=("client_id", lambda s: ", ".join(sorted({str(v) for v in s.dropna()}))),
            first_warning=("warnings", "first"),
        )
        .reset_index()
    )
    return out.sort_values("count", ascending=False).reset_index(drop=True)[columns]
