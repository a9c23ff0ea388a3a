"""A small table converted by pyarrow from Python values (``tables.arrow._listed``, used while numpy is
not loaded) is the table the numpy path makes, cell for cell and type for type, or it is declined
(None) and the numpy path runs: hostile values (out-of-range integers, a bool given as 0/1, text that
is not ``str``) must never be converted differently. In a child process, an exchanges run's Parquet
files are those of a run whose pyarrow has its numpy bridge, for every table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.cli import main
from kdissect.tables import arrow
from kdissect.tables.columns import TABLES, Parts, Typed

from .test_tables_arrow import _columns

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
LISTED_TABLES = sorted(t for t in TABLES if all(kind != "headers" for _, kind in TABLES[t]))


def _numpy_path(table: str, columns: dict) -> list[pa.Array]:
    return arrow.to_arrow(table, columns).columns  # (numpy is loaded in this process: the numpy path)


def _same(table: str, listed: list[pa.Array], columns: dict) -> None:
    for (name, _), got, want in zip(TABLES[table], listed, _numpy_path(table, columns), strict=True):
        want = want.combine_chunks() if isinstance(want, pa.ChunkedArray) else want
        assert got.type == want.type, name
        assert got.to_pylist() == want.to_pylist(), name
        if pa.types.is_dictionary(got.type):  # the same categories, in the same order
            assert got.dictionary.equals(want.dictionary), name


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(LISTED_TABLES).flatmap(lambda t: st.tuples(st.just(t), _columns(t))))
def test_a_listed_table_is_the_numpy_path_s_table(case: tuple[str, dict]) -> None:
    table, columns = case
    listed = arrow._listed(table, columns)
    if listed is not None:
        _same(table, listed, columns)


def test_typed_parts_and_lists_convert_alike() -> None:
    columns = {name: [None] * 3 for name, _ in TABLES["exchanges"]}
    columns["connection_id"] = Parts([[7], Typed(bytearray(pa.array([8, 9], pa.int64()).buffers()[1]), "q")])
    columns["api_name"] = ["Produce", None, "Produce"]
    columns["out_of_order"] = Parts([Typed(bytearray(b"\x01\x00"), "?"), [None]])
    listed = arrow._listed("exchanges", columns)
    assert listed is not None
    _same("exchanges", listed, columns)


def test_cells_pyarrow_would_read_otherwise_are_declined() -> None:
    """The numpy path is the rule: these go to it, not to a conversion that differs or raises."""
    for name, values in (("correlation_id", [2**40]), ("out_of_order", [1]), ("warnings", [3]),
                         ("client_id", ["\udc80"]), ("response_bytes", [True]), ("client_id", [b"id"]),
                         ("warnings", [b"text"])):  # fmt: skip
        columns = {n: [None] for n, _ in TABLES["exchanges"]}
        columns[name] = values
        assert arrow._listed("exchanges", columns) is None, name


def test_large_tables_and_record_blocks_take_the_numpy_path() -> None:
    rows = arrow.PYTHON_ROWS + 1
    assert arrow._listed("exchanges", {n: [None] * rows for n, _ in TABLES["exchanges"]}) is None
    assert arrow._listed("records", {n: [None] for n, _ in TABLES["records"]}) is None  # headers


RUN = """
import sys
from kdissect.cli import main
main([sys.argv[1], sys.argv[2], "--out", sys.argv[3]])
print("numpy" in sys.modules, file=sys.stderr)
"""


def test_a_run_without_numpy_writes_the_files_of_a_run_with_it(tmp_path: Path) -> None:
    capture = CAPTURES / "librdkafka-transactions.pcap"
    done = subprocess.run([sys.executable, "-c", RUN, "analyze", str(capture), str(tmp_path / "lean")],
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert done.stderr.split()[-1] == "True"  # the records table loaded numpy; pyarrow never bound it
    main(["analyze", str(capture), "--out", str(tmp_path / "full")])  # numpy loaded here: bridge and all
    names = sorted(p.name for p in (tmp_path / "full").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "lean").iterdir()) and "exchanges.parquet" in names
    for name in names:
        lean, full = pq.read_table(tmp_path / "lean" / name), pq.read_table(tmp_path / "full" / name)
        assert lean.schema.equals(full.schema, check_metadata=True), name
        assert lean.equals(full), name
