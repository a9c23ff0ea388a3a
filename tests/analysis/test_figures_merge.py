"""The summary's figures merged from parts (what a Spark task counts) equal the figures of the whole."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from kdissect.analysis.summary import Figures, summarize
from kdissect.engines import local
from kdissect.sources.shapes import SourceStats
from kdissect.tables.columns import cells
from kdissect.tables.sink import Columns

CAPTURES = Path(__file__).resolve().parents[2] / "captures"


def _rows(columns: Columns, keep: range) -> Columns:
    return {name: [v for i, v in enumerate(cells(column)) if i in keep] for name, column in columns.items()}


@pytest.mark.parametrize("capture", ["librdkafka-transactions.pcap", "kafka-python-produce-consume.pcapng",
                                     "librdkafka-midstream-produce.pcap"])  # fmt: skip
@pytest.mark.parametrize("parts", [2, 5])
def test_figures_merged_from_parts_are_the_figures_of_the_whole(capture: str, parts: int) -> None:
    tables = local.analyze([CAPTURES / capture], tables=local.SUMMARY_TABLES).tables
    whole = summarize(tables, SourceStats())
    merged = Figures()
    for part in range(parts):
        figures = Figures()
        for name, columns in tables.items():
            n = len(cells(columns["connection_id"]))
            figures.add(name, _rows(columns, range(part * n // parts, (part + 1) * n // parts)))
        merged.merge(pickle.loads(pickle.dumps(figures)))  # as a task's figures reach the driver
    assert whole.exchanges > 0 and whole.apis
    assert merged.summary(SourceStats()) == whole


def test_merging_nothing_changes_nothing() -> None:
    tables = local.analyze([CAPTURES / "librdkafka-transactions.pcap"], tables=local.SUMMARY_TABLES).tables
    figures = Figures()
    for name, columns in tables.items():
        figures.add(name, columns)
    before = figures.summary(SourceStats())
    figures.merge(Figures())
    assert figures.summary(SourceStats()) == before
