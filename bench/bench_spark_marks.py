"""By hand: a Spark run's wall time, step by step, as the driver sees it. Runs one kdissect command in
this process with PySpark's steps wrapped, and prints, at each step (``spark-submit`` launched, the
gateway up, the SparkContext and the SparkSession made, the daemon's warm-up job, each ``collect``,
the stop), the seconds since the start and the CPU seconds so far of the driver, the JVM and Spark's
Python workers (``bench_spark.timed``'s kinds; a worker's CPU counts once it is reaped)::

    PYTHONPATH=$PWD python bench/bench_spark_marks.py analyze $PWD/captures/kafka-python-admin.pcap \
        --out /tmp/o --engine spark --master 'local[1]'

Give ``PYTHONPATH`` the tree to time: kdissect is imported from it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress

START = time.perf_counter()

from bench_spark import KINDS, _descendants, _kind, cpu_s  # noqa: E402

MARKS: list[tuple[float, str, dict[str, float], str]] = []


def mark(what: str) -> None:
    me, cpu = os.getpid(), dict.fromkeys(KINDS, 0.0)
    for pid in (me, *_descendants(me)):
        kind = _kind(pid, me, None)
        cpu[kind] += cpu_s(pid, reaped=kind == "workers")
    MARKS.append((time.perf_counter() - START, what, cpu, threading.current_thread().name))


def around(owner: object, name: str, what: str) -> None:
    """``owner.name`` wrapped to mark its start and end."""
    inner: Callable = getattr(owner, name)

    def wrapped(*args: object, **kwargs: object) -> object:
        mark(f"{what} ...")
        try:
            return inner(*args, **kwargs)
        finally:
            mark(f"... {what}")

    setattr(owner, name, wrapped)


def main() -> None:
    import pyspark.core.context as context
    from pyspark import RDD
    from pyspark.sql import SparkSession
    from pyspark.sql.classic.dataframe import DataFrame

    import kdissect.engines.spark_session as spark_session

    popen = subprocess.Popen.__init__

    def launched(self: subprocess.Popen, args: list[str], *rest: object, **kwargs: object) -> None:
        mark(f"launch {os.path.basename(str(args[0]))}")
        popen(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = launched  # type: ignore[method-assign]
    around(context, "launch_gateway", "gateway")
    around(context.SparkContext, "_do_init", "SparkContext")
    around(SparkSession.Builder, "getOrCreate", "SparkSession")
    around(RDD, "count", "warm-up job")
    around(DataFrame, "collect", "collect")
    around(spark_session, "stop", "stop")
    from kdissect.cli import main as cli

    mark("kdissect.cli imported")
    sys.argv = ["kdissect", *sys.argv[1:]]
    with suppress(SystemExit):
        cli()
    mark("command done")
    print(f"{'s':>6}  {'step':<26} " + " ".join(f"{k:>7}" for k in KINDS) + "  (CPU s so far; thread)", file=sys.stderr)
    for at, what, cpu, thread in MARKS:
        print(f"{at:6.2f}  {what:<26} " + " ".join(f"{cpu[k]:7.2f}" for k in KINDS) + f"  {thread}", file=sys.stderr)


if __name__ == "__main__":
    main()
