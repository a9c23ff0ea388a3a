"""Run one fuzz target under atheris (libFuzzer): ``python -m fuzz.run TARGET [libFuzzer flags] [CORPUS...]``.

kdissect is imported under atheris' instrumentation so coverage guides the mutations; the
schema-compiled decoders are generated at run time and so are not instrumented themselves,
but the code around them (records, framing, connection logic, sources) is.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["kdissect", "fuzz"]):
    from fuzz.targets import TARGETS


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(f"usage: python -m fuzz.run {{{','.join(TARGETS)}}} [libFuzzer flags] [corpus dirs]")
    target = TARGETS[sys.argv[1]]
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
