"""``source_file``: every row names the capture file its connection opened in, and a sink that
forgets ended connections' files (a live run that never ends) keeps the names of rows it holds."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kdissect.engines import local
from kdissect.tables.columns import NULLABLE, TABLES, Typed, cells
from kdissect.tables.sink import TableSink

CAPTURE = Path(__file__).resolve().parents[2] / "captures" / "kafka-python-admin.pcap"


def test_forgotten_connections_keep_the_file_of_their_pending_rows() -> None:
    sink = TableSink()
    sink.consume_all(local.events([CAPTURE], opened=sink.connection_sources))
    ended = list(sink.connection_sources)
    assert ended
    sink.forget_connections(ended)
    assert sink.connection_sources == {}
    for name in TABLES:
        files = cells(sink.columns(name)["source_file"])
        assert set(files) <= {str(CAPTURE)}, name
        assert files.count(None) == 0 or name == "anomalies", name
    assert cells(sink.columns("exchanges")["source_file"])


def _named_as_row_by_row(ids: list, files: list, sources: dict) -> list:
    return [sources.get(i) if f is None and i is not None else f for i, f in zip(ids, files, strict=True)]


@pytest.mark.parametrize("n", [7, 1000])  # a Python loop below _NAMED_ONE_BY_ONE rows, numpy above
@pytest.mark.parametrize("typed", [False, True])
def test_rows_are_named_by_their_connections_file(n: int, typed: bool) -> None:
    """Typed ids (the native pairing's) and listed ones, ids without a file, rows without a connection
    and rows named before: each row as the rule says, row by row."""
    sink = TableSink()
    sink.connection_sources.update({i: f"file-{i % 3}" for i in range(0, 60, 2)})
    rows = sink.rows["batches"]
    ids = [(i * 7) % 61 for i in range(n)]
    if typed:
        buffer = b"".join(struct.pack("=qB", i, 1) for i in ids)
        rows.add_columns({"connection_id": Typed(bytearray(buffer), NULLABLE)}, n)
    else:
        rows.append_values(("connection_id",), (), [(i,) for i in ids])
    extra = [(None, None), (4, "named-before"), (5, None), (2**62, None)]
    rows.append_values(("connection_id", "source_file"), (), extra)
    before_ids = ids + [i for i, _ in extra]
    before_files = [None] * n + [f for _, f in extra]
    named = cells(sink.columns("batches")["source_file"])
    assert named == _named_as_row_by_row(before_ids, before_files, sink.connection_sources)
    assert named[: n].count(None) == sum(i not in sink.connection_sources for i in ids)
