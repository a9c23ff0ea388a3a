"""The Python worker daemon of the engine's own local sessions: PySpark's (:mod:`pyspark.daemon`),
having imported, before it forks, what every task imports (PySpark's worker, the task module with
pyarrow, numpy and kdissect's stages and C extensions). Spark forks a worker per task slot, and not
always the same one from job to job; each used to import all of that again: about 0.4 CPU-s per
worker (reports/spark-fixed-2026-11-29.md).

PySpark's own daemon imports nothing before it forks because a module may start threads; these
start one, jemalloc's background thread (pyarrow's allocator), which handles ``fork`` itself.
Imported with the workers' environment, so ``KDISSECT_ARROW_ALONE`` holds as in a worker
(:mod:`kdissect.engines.spark_worker`). Used only where the executors run this Python, which imports
kdissect (:func:`kdissect.engines.spark_session.session`): a cluster's executors run PySpark's.

The imports are of compiled modules (:func:`compiled_pyspark_first`) and made with the collector off,
whose objects the forked workers then never rescan (``gc.freeze``): together 0.6-0.9 CPU-s less per
daemon (reports/spark-fixed-2026-11-30.md).
"""

import gc
import os
import sys
from importlib.machinery import PathFinder


def compiled_pyspark_first() -> None:
    """Import PySpark from its installed package rather than from the zip files Spark puts first on
    its workers' ``PYTHONPATH`` (``$SPARK_HOME/python/lib/pyspark.zip`` and py4j's): they hold sources
    only, so each daemon compiled every PySpark module it imported again (about 0.6 of its 0.95
    CPU-s of imports). Only when that package is Spark's own (its directory is ``SPARK_HOME``, as
    with the pip install whose JVM this is): the zips stay, after it, for anything only they hold."""
    home = os.environ.get("SPARK_HOME")
    if not home:
        return
    home = os.path.realpath(home)
    lib = os.path.join(home, "python", "lib", "")
    zips = [p for p in sys.path if p.endswith(".zip") and os.path.realpath(p).startswith(lib)]
    rest = [p for p in sys.path if p not in zips]
    spec = PathFinder.find_spec("pyspark", rest)
    if zips and spec is not None and spec.origin and os.path.realpath(os.path.dirname(spec.origin)) == home:
        sys.path[:] = rest + zips


def main() -> None:
    compiled_pyspark_first()
    gc.disable()  # (imports make long-lived objects only: a collection during them finds nothing to free)
    import pyspark.worker  # noqa: F401  (loaded for the workers it forks)
    from pyspark.daemon import manager

    import kdissect.engines.spark_worker  # noqa: F401

    gc.freeze()
    gc.enable()
    manager()


if __name__ == "__main__":
    main()
