"""Shared fixtures: decoder tests run once with the C interpreter and once with the Python decoders."""

from __future__ import annotations

import gc
import os
import sys
import tracemalloc
from collections.abc import Callable, Iterator, Sequence

import pytest

from kdissect.decoders import compiler

PURE_PYTHON_FORCED = os.environ.get("KDISSECT_PURE_PYTHON", "") not in ("", "0")


def assert_no_leaks(run: Callable[[int], None], watched: Sequence[object]) -> None:
    """``run(times)`` (native code called ``times`` over) keeps no memory and no references to
    ``watched``: warmed up first, then 40 passes must leave under 16 KiB behind."""
    run(20)
    gc.collect()
    refs = [sys.getrefcount(o) for o in watched]
    tracemalloc.start()
    try:
        run(3)
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        run(40)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 16 * 1024, f"{grown} bytes kept after 40 passes"
    assert [sys.getrefcount(o) for o in watched] == refs


@pytest.fixture(scope="module", params=["native", "python"])
def decoder_mode(request: pytest.FixtureRequest) -> Iterator[str]:
    """Select the decoders for a whole module (module scope keeps hypothesis' fixture check happy).

    The native run is skipped only when pure Python was forced with ``KDISSECT_PURE_PYTHON``;
    a missing extension otherwise fails ``test_native_decoder.py::test_the_extension_is_built``.
    """
    native = request.param == "native"
    if native and not compiler.native_loaded():
        pytest.skip("native decoder not loaded (KDISSECT_PURE_PYTHON set or extension not built)")
    before = compiler.native_enabled()
    compiler.use_native(native)
    yield request.param
    compiler.use_native(before)

