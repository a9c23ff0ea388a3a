"""Kafka captures as Spark DataFrames, for people with their own SparkSession::

    from kdissect.spark import read_captures
    tables = read_captures(spark, ["hdfs:///captures/broker1/", "/data/client.pcap"])
    tables["exchanges"].groupBy("api_name").count().show()

pyspark loads only when this is called (``pip install 'kdissect[spark]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def read_captures(spark: SparkSession, paths: Any, **kwargs: Any) -> dict[str, DataFrame]:
    """Every table of the captures at ``paths`` (files, directories, globs, URIs) as a DataFrame;
    see :func:`kdissect.engines.spark.read_captures` for the options."""
    from .engines.spark import read_captures as read

    return read(spark, paths, **kwargs)
