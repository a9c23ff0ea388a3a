"""Table rows with nulls wherever the columns allow them, fed straight to the analysis and the report.

Every column but a row's connection id may be null in some real row shape (orphan answers, unanswered
and cut requests, inferred rows, connections begun before the capture), so the strategy nulls any of
them; keys are drawn from small sets so rows of different tables meet in the joins.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdissect.analysis.summary import summarize
from kdissect.report.build import build_document, render
from kdissect.report.document import Table
from kdissect.sources.shapes import SourceStats
from kdissect.tables.columns import TABLES
from kdissect.tables.frames import to_dataframe
from tests.shapes.invariants import ordered_percentiles, report_figures

T0 = 1_700_000_000 * 10**9
APIS = ["Fetch", "Produce", "JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit", "EndTxn", "InitProducerId",
        "AddPartitionsToTxn", "Metadata", "ConsumerGroupHeartbeat"]  # fmt: skip
WORDS = {
    "api_name": APIS,
    "error_name": ["NONE", "MEMBER_ID_REQUIRED", "NOT_LEADER_OR_FOLLOWER", "REBALANCE_IN_PROGRESS"],
    "status": ["ok", "error", "unanswered", "orphan_response", "truncated", "undecodable"],
    "kind": ["gap", "midstream", "resync"],
}
NOT_NULL = {"connection_id"}


def _value(name: str, kind: str) -> st.SearchStrategy:
    if name in WORDS:
        return st.sampled_from(WORDS[name])
    if name in ("connection_id", "correlation_id", "partition", "generation", "node_id", "api_key"):
        return st.integers(0, 3)
    if kind == "timestamp":
        return st.integers(T0, T0 + 5 * 10**9)
    if kind.startswith("int"):
        return st.integers(-1, 2000)
    if kind == "float64":
        return st.floats(0, 5000, allow_nan=False)
    if kind == "bool":
        return st.booleans()
    if kind in ("string", "category"):
        return st.sampled_from(["a", "b", "10.0.0.1", "t1"])
    if kind == "bytes":
        return st.binary(max_size=4)
    return st.just([])  # headers


def _table(name: str) -> st.SearchStrategy:
    columns = TABLES[name]
    row = st.tuples(*(_value(c, k) if c in NOT_NULL else st.none() | _value(c, k) for c, k in columns))
    return st.lists(row, max_size=8).map(
        lambda rows: to_dataframe(name, {c: [r[i] for r in rows] for i, (c, _) in enumerate(columns)})
    )


TABLE_ROWS = st.fixed_dictionaries({name: _table(name) for name in TABLES})
SLOW_OK = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


@settings(max_examples=25, **SLOW_OK)
@given(TABLE_ROWS)
def test_rows_with_nulls_anywhere_go_through_every_report_section(tables) -> None:
    document = build_document(tables, summarize({}, SourceStats()), ["generated"])
    assert render(document, "json")
    for section in document.sections:
        for block in section.blocks:
            if isinstance(block, Table) and {"p50", "max"} <= set(block.frame.columns):
                assert ordered_percentiles(block.frame) == []
    assert report_figures(tables) == []


@settings(max_examples=4, **SLOW_OK)
@given(TABLE_ROWS)
def test_rows_with_nulls_anywhere_are_drawn(tables) -> None:
    assert render(build_document(tables, summarize({}, SourceStats()), ["generated"]), "html")
