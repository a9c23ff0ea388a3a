"""The records table built from column buffers (``_native.v2_columns``) against the one built
from Record tuples (the Python record loop).

The same captures are turned into tables twice: every table, as Arrow (what Parquet gets) and as
pandas (the library's tables), must come out identical, cell types included, whether a table is
whole or spilled in pieces, and whether the column blocks sit alone or between batches that take
the Record path (legacy messages, control batches, a header key that is not UTF-8).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from kdissect.decoders import records
from kdissect.engines import local
from kdissect.options import Options
from kdissect.tables.arrow import to_arrow
from kdissect.tables.blocks import RecordBlock
from kdissect.tables.columns import TABLES, Parts
from kdissect.tables.frames import to_dataframe
from kdissect.tables.sink import Columns, TableSink
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.records_encode import control_record, encode_batch, encode_message, new_record
from kdissect.testing.synthetic import MS, T0, write
from tests.conftest import PURE_PYTHON_FORCED
from tests.tables.test_tables_records import _fetch, _fetch_response, _produce, _produce_response

pytestmark = pytest.mark.skipif(PURE_PYTHON_FORCED, reason="KDISSECT_PURE_PYTHON: no column loop to compare")
CAPTURES = Path(__file__).resolve().parents[2] / "captures"
FILES = sorted(p.name for p in CAPTURES.iterdir() if p.suffix in (".pcap", ".pcapng"))
Pieces = dict[str, list[tuple[pa.Table, pd.DataFrame]]]


def tables(paths: list[Path], columns: bool, spill_rows: int = 50_000) -> tuple[Pieces, list[RecordBlock]]:
    """Every table's pieces as Arrow and pandas, with the column loop or the Record loop, and the
    record blocks the records table held."""
    pieces: Pieces = {}
    blocks: list[RecordBlock] = []

    def spill(name: str, cols: Columns) -> None:
        offsets = cols["offset"] if name == "records" else None
        if isinstance(offsets, Parts):
            blocks.extend(part[0] for part in offsets.parts if not isinstance(part, list))
        pieces.setdefault(name, []).append((to_arrow(name, cols), to_dataframe(name, cols)))

    records.use_native(columns)
    try:
        sink = TableSink(options=Options(spill_rows=spill_rows), spill=spill)
        sink.consume_all(local.events(paths))
        for name in TABLES:
            spill(name, sink.columns(name))
    finally:
        records.use_native(True)
    return pieces, blocks


def cells(frame: pd.DataFrame, name: str) -> Iterator[Any]:
    """The object cells of a column, nested: what ``assert_frame_equal`` compares by value only."""
    for cell in frame[name]:
        yield type(cell)
        if isinstance(cell, list):
            for pair in cell:
                yield type(pair), *map(type, pair), *pair
        else:
            yield cell


def assert_same_tables(columnar: Pieces, python: Pieces) -> None:
    assert columnar.keys() == python.keys()
    for name in columnar:
        assert len(columnar[name]) == len(python[name]), name
        for (arrow_c, frame_c), (arrow_p, frame_p) in zip(columnar[name], python[name], strict=True):
            assert arrow_c.equals(arrow_p, check_metadata=True), name
            pd.testing.assert_frame_equal(frame_c, frame_p, check_exact=True)
            for column, kind in TABLES[name]:
                if kind in ("bytes", "headers"):
                    assert list(cells(frame_c, column)) == list(cells(frame_p, column)), (name, column)


@pytest.mark.parametrize("name", FILES)
def test_capture_tables_are_the_same_from_columns_and_from_records(name: str) -> None:
    columnar, blocks = tables([CAPTURES / name], columns=True)
    python, none = tables([CAPTURES / name], columns=False)
    assert not none
    assert_same_tables(columnar, python)
    rows = sum(len(frame) for _, frame in columnar["records"])
    assert sum(len(b) for b in blocks) <= rows


def test_the_corpus_records_are_built_from_columns() -> None:
    """(So the comparison above compares the two paths, not one path with itself.)"""
    _, blocks = tables([CAPTURES / name for name in FILES], columns=True)
    assert sum(len(b) for b in blocks) > 100


def mixed_capture(tmp_path: Path) -> Path:
    """Column batches between Record ones in one field; produce offsets assigned, unknown, and past
    int64; timestamps out of the ns range; log-append time; payload-less and header-less records."""
    recs = [new_record(b"k%d" % i, b"v" * i if i % 3 else None, [("h", b"x%d" % i), ("n", None)] * (i % 3),
                       offset=i, timestamp=1_700_000_000_000 + i) for i in range(7)]  # fmt: skip
    recs.append(new_record(None, b"late", offset=7, timestamp=2**62))  # past what ns can hold
    recs.append(new_record(b"early", b"", offset=8, timestamp=-5 - 1_700_000_000_000))
    # a header key that is not UTF-8 (the batch's CRC no longer matches: noted the same both ways)
    declined = encode_batch([new_record(b"k", b"v", [("\x01@", b"")])], base_offset=60).replace(b"\x01@", b"\xff@")
    field = (encode_batch(recs, base_offset=10) + encode_batch(recs[:3], base_offset=20, timestamp_type=1,
             max_timestamp=1_800_000_000_000, codec=1) + declined + encode_batch([control_record(1)], control=True)
             + encode_message(recs[1], magic=1) + encode_batch(recs[3:], base_offset=30, codec=4))  # fmt: skip
    msgs = [(0, _produce(1, encode_batch(recs, codec=4))), (1, _produce_response(1, 500)),
            (0, _produce(2, encode_batch(recs))),  # no response: offsets unknown
            (0, _produce(3, encode_batch(recs[:4]))), (1, _produce_response(3, 2**63 - 2)),  # past int64
            (0, _fetch(4)), (1, _fetch_response(4, field))]  # fmt: skip
    timed = [(d, m, T0 + i * MS) for i, (d, m) in enumerate(msgs)]
    return write(tmp_path / "mixed.pcap", tcp_conversation(timed))


@pytest.mark.parametrize("spill_rows", [50_000, 5])
def test_mixed_blocks_and_records_give_the_same_tables(tmp_path: Path, spill_rows: int) -> None:
    path = mixed_capture(tmp_path)
    columnar, blocks = tables([path], columns=True, spill_rows=spill_rows)
    python, _ = tables([path], columns=False, spill_rows=spill_rows)
    assert_same_tables(columnar, python)
    records_table = pd.concat([frame for _, frame in columnar["records"]], ignore_index=True)
    assert set(records_table["magic"]) == {1, 2} and records_table["control_type"].notna().any()
    assert records_table["offset"].isna().any() and (records_table["offset"] == 2**63 - 1).any()
    assert records_table["timestamp"].isna().sum() >= 2
    batches = pd.concat([frame for _, frame in columnar["batches"]], ignore_index=True)
    assert (batches["warnings"].fillna("").str.contains("not UTF-8")).any()
    assert sum(len(b) for b in blocks) < len(records_table)  # some rows took the Record path
    assert len(blocks) > 1


def test_rows_mix_blocks_dict_rows_and_expanded_columns() -> None:
    """TableRows keeps row order whatever comes between record columns: a column read as a list
    (which closes the block while the other columns keep it), a dict row, then more columns."""
    from kdissect.decoders.records import decode_records
    from kdissect.tables.rows import TableRows

    field = encode_batch([new_record(b"k%d" % i, b"v", [("h", b"x")], offset=i) for i in range(3)], base_offset=7)
    columnar, python = decode_records(field, columns=True).batches[0], decode_records(field).batches[0]
    assert columnar.columns is not None and python.columns is None
    recs = python.records
    each = {"offset": [r.offset for r in recs], "timestamp": [r.timestamp * 1_000_000 for r in recs],
            "key": [r.key for r in recs], "value": [r.value for r in recs], "key_size": [r.key_size for r in recs],
            "value_size": [r.value_size for r in recs], "headers": [list(r.headers) for r in recs],
            "control_type": [None] * 3}  # fmt: skip
    with_columns, with_records = TableRows("records"), TableRows("records")

    def add(step: int) -> None:
        with_columns.add_record_columns({"connection_id": step}, columnar.columns, -1)
        with_records.add_block(3, {"connection_id": step}, each)

    add(0)
    assert with_columns.listed("offset") == with_records.listed("offset") == [7, 8, 9]
    assert isinstance(with_columns.columns["key"], Parts)
    add(1)
    for rows in (with_columns, with_records):
        rows.append({"connection_id": 9, "offset": 99, "key": b"row", "headers": []})
    add(2)
    assert len(with_columns) == len(with_records) == 10
    assert with_columns.listed("offset") == [7, 8, 9, 7, 8, 9, 99, 7, 8, 9]
    assert to_arrow("records", with_columns.columns).equals(to_arrow("records", with_records.columns))
    pd.testing.assert_frame_equal(to_dataframe("records", with_columns.columns),
                                  to_dataframe("records", with_records.columns))  # fmt: skip
