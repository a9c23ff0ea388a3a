"""Engines are the only wiring: they feed a source's TCP segments to the core and its events to sinks.

Exports only the errors the faces print; import the engine you need (``kdissect.engines.local``) so that
``import kdissect`` loads no engine's dependencies.

The core an engine drives, and the surface every engine shares:

- ``KafkaPipeline(options)`` (``kdissect.kafka.pipeline``): sans-I/O, ``feed(segment)`` and
  ``finish()`` return Kafka events (exchanges, anomalies, connection summaries). One pipeline
  per independent stream of segments: a local run, a live capture, a Spark task's share.
- ``TableRun`` (``run.py``, the one run module) wires events to tables: a ``TableSink``
  (``kdissect.tables.sink``) makes the columns of the tables defined once in
  ``kdissect.tables.columns`` and hands each table over in pieces as it grows, to the one figures
  hook (``Figures.add``, ``kdissect.analysis.summary``) and to a writer. ``run.py`` also holds
  the unreadable-file rule and ``RunResult``, the result every engine returns.
- The faces make one call: ``request.run(Request)`` (a batch run, local or Spark),
  ``request.Shown`` (``show``), ``live.watch(LiveRequest, view)`` or ``frame.decode_frame``.
- ``local.events(paths, options, stats=, progress=)`` -> events; ``local.exchanges(paths,
  options, where=)`` -> (exchange, row) for ``show``; ``local.analyze(paths, options, tables=,
  writer=, progress=)`` -> ``RunResult`` (stats, summary, files written, columns);
  ``local.summary(paths, options)`` -> the figures alone, building only ``SUMMARY_TABLES``. The request
  module, ``kdissect.open_capture``, the fuzz targets and the benchmarks each make one of these calls.

The live engine (``live.py``) feeds one pipeline for the whole session, record by record, from a
libpcap device or a followed capture stream; its sink hands every table out in pieces
(``TableSink.take``) and its figures roll over (``analysis.rolling``), so a run of days stays
bounded; ended and idle connections leave the pipeline with their rows.

The Spark engine (``spark.py`` on the driver, ``spark_session.py`` its session's start,
``spark_worker.py`` in the workers and ``spark_daemon.py`` forking them locally, the only modules
importing pyspark) runs one pipeline and one sink per task over the segments of the connections
that task owns (shuffled by 4-tuple, so no connection is split; read tasks in ``units.py``, decode
tasks in ``partition.py``), returns the columns as Arrow pieces joined by ``tables.merge``, and
counts the summary's figures in each task
with the local engine's ``Figures``, merged on the driver (``Figures.merge``). Every engine names
each connection's input (``KafkaPipeline(opened=sink.connection_sources)`` and ``pipeline.source``)
for the ``source_file`` columns. Bounds on memory and time live in the core, so all three engines
inherit them.

Every process that runs an engine (the CLI, live, Spark's Python workers) imports this package before
numpy, which pyarrow loads: so it is here that numpy's OpenBLAS is held to one thread, unless the
environment says otherwise. OpenBLAS starts a thread per core that spins for a while; kdissect does no
linear algebra, and that spin was about 0.1 CPU s of every run (a third of a short one's).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # read once, when numpy loads OpenBLAS

from kdissect.sources.shapes import CaptureFormatError


class EngineSetupError(Exception):
    """An engine cannot run as it is set up (a Spark cluster whose executors cannot import kdissect):
    one line that names the fix, for the faces to print (defined here so they need not import the engine)."""


class NothingReadable(CaptureFormatError):
    """No input could be read (no file is a capture, or no packet of them could be read): one line,
    for the faces to print (``kdissect.engines.run.check_readable`` is the rule)."""


class RequestError(ValueError):
    """A request an engine cannot run as given (a path that does not exist, a device it cannot open,
    a port it cannot serve on): one line, for the faces to print as a usage error."""
