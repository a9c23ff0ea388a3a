"""``source_file``: every row names the capture file its connection opened in, and a sink that
forgets ended connections' files (a live run that never ends) keeps the names of rows it holds."""

from __future__ import annotations

from pathlib import Path

from kdissect.engines import local
from kdissect.tables.columns import TABLES, cells
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
