"""What moving segments through Spark costs, row per segment (today's ``units.SEGMENT_SCHEMA``) against
compact runs (a binary column of packed segment headers, ``RUN_SEGMENTS`` per row), run by hand:

    python bench/bench_spark_rows.py --segments 400000

Each way, in one ``local[1]`` session: tasks make the segments, Spark shuffles them by key and sorts
them within partitions by place in capture order (what the engine's stage 2 does), and a task reads
them back as Python values. Prints wall seconds and the JVM's CPU seconds of each way, twice, after a
warm-up job; both ways run side by side, so the ratio holds on a loaded machine. No kdissect decoding
is involved: this is the cost the shuffle's row shape adds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kdissect.engines.units import SEGMENT_SCHEMA

PARTITIONS = 4
KEYS = 977  # connections
RUN_SEGMENTS = 1000
RUN_SCHEMA = pa.schema([("key", pa.int64()), ("pos", pa.int64()), ("run", pa.binary())])
HEADER = np.dtype([("pos", "i8"), ("ts", "i8"), ("seq", "i8"), ("ack", "i8"), ("flags", "i4"), ("window", "i4"),
                   ("payload_len", "i4"), ("captured", "i4"), ("payload_at", "i8"), ("forward", "i1")])  # fmt: skip
_COUNT = pa.schema([("n", pa.int64())])


def segment_rows(batches: Iterator[pa.RecordBatch], total: int) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for part in batch.column(0).to_pylist():
            n = total // PARTITIONS
            base = part * n
            columns: dict[str, list] = {name: [None] * n for name in SEGMENT_SCHEMA.names}
            columns.update(key=[(base + i) % KEYS for i in range(n)], pos=list(range(base, base + n)), kind=[0] * n,
                           file_index=[0] * n, ts=list(range(n)), src_ip=["10.0.0.1"] * n, dst_ip=["10.0.0.2"] * n,
                           src_port=[40000] * n, dst_port=[9092] * n, seq=list(range(n)), ack=list(range(n)),
                           payload_at=list(range(n)), flags=[24] * n, window=[512] * n, payload_len=[1448] * n,
                           captured=[1448] * n)  # fmt: skip
            yield pa.RecordBatch.from_pydict(columns, schema=SEGMENT_SCHEMA)


def segment_runs(batches: Iterator[pa.RecordBatch], total: int) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for part in batch.column(0).to_pylist():
            n = total // PARTITIONS
            base = part * n
            keys, first, runs = [], [], []
            for key in range(KEYS):
                positions = np.arange(base + key, base + n, KEYS)
                for at in range(0, len(positions), RUN_SEGMENTS):
                    headers = np.zeros(len(positions[at : at + RUN_SEGMENTS]), HEADER)
                    headers["pos"] = positions[at : at + RUN_SEGMENTS]
                    keys.append(key)
                    first.append(int(headers["pos"][0]))
                    runs.append(headers.tobytes())
            yield pa.RecordBatch.from_pydict({"key": keys, "pos": first, "run": runs}, schema=RUN_SCHEMA)


def read_back(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    n = 0
    for batch in batches:
        if "run" in batch.schema.names:
            n += sum(len(np.frombuffer(run, HEADER).tolist()) for run in batch.column("run").to_pylist())
        else:
            n += len(batch.to_pydict()["pos"])
    yield pa.RecordBatch.from_pydict({"n": [n]}, schema=_COUNT)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--segments", type=int, default=400_000)
    args = ap.parse_args()
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1").getOrCreate())  # fmt: skip
    spark.sparkContext.setLogLevel("ERROR")
    jvm = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())

    def jvm_cpu() -> float:
        fields = Path(f"/proc/{jvm}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    seeds = spark.createDataFrame([(i,) for i in range(PARTITIONS)], "p long").repartition(PARTITIONS)
    ways = {"rows": (segment_rows, SEGMENT_SCHEMA), "runs": (segment_runs, RUN_SCHEMA)}
    try:
        for label in ("rows", "rows", "runs", "rows", "runs"):  # the first: a warm-up
            make, schema = ways[label]
            cpu, start = jvm_cpu(), time.perf_counter()
            moved = (seeds.mapInArrow(lambda b, make=make: make(b, args.segments), from_arrow_schema(schema))
                     .repartition(PARTITIONS, "key").sortWithinPartitions("pos"))  # fmt: skip
            n = sum(r["n"] for r in moved.mapInArrow(read_back, from_arrow_schema(_COUNT)).collect())
            print(f"{label}: {n:,} segments, wall {time.perf_counter() - start:.1f} s, JVM CPU {jvm_cpu() - cpu:.1f} s",
                  flush=True)  # fmt: skip
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
