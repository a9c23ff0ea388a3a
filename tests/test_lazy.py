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
