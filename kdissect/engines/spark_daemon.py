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
"""

import pyspark.worker  # noqa: F401  (loaded for the workers it forks)
from pyspark.daemon import manager

import kdissect.engines.spark_worker  # noqa: F401

if __name__ == "__main__":
    manager()
