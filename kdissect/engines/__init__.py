"""Engines: the only wiring of sources -> core -> sinks (local files, live capture, Spark)."""
