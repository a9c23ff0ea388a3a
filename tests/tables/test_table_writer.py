"""The Parquet writer's background thread: what a piece's write raised (a full disk) reaches the caller,
at the next piece or at ``close``, and the pieces are written in order, one at a time."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kdissect.tables import writer
from kdissect.tables.columns import TABLES


def _piece(first: int, n: int) -> dict:
    columns = {name: [None] * n for name, _ in TABLES["exchanges"]}
    columns["correlation_id"] = list(range(first, first + n))
    return columns


def test_pieces_are_written_in_order(tmp_path: Path) -> None:
    out = writer.TableWriter(tmp_path, "parquet")
    for first in (0, 3, 6):
        out.write("exchanges", _piece(first, 3))
    assert out.close() == [(tmp_path / "exchanges.parquet", 9)]
    assert pq.read_table(tmp_path / "exchanges.parquet")["correlation_id"].to_pylist() == list(range(9))


def _full_disk(self: writer.ParquetFile, table: object) -> None:
    raise OSError(28, "No space left on device")


def test_a_failed_write_is_raised_at_close(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer.ParquetFile, "write", _full_disk)
    out = writer.TableWriter(tmp_path, "parquet")
    out.write("exchanges", _piece(0, 2))  # returns: the write runs on the thread
    with pytest.raises(OSError, match="No space left"):
        out.close()


def test_a_failed_write_is_raised_at_the_next_piece(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer.ParquetFile, "write", _full_disk)
    out = writer.TableWriter(tmp_path, "parquet")
    out.write("exchanges", _piece(0, 2))
    with pytest.raises(OSError, match="No space left"):
        out.write("exchanges", _piece(2, 2))
    out.close()  # the failure was reported once
