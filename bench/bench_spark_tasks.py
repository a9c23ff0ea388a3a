"""The Spark engine's task functions on one capture file (or several: rotated files of one capture), in one
Python process and no JVM, run by hand, so their cost can be profiled (callgrind, cProfile) and set beside
the local engine's on the same files:

    python bench/bench_spark_tasks.py FILE                    # the Spark tasks, as local[1] runs them
    python bench/bench_spark_tasks.py FILE --engine local     # the local engine's analyze --out
    python bench/bench_spark_tasks.py FILE --crossing all     # every connection through the shuffle
    python bench/bench_spark_tasks.py FILE --until read       # stop after a stage (start, census, read, decode)
    python bench/bench_spark_tasks.py FILE --code DIR         # another version's kdissect (e.g. a baseline)
    valgrind --tool=callgrind --callgrind-out-file=OUT python bench/bench_spark_tasks.py FILE ...
    python bench/bench_spark_tasks.py FILE1 FILE2 ...        # rotated files: the connections crossing them
                                                             # go through the shuffle, as on Spark

The stages are those of ``kdissect analyze --engine spark --out``: the census (when the engine runs it, or
``--crossing all``), the read task, the shuffle (done here by pyarrow: rows split by key and sorted in
capture order, as Spark hands them to a decode task), the decode tasks (pieces staged in a temporary
directory), the driver's settling (connection ids, topic names, the transaction journal's replay) and the
write tasks (Parquet). ``--crossing own`` (the default) is what one file gives on Spark: every connection
lies inside its unit, so the read task decodes them all. ``--crossing all`` sends every connection through
the decode tasks, as connections that cross rotated files go. Prints CPU seconds per stage. Set
``KDISSECT_ARROW_ALONE=1`` to run as the engine's Python workers do (``--until start``: what a worker
imports and makes before its first task, the task module and an Arrow batch of Python values).
"""

from __future__ import annotations

import argparse
import inspect
import os
import pickle
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SPLIT_BYTES = 128 << 20  # engines.spark.SPLIT_BYTES (the driver's module is not imported: it loads pandas)
STAGES = ("start", "census", "read", "decode", "write")
_TASKS = ("census_task", "read_task", "decode_task", "read_and_decode_task", "write_parts", "journal_calls",
          "replay_task")  # fmt: skip


class Held:
    """What a Spark broadcast is to a task: ``.value``."""

    def __init__(self, value: object) -> None:
        self.value = value


class Task:
    """What ``TaskContext.get()`` returns in a task: its partition and attempt."""

    def __init__(self, partition: int) -> None:
        self.partition = partition

    def partitionId(self) -> int:
        return self.partition

    def attemptNumber(self) -> int:
        return 0


def task_functions() -> dict[str, object]:
    """The engine's task functions (``engines.spark_worker``; before it, private in ``engines.spark``)."""
    try:
        from kdissect.engines import spark_worker

        return {name: getattr(spark_worker, name) for name in _TASKS}
    except ImportError:
        from kdissect.engines import spark

        return {name: getattr(spark, "_" + name) for name in _TASKS}


def as_task(partition: int) -> None:
    from pyspark import TaskContext

    TaskContext._setTaskContext(Task(partition))  # type: ignore[arg-type]


def ids(values: list[int]) -> list[pa.RecordBatch]:
    """Spark's ``range`` rows as a task gets them (from the JVM: no Python values made into arrays)."""
    return [pa.RecordBatch.from_arrays([pa.array(np.array(values, np.int64))], names=["id"])]


class Clock:
    def __init__(self) -> None:
        self.at = time.process_time()

    def lap(self, stage: str) -> None:
        now = time.process_time()
        print(f"{stage:>8}: {now - self.at:7.2f} CPU-s", flush=True)
        self.at = now


def run_local(paths: list[str]) -> None:
    from kdissect.engines import local
    from kdissect.options import Options
    from kdissect.tables.writer import TableWriter

    clock = Clock()
    local.tune_gc()
    with tempfile.TemporaryDirectory(prefix="bench-tasks-") as out:
        result = local.analyze(paths, Options(), writer=TableWriter(Path(out), "parquet"))
    clock.lap("local")
    print(f"tables written: {len(result.written)}")


def run_spark(paths: list[str], crossing_all: bool, until: str) -> None:
    clock = Clock()
    import pyspark.worker  # noqa: F401  (loaded in every Python worker before a task's function)

    tasks = task_functions()
    pa.RecordBatch.from_pylist([{"table": "x", "data": b""}])  # a worker's first batch of Python values
    print(f"pandas imported: {'pandas' in sys.modules}")
    clock.lap("start")
    if until == "start":
        return

    from kdissect.engines.units import Census, may_hold_secrets, plan_units

    units = plan_units([(path, os.path.getsize(path)) for path in paths], SPLIT_BYTES)
    found, every_key = None, {}
    if crossing_all or len(units) > 1 or any(may_hold_secrets(path) for path in paths):
        as_task(0)
        pieces = [pickle.loads(row["census"]) for batch in tasks["census_task"](ids(list(range(len(units)))),
                  units=Held(units)) for row in batch.to_pylist()]  # fmt: skip
        found = Census.merge(pieces)
        every_key = {int(k): (1, 0, 0) for piece in pieces for k in piece.keys}  # (each one segment, of one file)
        clock.lap("census")
    if until == "census":
        return

    with tempfile.TemporaryDirectory(prefix="bench-tasks-staging-") as staging:
        _read_decode_write(tasks, clock, paths, units, found, every_key if crossing_all else None, staging, until)


def _read_decode_write(tasks: dict, clock: Clock, paths: list[str], units: list, found: object, crossing: dict | None,
                       staging: str, until: str) -> None:  # fmt: skip
    from kdissect.analysis.summary import Figures
    from kdissect.engines.partition import unit_decoder
    from kdissect.engines.routes import routes
    from kdissect.engines.units import segment_order
    from kdissect.options import Options
    from kdissect.tables import merge
    from kdissect.tables.columns import TABLES

    files, options, tables, partitions = paths, Options(), list(TABLES), 2  # local[1]: 2 partitions
    source = crossing if crossing is not None else (found.crossing if found else {})
    if "routed" in inspect.signature(tasks["read_task"]).parameters:
        routed = routes(source, found.own if found and crossing is None else [], partitions)
        crossing, keys = routed.connections, {"routed": Held(routed)}
    else:  # an older tree (--code): its routes deal the crossing keys only, by (work, file)
        crossing = routes({key: (value[0], value[-1]) for key, value in source.items()}, partitions)
        keys = {"crossing": Held(crossing)}
    decoder = partial(unit_decoder, files=files, options=options, tables=tables, staging=staging, figures=Figures,
                      first_task=max(partitions, len(units)))  # fmt: skip
    read = partial(tasks["read_task"], units=Held(units), **keys, decoder=decoder,
                   last_ts=found.last_ts if found else None)  # fmt: skip
    decode = partial(tasks["decode_task"], files=files, options=options, tables=tables, staging=staging,
                     figures=Figures)  # fmt: skip
    envelopes: list[list[pa.RecordBatch]] = []  # per decode partition
    if crossing:
        rows = []
        for unit in units:
            as_task(unit.index)
            rows += list(read(ids([unit.index])))
        shuffled = pa.Table.from_batches(rows)
        clock.lap("read")
        if until == "read":
            return
        for part in range(partitions):
            mine = shuffled.filter(pa.array(shuffled["key"].to_numpy() % partitions == part))
            mine = mine.sort_by([(c, "ascending") for c in segment_order(len(files))])
            as_task(part)
            envelopes.append(list(decode(iter(mine.to_batches(max_chunksize=10_000)),
                                         several_inputs=found.repeats if found else None)))  # fmt: skip
    else:
        for unit in units:
            as_task(unit.index)
            envelopes.append(list(tasks["read_and_decode_task"](ids([unit.index]), read=read, decode=decode)))
    clock.lap("decode")
    if until == "decode":
        return

    side = [row for part in envelopes for batch in part for row in batch.to_pylist() if row["table"].startswith("_")]
    opened = merge.Opened.of_pieces(merge.read_ipc(r["data"]) for r in side if r["table"] == merge.OPENED)
    topics = merge.topic_names(merge.read_ipc(r["data"]) for r in side if r["table"] == merge.TOPICS)
    figures = Figures()
    for r in side:
        if r["table"] == merge.FIGURES:
            figures.merge(pickle.loads(r["data"]))
    journal = [b.filter(pc.equal(b["table"], merge.JOURNAL)) for part in envelopes for b in part]
    calls = pa.Table.from_batches(list(tasks["journal_calls"](journal)), merge.JOURNAL_SCHEMA)
    calls = calls.sort_by([(c, "ascending") for c in merge.JOURNAL_ORDER])
    marks = [mark for batch in tasks["replay_task"](calls.to_batches(), topics=topics, rows=None)
             for mark in merge.marks_of(batch)]  # fmt: skip
    settled = Held(merge.Settled(opened, topics, marks))
    clock.lap("settle")

    from pyarrow import fs

    with tempfile.TemporaryDirectory(prefix="bench-tasks-out-") as out:
        for name in tables:  # (as the driver makes them)
            os.makedirs(f"{out}/{name}")
        for part, batches in enumerate(envelopes):
            as_task(part)
            kept = [b.filter(pc.invert(pc.starts_with(b["table"], "_"))) for b in batches]
            list(tasks["write_parts"](kept, settled=settled, filesystem=fs.LocalFileSystem(), root=out))
    clock.lap("write")
    print(staged_bytes(Path(staging)))


def staged_bytes(staging: Path) -> str:
    """The staged pieces' size, in all and per table (a table's directory under the staging root)."""
    sizes: dict[str, int] = {}
    for f in staging.rglob("*"):
        if f.is_file():
            table = f.parent.name if f.parent != staging else "(marks)"
            sizes[table] = sizes.get(table, 0) + f.stat().st_size
    parts = ", ".join(f"{name} {size / 1e6:.1f}" for name, size in sorted(sizes.items(), key=lambda kv: -kv[1]))
    return f"staged: {sum(sizes.values()) / 1e6:.1f} MB ({parts})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", help="capture files (several: rotated files of one capture)")
    parser.add_argument("--engine", choices=("spark", "local"), default="spark")
    parser.add_argument("--crossing", choices=("own", "all"), default="own")
    parser.add_argument("--until", choices=STAGES, default="write")
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="directory of the kdissect to import (default: this tree)")  # fmt: skip
    args = parser.parse_args()
    sys.path.insert(0, str(args.code))
    from kdissect.sources.files import in_time_order

    paths = in_time_order([os.path.abspath(file) for file in args.files])  # (as the engines order them)
    if args.engine == "local":
        run_local(paths)
    else:
        run_spark(paths, args.crossing == "all", args.until)


if __name__ == "__main__":
    main()
