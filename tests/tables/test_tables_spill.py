"""Tables written in pieces (the sink spilling as it goes) equal the tables built in memory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from kdissect.engines import local
from kdissect.options import Options
from kdissect.tables.columns import TABLES
from kdissect.tables.frames import to_dataframe
from kdissect.tables.sink import SPILLABLE, Columns, TableSink
from kdissect.tables.writer import TableWriter
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.records_encode import encode_batch, new_record
from kdissect.testing.synthetic import MS, T0, write
from tests.tables.test_tables_records import _produce, _produce_response


def _capture(tmp_path: Path) -> Path:
    msgs = []
    for cid in range(1, 6):
        recs = [new_record(b"k%d" % i, b"v" * i, [("h", bytes([i, 255]))], offset=i) for i in range(cid)]
        msgs += [(0, _produce(cid, encode_batch(recs, codec=cid % 2))), (1, _produce_response(cid, 100 * cid))]
    return write(tmp_path / "s.pcap", tcp_conversation([(d, m, T0 + i * MS) for i, (d, m) in enumerate(msgs)]))


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_spilled_tables_equal_the_in_memory_ones(tmp_path: Path, fmt: str) -> None:
    path = _capture(tmp_path)
    whole = TableSink()
    whole.consume_all(local.events([path], Options()))
    writer = TableWriter(tmp_path / "out", fmt)
    spills: list[str] = []

    def spill(name: str, columns: Columns) -> None:
        spills.append(name)
        writer.write(name, columns)

    sink = TableSink(options=Options(spill_rows=2), spill=spill)
    sink.consume_all(local.events([path], Options()))
    for name in SPILLABLE:
        writer.write(name, sink.columns(name))
    written = dict(writer.close())
    assert spills.count("records") >= 3 and spills.count("partitions") >= 2
    for name in SPILLABLE:
        file = tmp_path / "out" / f"{name}.{fmt}"
        got = pd.read_parquet(file) if fmt == "parquet" else pd.read_csv(file)
        expected = to_dataframe(name, whole.columns(name))
        assert written[file] == len(expected) == len(got)
        if fmt == "parquet":
            if name == "records":
                assert [[(h["key"], h["value"]) for h in hs] for hs in got.pop("headers")] == list(
                    expected.pop("headers"))
            pd.testing.assert_frame_equal(got, expected, check_categorical=False)
        else:
            assert list(got.columns) == list(expected.columns)


REAL = Path(__file__).resolve().parents[2] / "captures" / "librdkafka-produce-consume.pcap"


def test_parquet_written_without_pandas_reads_back_as_the_library_tables(tmp_path: Path) -> None:
    """The CLI builds Parquet straight from columns (no pandas); pandas must still read back every
    table with the dtypes the library API gives, categories and nullable integers included."""
    import kdissect

    code = ("import sys\nfrom kdissect.cli import main\n"
            f"main(['analyze', {str(REAL)!r}, '--out', {str(tmp_path)!r}])\n"
            "assert 'pandas' not in sys.modules, 'analyze to Parquet loaded pandas'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    cap = kdissect.open_capture(REAL)
    for name in TABLES:
        got, expected = pd.read_parquet(tmp_path / f"{name}.parquet"), getattr(cap, name)
        if name == "records":
            assert [[(h["key"], h["value"]) for h in hs] for hs in got.pop("headers")] == list(expected.pop("headers"))
        assert len(got) == len(expected) and (len(got) or name in ("anomalies", "txn_events")), name  # no txn here
        pd.testing.assert_frame_equal(got, expected, check_categorical=False)


def test_a_parquet_piece_that_cannot_be_written_fails_the_run_not_silently(tmp_path: Path) -> None:
    """Pieces are written on a background thread; what it raises must reach the caller (the CLI
    turns an OSError into a one-line error), not vanish with the thread."""
    writer = TableWriter(tmp_path, "parquet")
    (tmp_path / "exchanges.parquet").mkdir()  # cannot be opened as a file
    writer.write("exchanges", {name: [] for name, _ in TABLES["exchanges"]})
    with pytest.raises(OSError):
        writer.close()
