"""The one switch between the native (C) path and the Python reference path.

Each stage with a native part (``decoders/_native.c``, ``sources/_native.c``) keeps its Python
code as the reference: the native part must give the same results, which the differential tests
check by running both. ``KDISSECT_PURE_PYTHON=1`` forces the reference everywhere (tests,
benchmarks, a machine where a native result is in doubt); without a C compiler at install time
the extensions are simply missing and the same happens.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

PURE_PYTHON_ENV = "KDISSECT_PURE_PYTHON"


def pure_python() -> bool:
    """Whether the Python reference path is forced."""
    return os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0")


def native_module(name: str) -> ModuleType | None:
    """The C extension ``kdissect.<name>``, or None when it is not built or pure Python is forced."""
    if pure_python():
        return None
    try:
        return importlib.import_module(f"kdissect.{name}")
    except ImportError:
        return None
