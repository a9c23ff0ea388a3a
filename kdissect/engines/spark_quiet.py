"""Spark's chatter, hidden unless asked for (``-v``): log4j's warnings at start-up (the host name,
Hadoop's native library), stage progress bars, and PySpark's pandas-version warning. Errors still show.

Plain Python (no pyspark import), so the warning filter can be set before pyspark is imported."""

from __future__ import annotations

import warnings
from pathlib import Path

LOG_CONFIG = Path(__file__).with_name("spark-log4j2.properties")


def hide_pandas_warning() -> None:
    """PySpark warns, on import and on each pandas UDF, that it does not fully support this pandas;
    kdissect's Spark engine is tested on it (tests/engines/test_spark_engine.py), so that is not news
    for a user. Only that one warning is hidden."""
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)


def quiet_conf() -> dict[str, str]:
    """Session settings: no progress bars, and the driver's log4j at errors from its first line (the
    ``spark.log.level`` setting would take effect only once the context runs, after the start-up warnings,
    and say so on stderr)."""
    return {
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}",
    }
