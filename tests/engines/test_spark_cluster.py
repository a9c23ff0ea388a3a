"""A real Spark standalone cluster on 127.0.0.1 — a master and two workers started from the pyspark
install — running ``kdissect analyze --engine spark --master spark://...`` on the capture corpus:
the same Parquet rows and the same summary as the local engine. Every process started is stopped.

The workers' environment has kdissect's dependencies on its ``PYTHONPATH`` (this environment's
site-packages, whose ``.pth`` files, kdissect's own install among them, only a site directory runs)
but not kdissect: a Python named for the executors lacks it unless it is shipped, as docs/spark.md
says, in a packed environment sent with ``--archives``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pyspark
import pytest

from kdissect.tables.columns import TABLES
from tests.conftest import require_tool
from tests.engines.spark_helpers import REAL_CAPTURES, read_parquet_dir, rows

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
ROOT = Path(__file__).resolve().parents[2]
SITE_PACKAGES = next(p for p in sys.path if p.endswith("site-packages") and Path(p, "pyarrow").is_dir())
BARE_PYTHON = getattr(sys, "_base_executable", sys.executable)  # the interpreter under this venv: no kdissect


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise TimeoutError(f"nothing listens on {port}")


def wait_for_workers(log: Path, count: int, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if log.read_text(errors="replace").count("Registering worker") >= count:
            return
        time.sleep(0.5)
    raise TimeoutError(f"{count} workers did not register:\n{log.read_text(errors='replace')[-2000:]}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[str]:
    """``spark://127.0.0.1:PORT`` of a master with two one-core workers."""
    require_tool("java")
    tmp = tmp_path_factory.mktemp("cluster")
    env = {**os.environ, "SPARK_HOME": str(SPARK_CLASS.parent.parent), "SPARK_LOG_DIR": str(tmp),
           "SPARK_WORKER_DIR": str(tmp / "work"), "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
           "PYTHONPATH": SITE_PACKAGES}  # fmt: skip
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    started: list[subprocess.Popen] = []
    master_log = tmp / "master.log"

    def start(args: list[str], log: Path) -> None:
        with log.open("w") as out:
            started.append(subprocess.Popen([str(SPARK_CLASS), *args], env=env, stdout=out, stderr=subprocess.STDOUT))

    try:
        start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
               "--webui-port", str(free_port())], master_log)  # fmt: skip
        wait_for_port(port)
        for i in range(2):
            start(["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "1",
                   "--memory", "1g", "--webui-port", str(free_port())], tmp / f"worker{i}.log")  # fmt: skip
        wait_for_workers(master_log, 2)
        yield url
    finally:
        for process in reversed(started):
            process.terminate()
        for process in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def kdissect(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kdissect.cli", *args], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYSPARK_PYTHON": sys.executable}, cwd=cwd)  # fmt: skip


def test_the_corpus_on_a_standalone_cluster_matches_the_local_engine(cluster: str, tmp_path: Path) -> None:
    on_cluster = kdissect("analyze", "--engine", "spark", "--master", cluster, *REAL_CAPTURES,
                          "--out", str(tmp_path / "spark"))  # fmt: skip
    assert on_cluster.returncode == 0, on_cluster.stderr[-3000:]
    assert not (tmp_path / "spark" / "_staging").exists()  # the pieces were staged there, then removed
    assert_same_as_local(on_cluster, tmp_path)


def test_executors_whose_python_lacks_kdissect_end_in_one_line_naming_the_fix(cluster: str, tmp_path: Path) -> None:
    lacking = subprocess.run([BARE_PYTHON, "-c", "import kdissect"], capture_output=True, cwd=tmp_path,
                             env={**os.environ, "PYTHONPATH": SITE_PACKAGES})  # fmt: skip
    assert lacking.returncode != 0  # what the executors run: the dependencies, not kdissect
    run = kdissect("analyze", "--engine", "spark", "--master", cluster, REAL_CAPTURES[0],
                   "--conf", f"spark.pyspark.python={BARE_PYTHON}")  # fmt: skip
    assert run.returncode == 2, run.stderr[-3000:]
    assert "Traceback" not in run.stderr and "at org.apache" not in run.stderr, run.stderr[-3000:]
    said = [line for line in run.stderr.splitlines() if line.startswith("kdissect:")]
    assert len(said) == 1 and "cannot import kdissect" in said[0] and "--archives" in said[0], run.stderr[-3000:]


def test_kdissect_shipped_in_a_packed_environment_runs_on_executors_that_lack_it(cluster: str, tmp_path: Path
                                                                                  ) -> None:  # fmt: skip
    """docs/spark.md's way, step by step: a wheel, a venv holding it (no pyspark: Spark brings its own
    to executors), ``venv-pack -p``, then ``--archives kd.tar.gz#kd`` and ``spark.pyspark.python``."""
    pip = [sys.executable, "-m", "pip"]
    subprocess.run([*pip, "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), str(ROOT)], check=True)
    subprocess.run([BARE_PYTHON, "-m", "venv", "--without-pip", str(tmp_path / "kd")], check=True)
    wheel = next((tmp_path / "dist").glob("kdissect-*.whl"))
    # --no-deps: the workers' Python has the dependencies here; a real cluster's pack installs them too.
    subprocess.run([*pip, "--python", str(tmp_path / "kd" / "bin" / "python"), "install", "-q", "--no-deps",
                    str(wheel)], check=True)  # fmt: skip
    venv_pack = Path(sys.executable).parent / "venv-pack"
    subprocess.run([str(venv_pack), "-q", "-p", str(tmp_path / "kd"), "-o", str(tmp_path / "kd.tar.gz")], check=True)
    on_cluster = kdissect("analyze", "--engine", "spark", "--master", cluster, *REAL_CAPTURES,
                          "--archives", "kd.tar.gz#kd", "--conf", "spark.pyspark.python=./kd/bin/python",
                          "--out", str(tmp_path / "spark"), cwd=tmp_path)  # fmt: skip
    assert on_cluster.returncode == 0, on_cluster.stderr[-3000:]
    assert_same_as_local(on_cluster, tmp_path)


def assert_same_as_local(on_cluster: subprocess.CompletedProcess, tmp_path: Path) -> None:
    """The cluster run's summary and every table written under ``tmp_path/spark`` are the local engine's."""
    local = kdissect("analyze", *REAL_CAPTURES, "--out", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    summary = [line for line in local.stdout.splitlines() if not line.startswith("wrote ")]
    assert [line for line in on_cluster.stdout.splitlines() if not line.startswith("wrote ")] == summary
    for name in TABLES:
        want = pq.read_table(tmp_path / "local" / f"{name}.parquet")
        got = read_parquet_dir(tmp_path / "spark" / name)
        assert got.schema.remove_metadata() == want.schema.remove_metadata(), name
        assert rows(got) == rows(want), name
