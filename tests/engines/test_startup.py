"""Start-up: numpy's OpenBLAS must be held to one thread before numpy loads (its spinning threads were
about 0.1 CPU s of every run), so the setting must come before any import that loads numpy; and each job
loads only the heavy modules it uses (``kdissect.lazy``), each one a large part of a short run's cost."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

WATCH = """
import os, sys
seen = []
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" and not seen:
            seen.append(os.environ.get("OPENBLAS_NUM_THREADS"))
        return None
sys.meta_path.insert(0, Watch())
import {module}
import numpy
print(seen[0])
"""


def _setting_when_numpy_loads(module: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", WATCH.format(module=module)], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_openblas_is_held_to_one_thread_before_numpy_loads() -> None:
    for module in ("kdissect.cli", "kdissect.engines.local", "kdissect.engines.partition"):
        assert _setting_when_numpy_loads(module) == "1", module


def test_an_explicit_setting_is_kept() -> None:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "4"}
    done = subprocess.run(
        [sys.executable, "-c", "import kdissect.cli, os; print(os.environ['OPENBLAS_NUM_THREADS'])"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "4"


HEAVY = ("numpy", "pandas", "pyarrow", "cramjam", "lz4", "concurrent.futures")
# Modules of other jobs, loaded where used (each a part of every run's start-up when it was not):
# ``decode``'s engine, ``show``'s dump, pcapng's reader, the CSV writer, ``socket`` (IPv6 addresses).
OTHER_JOBS = ("kdissect.engines.frame", "kdissect.report.show", "kdissect.sources.pcapng", "csv", "socket")
JOB = """
import sys
from kdissect.cli import main
main({args!r})
print(sorted(m for m in {watched!r} if m in sys.modules), file=sys.stderr)
"""
CAPTURE = Path(__file__).resolve().parents[2] / "captures" / "librdkafka-produce-consume.pcap"


def _heavy_modules_loaded(*args: str, watched: tuple[str, ...] = HEAVY) -> list[str]:
    code = JOB.format(args=[str(a) for a in args], watched=watched)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return ast.literal_eval(done.stderr.strip().splitlines()[-1])


def test_the_summary_run_loads_no_heavy_module() -> None:
    """A run that only prints the summary needs neither numpy nor Arrow, the codecs nor a thread pool."""
    assert _heavy_modules_loaded("analyze", CAPTURE) == []


def test_an_exchanges_run_loads_arrow_but_no_codec_nor_numpy_nor_a_pool(tmp_path: Path) -> None:
    """Parquet needs Arrow; an uncompressed capture, no codec; a small table is converted without
    numpy, and pyarrow is loaded without it (it would load numpy whenever it can); the writer's
    background thread is a plain thread."""
    loaded = _heavy_modules_loaded("analyze", CAPTURE, "--out", tmp_path, "--tables", "exchanges")
    assert loaded == ["pyarrow"]


def test_a_summary_of_a_few_hundred_exchanges_loads_no_numpy(tmp_path: Path) -> None:
    """Naming a few hundred rows' source files (past the sink's one-by-one bound) stays in Python while
    nothing else has loaded numpy (``tables.numbers.through_numpy``): it used to load it for that alone."""
    from kdissect.testing import synthetic

    capture = synthetic.write(tmp_path / "many.pcap", synthetic.conversation(150, mss=1400))  # 300 exchanges
    assert _heavy_modules_loaded("analyze", capture) == []


def test_a_run_writing_text_tables_loads_no_arrow(tmp_path: Path) -> None:
    loaded = _heavy_modules_loaded("analyze", CAPTURE, "--out", tmp_path, "--tables", "exchanges", "--format", "csv")
    assert "pyarrow" not in loaded


def test_a_run_loads_no_module_of_another_job(tmp_path: Path) -> None:
    """The summary and an exchanges run load none of ``OTHER_JOBS`` (a Parquet run's pyarrow loads
    ``socket`` itself); ``decode`` loads its engine."""
    assert _heavy_modules_loaded("analyze", CAPTURE, watched=OTHER_JOBS) == []
    parquet = _heavy_modules_loaded("analyze", CAPTURE, "--out", tmp_path, "--tables", "exchanges", watched=OTHER_JOBS)
    assert parquet in ([], ["socket"])
    decoded = _heavy_modules_loaded("decode", "00000000", watched=OTHER_JOBS)
    assert decoded == ["kdissect.engines.frame"]
