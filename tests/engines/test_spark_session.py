"""The Spark engine's session start (engines/spark_session.py): the JVM starts before the command imports
the engine, a failure to start is raised where the session is asked for, the accumulator server is not
waited for, and where the executors run this Python, the workers Spark forks already hold the task
module (kdissect's worker daemon, started before the first query); elsewhere PySpark's daemon runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from pyspark.errors import PySparkException, PySparkRuntimeError

from kdissect.engines import EngineSetupError, spark_session
from kdissect.engines.request import Request, SparkSettings, run
from kdissect.engines.spark import executors_set_up
from kdissect.engines.spark_daemon import compiled_pyspark_first
from kdissect.engines.spark_session import DAEMON_MODULE, Starting, runs_this_python, stop
from tests.conftest import require_tool
from tests.engines.spark_helpers import REAL_CAPTURES

REPO = Path(__file__).resolve().parents[2]


class _Started(Exception):
    pass


def test_the_session_starts_before_the_engine_is_imported(monkeypatch) -> None:
    """The JVM boots while the driver imports the engine: ``Starting`` comes first."""
    engine_loaded = []

    def starting(*args: object, **kwargs: object) -> None:
        engine_loaded.append("kdissect.engines.spark" in sys.modules)
        raise _Started

    monkeypatch.delitem(sys.modules, "kdissect.engines.spark", raising=False)
    monkeypatch.setattr(spark_session, "Starting", starting)
    with pytest.raises(_Started):
        run(Request([REAL_CAPTURES[0]], spark=SparkSettings("local[1]")))
    assert engine_loaded == [False]


def test_a_session_that_fails_to_start_raises_where_it_is_asked_for(monkeypatch) -> None:
    def failing(*args: object) -> None:
        raise RuntimeError("no JVM")

    monkeypatch.setattr(spark_session, "session", failing)
    starting = Starting("spark://127.0.0.1:1")  # (not local: no class archive looked for)
    with pytest.raises(RuntimeError, match="no JVM"):
        starting.session()
    starting.stop()  # nothing made: nothing to stop


def test_a_jvm_that_does_not_start_ends_in_one_line(monkeypatch) -> None:
    def no_java(*args: object) -> None:
        raise PySparkRuntimeError(errorClass="JAVA_GATEWAY_EXITED", messageParameters={})

    monkeypatch.setattr(spark_session, "session", no_java)
    with pytest.raises(EngineSetupError, match=r"JVM did not start .* Java 17 or later"):
        Starting("spark://127.0.0.1:1").session()


class _Server:
    def __init__(self) -> None:
        self.stopped = threading.Event()
        self.by: str | None = None

    def shutdown(self) -> None:
        self.by = threading.current_thread().name
        self.stopped.set()


class _Spark:
    def __init__(self, server: _Server) -> None:
        self.sparkContext = type("Context", (), {"_accumulatorServer": server})()
        self.server_at_stop: object = "not stopped"

    def stop(self) -> None:
        self.server_at_stop = self.sparkContext._accumulatorServer


def test_stop_leaves_the_accumulator_server_to_stop_on_a_thread() -> None:
    server = _Server()
    spark = _Spark(server)
    stop(spark)  # type: ignore[arg-type]
    assert spark.server_at_stop is None  # SparkContext.stop does not wait for it
    assert server.stopped.wait(10) and server.by != threading.current_thread().name


def test_kdissect_s_daemon_only_where_the_executors_run_this_python(monkeypatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    assert runs_this_python("local[2]", None)
    assert runs_this_python("local[1]", {"spark.pyspark.python": sys.executable})
    assert not runs_this_python("local[1]", {"spark.pyspark.python": "/opt/other/bin/python"})
    assert not runs_this_python("spark://127.0.0.1:7077", None)  # a cluster's executors: PySpark's daemon
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/other/bin/python")
    assert not runs_this_python("local[2]", None)


def test_the_daemon_takes_pyspark_from_its_package_only_when_that_is_spark_home_s(monkeypatch, tmp_path) -> None:
    """Spark's zips of PySpark's sources go after the installed package when it is the one in SPARK_HOME
    (the pip install whose JVM runs); with another Spark's home, the path stays as Spark made it."""
    import pyspark

    home = os.path.dirname(pyspark.__file__)
    zips = [os.path.join(home, "python", "lib", "pyspark.zip"), os.path.join(home, "python", "lib", "py4j-src.zip")]
    rest = [p for p in sys.path if not p.endswith(".zip")]
    monkeypatch.setattr(sys, "path", [*zips, *rest])
    monkeypatch.setenv("SPARK_HOME", home)
    compiled_pyspark_first()
    assert sys.path == [*rest, *zips]
    other = tmp_path / "spark-3"  # a Spark of the user's own: its zips are its PySpark
    others = [str(other / "python" / "lib" / "pyspark.zip")]
    monkeypatch.setattr(sys, "path", [*others, *rest])
    monkeypatch.setenv("SPARK_HOME", str(other))
    compiled_pyspark_first()
    assert sys.path == [*others, *rest]


# A job's first worker, from a new session: whether it held the task module before its task ran (the
# probe is a lambda, sent by value: unpickling it imports nothing of kdissect), whether its PySpark is the
# installed package's (compiled) rather than Spark's zip of sources, and its parent's command.
_PROBE = """
import sys
import pyarrow as pa
from kdissect.engines.spark_session import session

probe = lambda batches: iter([pa.RecordBatch.from_pylist([{
    "loaded": "kdissect.engines.spark_worker" in __import__("sys").modules,
    "compiled": ".zip" not in __import__("sys").modules["pyspark.worker"].__file__,
    "parent": open(f"/proc/{__import__('os').getppid()}/cmdline").read().replace(chr(0), " ")}])])
conf = dict(arg.split("=", 1) for arg in sys.argv[1:])
spark = session("local[1]", conf, verbose=False)
row = spark.range(1, numPartitions=1).mapInArrow(probe, "loaded boolean, compiled boolean, parent string").collect()[0]
print(row["loaded"], row["compiled"], row["parent"])
spark.stop()
"""


def _first_worker(*conf: str) -> tuple[bool, bool, str]:
    done = subprocess.run([sys.executable, "-c", _PROBE, *conf], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600, check=True)  # fmt: skip
    loaded, compiled, parent = done.stdout.strip().split(" ", 2)
    return loaded == "True", compiled == "True", parent


def test_workers_forked_by_kdissect_s_daemon_hold_the_task_module_before_their_task() -> None:
    """... and PySpark compiled: Spark puts its zip of PySpark's sources first on the workers' path,
    which every daemon compiled again (spark_daemon.compiled_pyspark_first)."""
    require_tool("java")
    loaded, compiled, parent = _first_worker()
    assert loaded and compiled and f"-m {DAEMON_MODULE} " in parent
    loaded, compiled, parent = _first_worker("spark.python.daemon.module=pyspark.daemon")  # PySpark's: a cold worker
    assert not loaded and not compiled and "-m pyspark.daemon " in parent


# A new session's worker daemons before its first query (polled for up to the seconds given), and that
# query's worker's parent: the daemon kdissect's session starts while the SparkSession is made, if any.
_EARLY = """
import json, os, sys, time
import pyarrow as pa
from pyspark import SparkContext
from kdissect.engines.spark_session import session

def daemons(jvm):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat, cmd = open(f"/proc/{pid}/stat").read(), open(f"/proc/{pid}/cmdline").read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == jvm and "daemon" in cmd:
            found.append(int(pid))
    return found

conf = dict(arg.split("=", 1) for arg in sys.argv[2:])
spark = session("local[1]", conf, verbose=False)
jvm = SparkContext._gateway.proc.pid
deadline = time.monotonic() + float(sys.argv[1])
while not daemons(jvm) and time.monotonic() < deadline:
    time.sleep(0.1)
before = daemons(jvm)
probe = lambda batches: iter([pa.RecordBatch.from_pylist([{"parent": __import__("os").getppid()}])])
parent = spark.range(1, numPartitions=1).mapInArrow(probe, "parent long").collect()[0]["parent"]
print(json.dumps([before, parent, daemons(jvm)]))
spark.stop()
"""


def _daemons_around_the_first_query(wait_s: float, *conf: str) -> tuple[list[int], int, list[int]]:
    done = subprocess.run([sys.executable, "-c", _EARLY, str(wait_s), *conf], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600, check=True)  # fmt: skip
    before, parent, after = json.loads(done.stdout.strip().rsplit("\n", 1)[-1])
    return before, parent, after


def test_kdissect_s_daemon_starts_before_the_first_query_and_serves_it() -> None:
    require_tool("java")
    before, parent, after = _daemons_around_the_first_query(60)
    assert len(before) == 1 and after == before and parent == before[0]  # one daemon, forked the query's worker
    before, parent, after = _daemons_around_the_first_query(5, "spark.python.daemon.module=pyspark.daemon")
    assert before == [] and len(after) == 1 and parent == after[0]  # PySpark's: started by the first query


def test_executors_that_cannot_start_kdissect_s_daemon_end_in_one_line() -> None:
    """``python -m`` says a daemon module is missing without quotes: still the one line naming the fix."""
    said = f"Error from python worker:\n  /usr/bin/python3: No module named {DAEMON_MODULE}\nPYTHONPATH was:"
    one_line = f"executors' Python cannot import {DAEMON_MODULE}: install kdissect"
    with pytest.raises(EngineSetupError, match=one_line), executors_set_up():
        raise PySparkException(said)
