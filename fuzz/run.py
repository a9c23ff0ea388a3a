#!/usr/bin/env python3
"""Run one fuzz target under atheris (libFuzzer): ``python -m fuzz.run TARGET [libFuzzer flags] [CORPUS...]``.

kdissect is imported under atheris' instrumentation so coverage guides the mutations; the
schema-compiled decoders are generated at run time and so are not instrumented themselves,
but the code around them (records, framing, connection logic, sources) is.

libFuzzer re-runs this file as a program for ``-merge``, ``-fork`` and ``-jobs`` (hence the
shebang, the executable bit and the target name passed on in the environment): run those
with the virtualenv active so ``python3`` is the one with atheris.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # when run as a program

with atheris.instrument_imports(include=["kdissect", "fuzz"]):
    from fuzz.targets import TARGETS

_ENV = "KDISSECT_FUZZ_TARGET"


def main() -> None:
    args = sys.argv[1:]
    if args and args[0] in TARGETS:
        os.environ[_ENV] = args.pop(0)
    name = os.environ.get(_ENV)
    if name not in TARGETS:
        sys.exit(f"usage: python -m fuzz.run {{{','.join(TARGETS)}}} [libFuzzer flags] [corpus dirs]")
    atheris.Setup([str(Path(__file__).resolve()), *args], TARGETS[name])
    atheris.Fuzz()


if __name__ == "__main__":
    main()
