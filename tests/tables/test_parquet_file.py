"""The Parquet writer (``tables/writer.py`` ``ParquetFile``) writes through ``pyarrow._parquet`` with the
options ``pyarrow.parquet.ParquetWriter`` passes: the files must be the very bytes that front writes, for
every table of a real run (every column type the tables use), to a path and to a stream; and writing
must not load the front's file systems (the reason for going around it)."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kdissect.cli import main
from kdissect.tables import writer

CAPTURE = Path(__file__).resolve().parents[2] / "captures" / "librdkafka-produce-consume.pcap"


def _tables_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[pa.Table]]:
    """The pieces an every-table run hands its Parquet files, by file name."""
    pieces: dict[str, list[pa.Table]] = {}
    write = writer.ParquetFile.write

    def kept(self: writer.ParquetFile, table: pa.Table) -> None:
        if isinstance(self._where, Path):
            pieces.setdefault(self._where.name, []).append(table)
        write(self, table)

    monkeypatch.setattr(writer.ParquetFile, "write", kept)
    assert main(["analyze", str(CAPTURE), "--out", str(tmp_path / "out")]) == 0
    return pieces


def _front(where: object, pieces: list[pa.Table]) -> None:
    with pq.ParquetWriter(where, pieces[0].schema, **writer.parquet_options(pieces[0].schema)) as front:
        for piece in pieces:
            front.write_table(piece)


def test_the_files_are_the_bytes_pyarrow_parquet_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pieces = _tables_written(tmp_path, monkeypatch)
    assert len(pieces) >= 10 and pieces["records.parquet"][0].num_rows > 0
    for name, tables in pieces.items():
        _front(tmp_path / name, tables)
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / name).read_bytes(), name


def test_a_stream_gets_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tables = _tables_written(tmp_path, monkeypatch)["records.parquet"]
    stream = pa.BufferOutputStream()
    ours = writer.ParquetFile(stream)
    for table in tables:
        ours.write(table)
    ours.close()
    front = pa.BufferOutputStream()
    _front(front, tables)
    assert stream.getvalue().to_pybytes() == front.getvalue().to_pybytes()


LOADED = """
import sys
from kdissect.lazy import import_without
import_without("pyarrow", "numpy")
from kdissect.tables.writer import ParquetFile
import pyarrow as pa
out = ParquetFile(sys.argv[1])
out.write(pa.table({"a": [1, 2]}))
out.close()
print(sorted(m for m in ("pyarrow.parquet", "pyarrow.fs", "pyarrow._fs", "ssl") if m in sys.modules))
"""


def test_writing_loads_no_file_system(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", LOADED, str(tmp_path / "a.parquet")], capture_output=True,
                          text=True, check=True)  # fmt: skip
    assert done.stdout.strip() == "[]"
    assert pq.read_table(tmp_path / "a.parquet")["a"].to_pylist() == [1, 2]


@pytest.mark.parametrize("changed", [False, True])
def test_a_pyarrow_whose_writer_moved_still_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   changed: bool) -> None:  # fmt: skip
    """(``pyarrow._parquet`` is private: a release that moves its writer, or changes what it takes, falls
    back to the front, which holds the real module)"""
    tables = _tables_written(tmp_path, monkeypatch)["exchanges.parquet"]
    moved = types.ModuleType("pyarrow._parquet")
    if changed:
        def writer_changed(*args: object, **kwargs: object) -> None:
            raise TypeError("an unexpected keyword argument")

        moved.ParquetWriter = writer_changed  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyarrow._parquet", moved)
    ours = writer.ParquetFile(tmp_path / "ours.parquet")
    for table in tables:
        ours.write(table)
    ours.close()
    _front(tmp_path / "front.parquet", tables)
    assert (tmp_path / "ours.parquet").read_bytes() == (tmp_path / "front.parquet").read_bytes()


def test_a_column_of_distinct_values_drops_its_dictionary_early(tmp_path: Path) -> None:
    """(a column of distinct values, correlation ids, times, offsets, stops building a dictionary once it
    passes DICTIONARY_PAGE_LIMIT, and is written plain; one of few values keeps its dictionary)"""
    n = 100_000
    table = pa.table({"distinct": pa.array(range(0, 7 * n, 7), pa.int64()), "few": pa.array([k % 5 for k in range(n)],
                                                                                          pa.int32())})  # fmt: skip
    ours = writer.ParquetFile(tmp_path / "t.parquet")
    ours.write(table)
    ours.close()
    chunk = pq.ParquetFile(tmp_path / "t.parquet").metadata.row_group(0)
    distinct, few = chunk.column(0), chunk.column(1)
    dictionary_page = distinct.data_page_offset - distinct.dictionary_page_offset
    assert 0 < dictionary_page <= writer.DICTIONARY_PAGE_LIMIT  # (Arrow's default: all 100k, 800 kB)
    assert few.has_dictionary_page and "RLE_DICTIONARY" in few.encodings
    assert few.data_page_offset - few.dictionary_page_offset < 100
    assert pq.read_table(tmp_path / "t.parquet").equals(table)
