"""Kafka captures as Spark DataFrames, for people with their own SparkSession::

    from kdissect.spark import read_captures
    tables = read_captures(spark, ["hdfs:///captures/broker1/", "/data/client.pcap"])
    tables["exchanges"].groupBy("api_name").count().show()

Needs pyspark (``pip install 'kdissect[spark]'``); ``import kdissect`` alone never loads it. See
:func:`kdissect.engines.spark.read_captures` for the options.
"""

from kdissect.engines.spark import read_captures

__all__ = ["read_captures"]
