"""Shared fixtures: decoder tests run once with the C interpreter and once with the Python decoders."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from kdissect.decoders import compiler

PURE_PYTHON_FORCED = os.environ.get("KDISSECT_PURE_PYTHON", "") not in ("", "0")


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
