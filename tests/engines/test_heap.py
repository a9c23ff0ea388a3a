"""The command line's heap setting (``engines/heap.py``): freed memory stays with the process (a run that
frees big blocks does not fault its pages in again), only the command line sets it, and without glibc or
the extension nothing changes."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from kdissect.engines import heap

GLIBC = sys.platform == "linux" and platform.libc_ver()[0] == "glibc"
needs_native = pytest.mark.skipif(heap._heap is None or not GLIBC, reason="needs engines/_heap.c and glibc")

# RSS (KiB) with 48 MiB of touched, freed blocks on the heap: below the mmap threshold, so they come from the
# heap's top, which glibc trims as soon as they are freed unless the pad keeps them.
FREED = """
import sys
from kdissect.engines.heap import keep_freed_heap
def rss():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))
set = keep_freed_heap() if sys.argv[1] == "pad" else False
before = rss()
blocks = [b"x" * 100_000 for _ in range(480)]
del blocks
print(set, rss() - before)
"""


def _freed_kept(how: str, env: dict[str, str] | None = None) -> tuple[bool, int]:
    done = subprocess.run([sys.executable, "-c", FREED, how], capture_output=True, text=True, check=True, env=env)
    was_set, kept = done.stdout.split()
    return was_set == "True", int(kept)


@needs_native
def test_the_pad_keeps_freed_memory_with_the_process() -> None:
    was_set, kept = _freed_kept("pad")
    assert was_set and kept > 40 << 10, kept  # KiB: the 48 MiB freed stay resident
    was_set, trimmed = _freed_kept("none")
    assert not was_set and trimmed < kept // 2, (trimmed, kept)  # without it most are given back


@needs_native
def test_a_pad_out_of_range_is_refused() -> None:
    for pad, mmap_from in ((-1, 0), (1 << 31, 0), (0, -1), (0, 1 << 31)):
        with pytest.raises(ValueError):
            heap.keep_freed_heap(pad, mmap_from)


def test_the_reference_path_changes_nothing() -> None:
    env = {**os.environ, "KDISSECT_PURE_PYTHON": "1"}
    assert _freed_kept("pad", env)[0] is False


def test_only_the_process_owners_set_it() -> None:
    """A library call must not change its caller's allocator: ``kdissect.cli.main`` and a Spark Python
    worker's setup (``spark_worker.worker_tuned``, the engine's own worker processes) are the callers."""
    import kdissect

    root = os.path.dirname(kdissect.__file__)
    callers = []
    for folder, _, files in os.walk(root):
        for name in files:
            if name.endswith(".py") and name != "heap.py":
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    if "keep_freed_heap" in f.read():
                        callers.append(os.path.relpath(os.path.join(folder, name), root))
    assert sorted(callers) == ["cli.py", os.path.join("engines", "spark_worker.py")]
