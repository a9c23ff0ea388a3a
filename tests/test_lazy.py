"""``lazy_module``: nothing is imported until an attribute is read, then it is the real module's."""

from __future__ import annotations

import subprocess
import sys

import pytest

CODE = """
import sys
from kdissect.lazy import lazy_module
mod = lazy_module("colorsys")
print("colorsys" in sys.modules)
function = mod.rgb_to_hsv
print("colorsys" in sys.modules, function is sys.modules["colorsys"].rgb_to_hsv)
print(mod.rgb_to_hsv is function, mod.__name__)
"""


def test_the_module_loads_on_first_attribute_read() -> None:
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True", "True", "True", "colorsys"]


def test_a_missing_attribute_or_module_raises() -> None:
    from kdissect.lazy import lazy_module

    with pytest.raises(AttributeError):
        lazy_module("json").no_such_name  # noqa: B018
    with pytest.raises(ModuleNotFoundError):
        lazy_module("kdissect_no_such_module").anything  # noqa: B018


HIDING = """
import sys
sys.path.insert(0, sys.argv[1])
from kdissect.lazy import import_without
import_without("uses_optional", "optional")
import uses_optional
print(uses_optional.HAS_OPTIONAL, "optional" in sys.modules)
import optional
print(optional.VALUE)
import_without("uses_optional", "optional")  # loaded already: nothing changes
"""


def test_a_module_imported_without_another_binds_none_and_the_other_stays_importable(tmp_path) -> None:
    (tmp_path / "optional.py").write_text("VALUE = 42\n")
    (tmp_path / "uses_optional.py").write_text(
        "try:\n    import optional\n    HAS_OPTIONAL = True\nexcept ImportError:\n    HAS_OPTIONAL = False\n"
    )
    done = subprocess.run([sys.executable, "-c", HIDING, str(tmp_path)], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False", "42"]


def test_importing_without_a_module_already_loaded_changes_nothing() -> None:
    from kdissect.lazy import import_without

    import_without("json", "sys")  # (both loaded: a no-op, no finder left behind)
    assert all(type(f).__name__ != "_Hidden" for f in sys.meta_path)
