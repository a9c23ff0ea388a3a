"""The Spark options of the command line (``--conf KEY=VALUE``, ``--archives``) become Spark settings;
a malformed one is a usage error before any Spark starts."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from kdissect.cli import EXIT_USAGE, _spark_conf, main

CAPTURE = str(Path(__file__).resolve().parents[2] / "captures" / "kafka-python-admin.pcap")


def test_conf_and_archives_become_spark_settings() -> None:
    args = argparse.Namespace(conf=["spark.executor.memory=4g", "spark.pyspark.python=./kd/bin/python",
                                    "spark.archives=a.tar.gz#a", "spark.x=y=z"], archives="kd.tar.gz#kd")  # fmt: skip
    assert _spark_conf(args) == {"spark.executor.memory": "4g", "spark.pyspark.python": "./kd/bin/python",
                                 "spark.archives": "a.tar.gz#a,kd.tar.gz#kd", "spark.x": "y=z"}  # fmt: skip


@pytest.mark.parametrize("bad", ["spark.executor.memory", "=4g"])
def test_a_conf_without_key_and_value_is_a_usage_error(bad: str, capsys) -> None:
    assert main(["analyze", CAPTURE, "--engine", "spark", "--conf", bad]) == EXIT_USAGE
    assert capsys.readouterr().err.strip() == f"kdissect: --conf takes KEY=VALUE, not {bad!r}"
