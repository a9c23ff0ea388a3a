"""The bounds tests' CPU ratios: measured again when load inflates one run, never loosened."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests import bounds_helpers
from tests.bounds_helpers import Run, assert_costs_like, assert_linear, two_sizes


def fake_cli(monkeypatch: pytest.MonkeyPatch, cpu: Callable[[Path, int], float]) -> None:
    """``run_cli`` replaced by a program whose CPU is ``cpu(capture, how many times that capture
    has run)``."""
    seen: dict[Path, int] = {}

    def run_cli(capture: Path, *args: str) -> Run:
        seen[capture] = seen.get(capture, 0) + 1
        return Run(cpu(capture, seen[capture]), 0, "", 0)

    monkeypatch.setattr(bounds_helpers, "run_cli", run_cli)


def megabytes(capture: Path) -> float:
    return capture.stat().st_size / 1e6


def test_a_run_inflated_by_load_once_is_measured_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Linear work of 1 s per MB over a 0.5 s start-up, but the larger capture's first run was
    # slowed by another process: 10x the work at first sight.
    def cpu(capture: Path, nth: int) -> float:
        slowed = 5.0 if nth == 1 and capture.name.endswith("-512.pcap") else 0.0
        return 0.5 + megabytes(capture) + slowed

    fake_cli(monkeypatch, cpu)
    assert_linear(two_sizes(tmp_path, "midstream_traffic", 256))


def test_work_that_grows_faster_than_the_input_fails_however_often_it_is_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_cli(monkeypatch, lambda capture, nth: 0.5 + megabytes(capture) ** 2 * 4)
    with pytest.raises(AssertionError, match="2x input"):
        assert_linear(two_sizes(tmp_path, "midstream_traffic", 256))


def test_costly_input_fails_against_ordinary_input_of_its_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cli(monkeypatch, lambda capture, nth: 0.5 + megabytes(capture) * (1 if "ordinary" in capture.name else 20))
    runs = two_sizes(tmp_path, "midstream_traffic", 256)
    ordinary = tmp_path / "ordinary.pcap"
    ordinary.write_bytes(runs.measured[2].capture.read_bytes())
    with pytest.raises(AssertionError, match="ordinary input"):
        assert_costs_like(runs, ordinary, 8)
