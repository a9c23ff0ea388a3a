"""The filter language bounds what it may build: a filter is user input, like a capture."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kdissect.analysis.filters import MAX_BUILT, FilterError, compile_filter
from kdissect.testing.synthetic import conversation, write

COLUMNS = {"api_name": "category", "client_id": "category", "latency_ms": "float64"}
ROW = {"api_name": "Produce", "client_id": "c1", "latency_ms": 3.0}


@pytest.mark.parametrize(
    "expr",
    [
        "'x' * 100000000000000000000 == api_name",  # would raise OverflowError
        "[1] * 1000000000000 == [1]",  # would allocate terabytes
        "client_id * 40000 == api_name",  # built from a column's value
        "('ab' * 40000) + ('ab' * 40000) == api_name",
    ],
)
def test_a_filter_building_too_large_a_value_is_refused_before_it_is_built(expr: str) -> None:
    predicate = compile_filter(expr, COLUMNS)
    with pytest.raises(FilterError, match=f"at most {MAX_BUILT}"):
        predicate(ROW)


def test_values_within_the_bound_still_work() -> None:
    assert compile_filter("'Pro' + 'duce' == api_name and [1] * 3 == [1, 1, 1]", COLUMNS)(ROW)
    assert compile_filter("latency_ms * 1000000 > 1", COLUMNS)(ROW)  # numbers are not sequences


def test_the_cli_says_so_in_one_line(tmp_path: Path) -> None:
    path = write(tmp_path / "c.pcap", conversation(1))
    run = subprocess.run(
        [sys.executable, "-m", "kdissect.cli", "show", str(path), "--filter", "'x' * 10000000000000 == api_name"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2
    assert "Traceback" not in run.stderr and f"at most {MAX_BUILT}" in run.stderr
