"""When a row happened, for rows that lack one of their times.

A request whose answer was not captured has no ``response_ts``; an answer whose request was not
captured (the capture began after it was sent) has no ``request_ts``. Figures placed in time use
the request time and fall back on the answer time, so no row drops out of a timeline or a join.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

KEY = ["connection_id", "correlation_id"]


def moment(frame: pd.DataFrame) -> pd.Series:
    """Each row's request time, else its answer time (null only when the row has neither)."""
    if "response_ts" not in frame:
        return frame["request_ts"]
    return frame["request_ts"].fillna(frame["response_ts"])


def with_answer_time(rows: pd.DataFrame, exchanges: pd.DataFrame) -> pd.DataFrame:
    """``rows`` (keyed by connection and correlation id, with a ``request_ts``) whose ``request_ts``
    is filled from their exchange's answer time where the request was not captured."""
    if not rows["request_ts"].isna().any():
        return rows
    answered = exchanges[[*KEY, "response_ts"]].drop_duplicates(KEY)
    out = rows.merge(answered, on=KEY, how="left")
    out["request_ts"] = moment(out)
    return out.drop(columns=["response_ts"]).set_axis(rows.index)
