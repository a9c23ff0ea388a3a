"""The exhaustive shape sweep (issue #20): every capture of the corpus, every shape family, every
command and every figure invariant. The test suite (tests/shapes) runs one capture per family; this
runs them all and prints each failure with its capture and shape (exit 1 if any).

    python bench/shapes_sweep.py                         # all of captures/
    python bench/shapes_sweep.py captures/kcat-*.pcap    # some
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the harness's runners live with the tests (tests/shapes)

from kdissect.testing import shapes  # noqa: E402
from tests.shapes.shape_runs import command_failures, figure_failures, write_shape  # noqa: E402

CAPTURES = ROOT / "captures"


def main() -> int:
    names = [Path(a) for a in sys.argv[1:]] or sorted(CAPTURES.glob("*.pcap*"))
    failures = shapes_run = 0
    for capture in names:
        segs = shapes.segments_of(capture.read_bytes())
        for family in shapes.FAMILIES.values():
            for shape in family(segs):
                shapes_run += 1
                with tempfile.TemporaryDirectory() as tmp:
                    files = write_shape(shape, Path(tmp) / "in")
                    for failure in command_failures(files, Path(tmp)) + figure_failures(files):
                        failures += 1
                        print(f"{capture.name}, {shape.name}: {failure}")
    print(f"{shapes_run} shapes of {len(names)} captures, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
