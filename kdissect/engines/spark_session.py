"""The Spark engine's session: its settings, and its start on a thread as soon as a run is asked for.

A small local run spends most of its wall time waiting for Spark's JVM: its start (about 2 s), the
SparkContext and the SparkSession (about 2.5 s), the first query. :class:`Starting` begins all of it
on a thread before the command imports the engine (pandas, pyarrow, kdissect's stages: about 0.6 s)
and plans the run, so that work runs on the other core while the JVM boots. :func:`stop` does not
wait for PySpark's accumulator server to notice it is stopped (it polls every 0.5 s). When the
executors run this Python, their worker daemon is kdissect's (:mod:`kdissect.engines.spark_daemon`),
started by a one-task job while the JVM makes the SparkSession (:func:`_daemon_started`).
Measured: reports/spark-fixed-2026-11-29.md.

Imports only pyspark's light parts (0.13 s), so the JVM's start comes first.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping
from contextlib import suppress

import pyspark
from pyspark import SparkConf, SparkContext
from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession

from kdissect.engines import EngineSetupError
from kdissect.engines.spark_classes import ClassArchive, class_archive, spark_install
from kdissect.engines.spark_quiet import quiet_conf

ARROW_ALONE = "KDISSECT_ARROW_ALONE"  # the workers' flag: no pandas in them (spark_worker)
DAEMON_MODULE = "kdissect.engines.spark_daemon"
# Set by Spark for a query's Python tasks, not an RDD's: a worker daemon serves the tasks of one environment.
SIMPLIFIED_TRACEBACK = "SPARK_SIMPLIFIED_TRACEBACK"
# Local mode's SQL settings (a cluster keeps Spark's): what a small run's JVM spent most on after its start.
LOCAL_SQL = {
    # Catalyst's interpreted expressions and operators instead of Java source generated for each query and
    # compiled by Janino (cold in a small run; with the envelope kept as rows, spark.kept, Janino never
    # starts). The JVM's rows here are a few per task (pieces, runs of 4,096 segments), not per packet.
    "spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    # No session extension found on the class path: pyspark's jars hold one, spark-mllib's, registering ML
    # functions kdissect never calls, whose start (Scala reflection for their types) took about a quarter
    # of the JVM's CPU in a small run. Extensions named by spark.sql.extensions still load.
    "spark.sql.extensions.test.loadFromCp": "false",
}  # fmt: skip


def session(master: str = "local[*]", conf: Mapping[str, str] | None = None, verbose: bool = True,
            classes: ClassArchive | None = None) -> SparkSession:  # fmt: skip
    """A SparkSession for the command line; ``conf`` (``--conf KEY=VALUE``) wins over every default here.
    ``classes``: the class archive its JVM maps or writes (:mod:`kdissect.engines.spark_classes`).

    Executors on this machine run this Python; a cluster's need kdissect installed, or shipped as a
    packed environment (``spark.archives``) whose Python ``spark.pyspark.python`` names (docs/spark.md).
    When Spark runs on this machine (``local[...]`` or a master on loopback), its services, web UIs
    included, listen on 127.0.0.1 unless ``SPARK_LOCAL_IP`` says otherwise: nothing to reach from outside.
    ``verbose=False`` hides Spark's chatter (``spark_quiet``)."""
    settings = {"spark.driver.memory": "2g", "spark.ui.enabled": "false", "spark.sql.session.timeZone": "UTC",
                f"spark.executorEnv.{ARROW_ALONE}": "1",  # the Python workers never import pandas
                **({} if verbose else quiet_conf())}  # fmt: skip
    if runs_this_python(master, conf):  # workers forked with the task module loaded (spark_daemon)
        settings["spark.python.daemon.module"] = DAEMON_MODULE
        settings[f"spark.executorEnv.{SIMPLIFIED_TRACEBACK}"] = "1"  # (the first queries' daemon: _daemon_started)
    java_options = [settings.pop("spark.driver.extraJavaOptions", "")]
    if on_this_machine(master):
        settings.update(LOCAL_SQL)
        # The driver is also the executor, and its work here is moving small rows: the JIT's
        # optimizing tier costs about ten CPU seconds per run and never pays back (bench_spark.py).
        java_options.append("-XX:TieredStopAtLevel=1")
    if classes is not None:
        java_options += classes.java_options()
    given = dict(conf or {})
    java_options.append(given.pop("spark.driver.extraJavaOptions", ""))  # the JVM takes the last of a flag given twice
    settings.update(given)
    if any(java_options):
        settings["spark.driver.extraJavaOptions"] = " ".join(filter(None, java_options))
    # The executors' Python is the one the driver names in each job (not read from the conf by Spark
    # when the driver is this process, not spark-submit's).
    os.environ["PYSPARK_PYTHON"] = settings.get("spark.pyspark.python") or os.environ.get(
        "PYSPARK_PYTHON", sys.executable
    )
    if on_this_machine(master) or _on_loopback(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(master).appName("kdissect")
    for key, value in settings.items():
        builder = builder.config(key, value)
    if settings.get("spark.python.daemon.module") == DAEMON_MODULE and SparkContext._active_spark_context is None:
        context = SparkContext.getOrCreate(SparkConf().setAll([("spark.master", master), ("spark.app.name", "kdissect"),
                                                               *settings.items()]))  # fmt: skip
        threading.Thread(target=_daemon_started, args=(context,), name="kdissect-spark-daemon", daemon=True).start()
    return builder.getOrCreate()  # (the SparkSession on that SparkContext)


def _daemon_started(context: SparkContext) -> None:
    """The executors' worker daemon started (by a one-task RDD job) while the JVM makes the SparkSession and
    the driver plans its first query: its start, importing the task module, is otherwise on that query's
    path (about 0.7 s wall). It is the daemon the queries' tasks use, and the job's worker the first
    one's, since the RDD job's tasks have the environment Spark gives the queries' (``SIMPLIFIED_TRACEBACK``)."""
    with suppress(Exception):  # (a daemon that fails to start is the first query's to say, in one line)
        context.parallelize([0], 1).count()


def on_this_machine(master: str) -> bool:
    """Whether Spark's executors run here (``local[...]``)."""
    return master.startswith("local")


def runs_this_python(master: str, conf: Mapping[str, str] | None) -> bool:
    """Whether the executors run this Python (local mode, no other named), which imports kdissect."""
    named = (conf or {}).get("spark.pyspark.python") or os.environ.get("PYSPARK_PYTHON", sys.executable)
    return on_this_machine(master) and os.path.abspath(named) == os.path.abspath(sys.executable)


def _on_loopback(master: str) -> bool:
    """Whether a master URL (``spark://host:port``) names this machine's loopback interface."""
    host = master.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
    return host == "localhost" or host.startswith("127.") or host == "::1"


class Starting:
    """A session being made on a thread (:func:`session`) from the command's settings, while the
    thread that made this imports the engine and plans the run."""

    def __init__(self, master: str, conf: Mapping[str, str] | None = None, verbose: bool = True) -> None:
        self.master, self.verbose = master, verbose
        fresh = on_this_machine(master) and SparkContext._gateway is None  # (a JVM already running: as it is)
        self.classes = class_archive(spark_install(pyspark.__version__, os.path.dirname(pyspark.__file__))) \
            if fresh else None  # fmt: skip
        self._made: SparkSession | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._make, args=(conf, verbose), name="kdissect-spark-start",
                                        daemon=True)  # fmt: skip
        self._thread.start()

    def _make(self, conf: Mapping[str, str] | None, verbose: bool) -> None:
        try:
            self._made = session(self.master, conf, verbose, self.classes)
        except BaseException as exc:  # raised in the thread that asks for the session
            self._error = exc

    def session(self) -> SparkSession:
        """The session, once made; what making it raised, raised here (a JVM that did not start: one line)."""
        self._thread.join()
        if isinstance(self._error, PySparkRuntimeError) and self._error.getCondition() == "JAVA_GATEWAY_EXITED":
            raise EngineSetupError("Spark's JVM did not start (its own message is above): the Spark engine needs "
                                   "Java 17 or later, on PATH or named by JAVA_HOME") from None  # fmt: skip
        if self._error is not None:
            raise self._error
        assert self._made is not None
        return self._made

    def stop(self) -> None:
        """The session stopped (:func:`stop`), once made."""
        self._thread.join()
        if self._made is not None:
            stop(self._made)


def stop(spark: SparkSession) -> None:
    """``spark.stop()``, leaving PySpark's accumulator server to stop on a thread: its shutdown waits
    for the server's next poll, up to 0.5 s, and nothing after a run needs it gone."""
    context = spark.sparkContext
    server = getattr(context, "_accumulatorServer", None)
    context._accumulatorServer = None  # (SparkContext.stop shuts it down when set)
    spark.stop()
    if server is not None:
        threading.Thread(target=server.shutdown, name="kdissect-accumulators-stop", daemon=True).start()
