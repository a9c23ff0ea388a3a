"""Exchanges given as rows (events.ExchangeRows, what the native pairing makes) in a table sink."""

from __future__ import annotations

from array import array

from kdissect.events import EXCHANGE_ROW, EXCHANGE_TYPED, Exchange, ExchangeRows, KafkaMessage, new_rows
from kdissect.options import Options
from kdissect.tables.columns import TABLES, cells
from kdissect.tables.sink import ROW_TABLES, TableSink, exchange_row


def test_the_pairing_fills_the_exchange_rows_columns_in_their_order() -> None:
    """Every column exchange_row makes, in the table's order (``source_file`` the sink names itself)."""
    request = KafkaMessage(1, True, 0, 10, 5, 6, api_key=3, api_version=9, correlation_id=2, header={}, body={})
    assert tuple(exchange_row(Exchange(1, request, None, "unanswered"))) == EXCHANGE_ROW
    assert tuple(name for name, _ in TABLES["exchanges"] if name != "source_file") == EXCHANGE_ROW


def test_a_piece_of_rows_joins_the_table_in_its_place() -> None:
    sink = TableSink(["exchanges"], Options())
    assert sink.takes_rows
    piece, lists, _ = new_rows()
    for value in (7, 8):
        for name, column in zip(EXCHANGE_ROW, lists, strict=True):
            if name in EXCHANGE_TYPED:  # (machine values, as _pairing.c writes them)
                column.extend(
                    array(EXCHANGE_TYPED[name].replace("?", "b"), [value if name == "connection_id" else 0]).tobytes()
                )
            else:
                column.append(None)
    sink.consume(piece)
    sink.consume(ExchangeRows())
    table = sink.columns("exchanges")
    assert cells(table["connection_id"]) == [7, 8]
    assert cells(table["out_of_order"]) == [False, False]
    assert cells(table["_topic_id"]) == [None, None]
    assert len(sink.rows["exchanges"]) == 2


def test_only_a_sink_that_needs_no_more_than_rows_takes_them() -> None:
    assert TableSink(ROW_TABLES, Options(), record_anomalies=False).takes_rows
    assert not TableSink(ROW_TABLES, Options()).takes_rows  # record batches decoded for their anomalies
    assert not TableSink(["exchanges", "errors"], Options()).takes_rows
    assert not TableSink(None, Options()).takes_rows
