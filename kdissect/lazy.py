"""Heavy modules loaded on first use, not at import: a summary run never touches numpy, a capture
without compressed batches never needs cramjam or lz4, a run that writes nothing needs no thread pool.
Loading them up front was a large part of every process's fixed cost (numpy alone ~0.1 CPU s).

``np = lazy_module("numpy")`` binds a stand-in; the first attribute read imports the real module and
copies its namespace into the stand-in, so later reads are plain attribute hits. Annotations such as
``np.ndarray`` cost nothing under ``from __future__ import annotations``.
"""

from __future__ import annotations

import importlib
import sys
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


class _Hidden:
    """A meta path finder that finds ``name`` (and its submodules) nowhere: importing it raises
    ImportError. (Not an ``importlib.abc.MetaPathFinder``: that module loads ``importlib.resources``,
    ``tempfile`` and ``shutil``, ~6 ms.)"""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(self, fullname: str, path: object, target: object = None) -> None:
        if fullname.partition(".")[0] == self.name:
            raise ModuleNotFoundError(f"{self.name} hidden while another module loads", name=fullname)


def import_without(name: str, hidden: str) -> None:
    """Import ``name`` while ``hidden`` cannot be found, unless either is loaded already (then nothing
    changes). For a module that binds an optional one at import: pyarrow loads numpy whenever it can,
    about 0.08 CPU s, whether or not anything is converted through it. ``hidden`` stays importable
    by anyone else afterwards; only ``name``'s own bridge to it is off for the process."""
    if name in sys.modules or hidden in sys.modules:
        return
    finder = _Hidden(hidden)
    sys.meta_path.insert(0, finder)
    try:
        importlib.import_module(name)
    except ImportError:  # ``name`` itself missing (or needing ``hidden``): left to its first real use
        pass
    finally:
        sys.meta_path.remove(finder)
