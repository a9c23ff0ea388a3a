"""Engines wire sources to the core pipeline and to sinks: local (default) and spark (PySpark)."""
