"""The Spark engine's Python workers without pandas (``KDISSECT_ARROW_ALONE``, engines/spark_worker.py): a
process with the flag never loads pandas while its tasks decode, and its answers are the local engine's;
without the flag the same work loads it (so the flag is what keeps it out). Then a real worker of the
engine's session, after a job: pandas not loaded there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from kdissect.engines.spark import decode
from kdissect.engines.spark_session import session
from kdissect.engines.spark_worker import ARROW_ALONE
from tests.conftest import require_tool
from tests.engines.spark_helpers import REAL_CAPTURES, assert_same_tables, local_tables

REPO = Path(__file__).resolve().parents[2]
# The tasks' steps in a fresh process (spark_helpers.simulate: read, shuffle, decode, finish), its tables
# written as Arrow for the test to compare, and whether pandas was loaded.
_TASKS = """
import sys
import pyarrow as pa
import kdissect.engines.spark_worker
from tests.engines.spark_helpers import simulate
tables = simulate(sys.argv[2:])
with pa.OSFile(sys.argv[1], "wb") as f:
    for name, table in tables.items():
        with pa.ipc.new_stream(f, table.schema.with_metadata({b"table": name.encode()})) as w:
            w.write_table(table)
print("pandas" in sys.modules)
"""
CAPTURES = [c for c in REAL_CAPTURES if "transactions" in c or "produce-consume" in c]


def _tasks_run(out: Path, flag: str) -> tuple[bool, dict[str, pa.Table]]:
    env = {**os.environ, ARROW_ALONE: flag, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", _TASKS, str(out), *CAPTURES], env=env, cwd=REPO,
                          capture_output=True, text=True, check=True)  # fmt: skip
    tables = {}
    with pa.OSFile(str(out), "rb") as f:
        while f.tell() < f.size():
            table = pa.ipc.open_stream(f).read_all()
            tables[table.schema.metadata[b"table"].decode()] = table.replace_schema_metadata(None)
    return done.stdout.strip() == "True", tables


def test_tasks_with_the_flag_load_no_pandas_and_answer_as_the_local_engine(tmp_path: Path) -> None:
    loaded, tables = _tasks_run(tmp_path / "alone.arrows", "1")
    assert not loaded
    want, _ = local_tables(CAPTURES)
    assert_same_tables(tables, {name: t.replace_schema_metadata(None) for name, t in want.items()})
    assert _tasks_run(tmp_path / "with.arrows", "0")[0]  # the same work without the flag loads pandas


@pytest.fixture(scope="module")
def spark():
    require_tool("java")
    s = session("local[1]")
    yield s
    s.stop()


def test_the_engine_s_workers_load_no_pandas(spark) -> None:
    decoded = decode(spark, CAPTURES[:1])
    assert decoded.figures.summary(decoded.source, decoded.stray_segments).exchanges > 0
    decoded.close()
    # A lambda travels by value: the worker that ran the job (local[1] reuses it) says what it has loaded.
    probe = lambda batches: iter([pa.RecordBatch.from_arrays(  # noqa: E731
        [pa.array(np.array(["kdissect.engines.spark_worker" in __import__("sys").modules])),
         pa.array(np.array(["pandas" in __import__("sys").modules]))], names=["kdissect", "pandas"])])  # fmt: skip
    got = spark.range(1, numPartitions=1).mapInArrow(probe, "kdissect boolean, pandas boolean").collect()
    assert [(row["kdissect"], row["pandas"]) for row in got] == [(True, False)]
