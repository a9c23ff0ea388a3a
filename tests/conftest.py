"""Shared fixtures: decoder tests run once with the C interpreter and once with the Python decoders."""

from __future__ import annotations

import ctypes.util
import gc
import os
import shutil
import sys
import sysconfig
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pytest

from kdissect.decoders import compiler

PURE_PYTHON_FORCED = os.environ.get("KDISSECT_PURE_PYTHON", "") not in ("", "0")
STRICT = os.environ.get("CI", "").lower() == "true"


@dataclass(frozen=True)
class SystemTool:
    """Something outside Python a test needs, and the Debian package ``scripts/test`` installs for it."""

    package: str
    present: Callable[[], bool]


# Every system tool a test asks for: tests/faces/test_system_tools.py checks that scripts/test installs
# each package, so the README's test command passes on a fresh Debian/Ubuntu machine.
SYSTEM_TOOLS = {
    "tshark": SystemTool("tshark", lambda: shutil.which("tshark") is not None),
    # editcap --inject-secrets (pcapng Decryption Secrets Blocks): wireshark-common, which tshark brings
    "editcap": SystemTool("tshark", lambda: shutil.which("editcap") is not None),
    "chromium": SystemTool("chromium", lambda: bool(shutil.which("chromium") or shutil.which("chromium-browser"))),
    "java": SystemTool("default-jre-headless", lambda: shutil.which("java") is not None),
    # libpcap: how `kdissect live` opens a device (through scapy); tcpdump's package brings it.
    "libpcap": SystemTool("tcpdump", lambda: ctypes.util.find_library("pcap") is not None),
    "cc": SystemTool("gcc", lambda: shutil.which("cc") is not None),
    "Python.h": SystemTool(
        "python3-dev", lambda: os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))
    ),
}


def require_tool(name: str) -> None:
    """Stop a test that needs ``name``: it fails under ``CI=true`` (CI must run everything) and is skipped
    with a one-line reason elsewhere (a developer's machine without root may lack the package)."""
    tool = SYSTEM_TOOLS[name]
    if not tool.present():
        _cannot_run(f"{name} is not installed (Debian package {tool.package}; ./scripts/test installs it as root)")


def require_root() -> None:
    """Stop a test that captures on a device or drops privileges, as ``require_tool`` does."""
    if os.geteuid() != 0:
        _cannot_run("needs root (capturing on a device, dropping privileges)")


def _cannot_run(why: str) -> None:
    if STRICT:
        pytest.fail(why)
    pytest.skip(why)


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

