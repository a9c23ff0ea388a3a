"""A filter is checked before any row: a comparison whose sides can never match is an error (not a
filter that silently matches everything), and every error says what is allowed, in the user's terms,
and points at the place."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kdissect.analysis.filters import FilterError, compile_filter
from kdissect.tables.columns import TABLES

COLUMNS = {**dict(TABLES["exchanges"]), "topics": "list"}
CAPTURE = Path(__file__).resolve().parents[2] / "captures" / "librdkafka-produce-consume.pcap"


@pytest.mark.parametrize(
    ("expr", "at"),
    [
        ("request_ts >= 5", "5"),
        ('latency_ms > "fast"', '"fast"'),
        ("api_name == 3", "3"),
        ('api_name in ["Produce", 3]', "3]"),
        ("5 in topics", "5 in"),
        ("inferred == 1", "1"),
        ("status == 'ok' and request_bytes < '10'", "'10'"),
    ],
)
def test_a_comparison_that_can_never_match_is_refused_where_it_is(expr: str, at: str) -> None:
    with pytest.raises(FilterError) as refused:
        compile_filter(expr, COLUMNS)
    assert refused.value.offset == expr.index(at), refused.value.pointer()
    assert refused.value.pointer() == [expr, " " * expr.index(at) + "^"]


@pytest.mark.parametrize(
    "expr",
    [
        'request_ts >= "2026-08-22T10:15:00Z" and response_ts < "2100-01-01"',
        'api_name in ["Produce", "Fetch"] and latency_ms > 1.5',
        '"orders" in topics and "rdkafka" in client_id',
        "error_code is None or error_code != 0",
        "inferred == True and not out_of_order",
        "request_bytes + response_bytes > 100 * 2",
    ],
)
def test_well_typed_filters_compile(expr: str) -> None:
    compile_filter(expr, COLUMNS)


@pytest.mark.parametrize(
    ("expr", "words"),
    [
        ("len(api_name) > 3", "calling a function"),
        ("api_name.upper() == 'PRODUCE'", "calling a function"),
        ("client_id[0] == 'r'", "indexing"),
        ("latency_ms ** 2 > 1", "**"),
        ("api_name ==", "invalid syntax"),
    ],
)
def test_refusals_are_in_the_user_s_terms(expr: str, words: str) -> None:
    with pytest.raises(FilterError) as refused:
        compile_filter(expr, COLUMNS)
    message = str(refused.value)
    assert words in message and "a filter uses" in message and "== != <" in message
    for node in ("Call", "Attribute", "Subscript", "BinOp", "Pow", "Compare", "Name"):
        assert node not in message
    assert refused.value.pointer()[0] == expr


def test_the_cli_prints_the_filter_and_a_caret() -> None:
    out = subprocess.run([sys.executable, "-m", "kdissect.cli", "show", str(CAPTURE), "--filter", "request_ts >= 5"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.splitlines() == [
        'kdissect: --filter: request_ts is a time and 5 is a number: they never compare (a time is an ISO 8601 '
        'string, e.g. "2026-08-22T10:15:00Z")',
        "  request_ts >= 5",
        "                ^",
    ]
