"""The shape of the package: stages import only from the stages before them, no module imports
itself back through others, and ``import kdissect`` stays light.

``ALLOWED`` is the one place the allowed imports between stages are written down. A stage is a
sub-package of ``kdissect`` or one of its top-level modules; imports inside a stage are free
(cycles aside).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "kdissect"

# stage -> the stages it may import from (data flows sources -> reassembly -> kafka -> tables ->
# analysis -> report; decoders serve every stage; engines wire; cli and capture are the faces;
# native is the one switch between the stages' native parts and their Python references).
ALLOWED: dict[str, set[str]] = {
    "native": set(),
    "decoders": {"native"},
    "options": {"decoders", "sources", "tls"},  # sources: the defrag/gunzip bounds' defaults; tls: the KeyLog type
    "sources": {"native"},
    "reassembly": {"sources", "native"},
    "events": {"reassembly"},
    "tls": {"events", "reassembly"},  # between reassembly and kafka: byte runs in, decrypted runs out
    "kafka": {"decoders", "options", "events", "reassembly", "sources", "tls"},  # the pipeline wraps TLS connections
    "tables": {"decoders", "options", "events", "reassembly", "native"},
    "analysis": {"decoders", "tables", "sources", "tls"},  # tls: which decryption outcomes count as decrypted
    "report": {"analysis", "decoders", "events"},
    # native: the live engine's device read has a native part (engines/_capture.c)
    "engines": {"decoders", "options", "events", "sources", "kafka", "tables", "analysis", "tls", "native"},
    "capture": {"engines", "options", "events", "tables"},
    "cli": {"__init__", "engines", "report", "options", "output_paths"},  # and of engines only CLI_ENGINES
    "output_paths": set(),
    "__init__": {"decoders", "capture", "options"},
    "spark": {"engines"},  # kdissect.spark: read_captures for people with their own SparkSession
    "testing": {"decoders", "options", "events", "sources", "reassembly"},
    "dataclass": set(),
    "lazy": set(),
}
# Helpers of the language, below every stage: any stage may import them.
FOUNDATION = {"dataclass", "lazy"}

# The engines' entry points, all the command line may import of them: it turns arguments into one
# request (request, live, frame; a key log file for --tls-keylog), calls one engine and prints one result
# (run); the engines' wiring and the stages' internals stay behind them. The process's heap setting (heap) too:
# only the process's owner may change it.
CLI_ENGINES = {f"kdissect.engines{m}" for m in ("", ".request", ".run", ".live", ".frame", ".keylog_file", ".heap")}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    """Every module, the C extension's source standing for the extension."""
    return {_module_name(p): p for pattern in ("*.py", "*.c") for p in PACKAGE.rglob(pattern)}


def _resolve(name: str) -> str | None:
    """The kdissect module an imported name lives in (a package's names live in its __init__)."""
    while name and name not in modules():
        name = name.rpartition(".")[0]
    return name or None


@cache
def imports(module: str) -> frozenset[str]:
    """Every kdissect module ``module`` imports, at the top or inside functions."""
    path = modules()[module]
    if path.suffix != ".py":
        return frozenset()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            names = [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            target = _resolve(name) if name.startswith("kdissect") else None
            if target is not None and target != module:
                found.add(target)
    return frozenset(found)


def stage(module: str) -> str:
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def test_every_stage_is_listed() -> None:
    assert {stage(m) for m in modules()} == set(ALLOWED)


def test_no_stage_imports_a_later_one() -> None:
    wrong = sorted(
        f"{m} -> {t}"
        for m in modules()
        for t in imports(m)
        if stage(t) != stage(m) and stage(t) not in ALLOWED[stage(m)] | FOUNDATION
    )
    assert wrong == []


def test_the_cli_imports_only_the_engines_entry_points() -> None:
    assert sorted(t for t in imports("kdissect.cli") if stage(t) == "engines" and t not in CLI_ENGINES) == []


def test_the_runtime_never_imports_testing() -> None:
    assert not [m for m in modules() if stage(m) != "testing" and any(stage(t) == "testing" for t in imports(m))]


def test_no_import_cycles() -> None:
    graph = {m: imports(m) for m in modules()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[list[str]] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycles.append([*path[path.index(t) :], t])
            elif t not in state:
                visit(t, [*path, t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == []


def test_the_checker_sees_a_back_edge() -> None:
    """The graph is read for real: the kafka stage does import the decoders, and the engine the sink."""
    assert "kdissect.decoders.api" in imports("kdissect.kafka.validators")
    assert "kdissect.tables.sink" in imports("kdissect.engines.local")
    assert "kdissect.decoders.entities" in imports("kdissect.tables.sink")  # a relative import


def _imports_a_package(module: str, package: str) -> bool:
    tree = ast.parse(modules()[module].read_text(encoding="utf-8"))
    return any(
        (isinstance(node, ast.Import) and any(a.name.split(".")[0] == package for a in node.names))
        or (isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == package)
        for node in ast.walk(tree)
    )


def test_only_the_spark_engine_imports_pyspark() -> None:
    """The driver's module, its session's start, what its Python workers run (of pyspark, only the
    task's context) and their daemon."""
    assert sorted(m for m in modules() if modules()[m].suffix == ".py" and _imports_a_package(m, "pyspark")) == [
        "kdissect.engines.spark", "kdissect.engines.spark_daemon", "kdissect.engines.spark_session",
        "kdissect.engines.spark_worker",
    ]


def test_import_kdissect_loads_no_numpy_pandas_or_pyarrow() -> None:
    code = "import kdissect, sys; print(sorted(m for m in ('numpy', 'pandas', 'pyarrow') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    code = "import kdissect; kdissect.decode_request; kdissect.Options; import sys; print('pandas' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == (
        "False"
    )
