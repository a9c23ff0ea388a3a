"""Start-up: numpy's OpenBLAS must be held to one thread before numpy loads (its spinning threads were
about 0.1 CPU s of every run), so the setting must come before any import that loads numpy."""

from __future__ import annotations

import os
import subprocess
import sys

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
