"""Heavy modules loaded on first use, not at import: a summary run never touches numpy, a capture
without compressed batches never needs cramjam or lz4, a run that writes nothing needs no thread pool.
Loading them up front was a large part of every process's fixed cost (numpy alone ~0.1 CPU s).

``np = lazy_module("numpy")`` binds a stand-in; the first attribute read imports the real module and
copies its namespace into the stand-in, so later reads are plain attribute hits. Annotations such as
``np.ndarray`` cost nothing under ``from __future__ import annotations``.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule(ModuleType):
    """Stands in for a module until an attribute is read (see the module docstring)."""

    def __getattr__(self, name: str) -> Any:
        # Only reached for names not yet copied in: the first read of anything, or a dunder a tool probes.
        # Two threads may both get here first: the import system gives both the one module, and both
        # copy the same names (a read meanwhile falls back to the module itself), so no lock is needed.
        if not self.__dict__.get("_lazy_loaded"):
            self.__dict__.update(vars(importlib.import_module(self.__name__)))
            self.__dict__["_lazy_loaded"] = True
        try:
            return self.__dict__[name]
        except KeyError:
            return getattr(importlib.import_module(self.__name__), name)


def lazy_module(name: str) -> ModuleType:
    """``name`` (a dotted module name) as a stand-in that imports it on first attribute read."""
    return LazyModule(name)
