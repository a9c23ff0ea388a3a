"""Does this checkout write the same tables as another commit? Byte for byte, for every capture.

Builds the reference commit in a temporary directory (``git archive`` + its C extension), runs
``kdissect analyze CAPTURE --out DIR`` with both on every capture in ``captures/``, and compares
each table file byte for byte. A Parquet file that differs is then compared by value: when the
reference's columns hold the same values and this checkout only added columns, the added ones
are listed and the table counts as unchanged. The summary printed by the reference must open
the summary printed here. Exit status 1 on any difference.

    python bench/compare_outputs.py                 # against e4f689b (before the layout refactor)
    python bench/compare_outputs.py --reference main --format csv
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build_reference(ref: str, into: Path) -> Path:
    tree = into / "reference"
    tree.mkdir()
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tree, check=True, capture_output=True
    )
    return tree


def analyze(tree: Path, capture: Path, out: Path, fmt: str) -> list[str]:
    """The summary lines (``wrote`` lines left out) of one run with the kdissect in ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-m", "kdissect.cli", "analyze", str(capture), "--out", str(out), "--format", fmt],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return [line for line in done.stdout.splitlines() if not line.startswith("wrote ")]


def same_values(reference: Path, ours: Path) -> tuple[bool, list[str]]:
    """Whether the reference's columns hold the same values here, and the columns added here."""
    import pyarrow.parquet as pq

    ref, new = pq.read_table(reference), pq.read_table(ours)
    added = [c for c in new.column_names if c not in ref.column_names]
    if any(c not in new.column_names for c in ref.column_names):
        return False, added
    return new.select(ref.column_names).equals(ref), added


def compare(capture: Path, tree: Path, tmp: Path, fmt: str) -> list[str]:
    """What differs for one capture (empty when nothing does); prints what was compared."""
    ref_out, new_out = tmp / f"{capture.name}.ref", tmp / f"{capture.name}.new"
    ref_summary, new_summary = analyze(tree, capture, ref_out, fmt), analyze(ROOT, capture, new_out, fmt)
    problems = [] if new_summary[: len(ref_summary)] == ref_summary else [f"{capture.name}: summary differs"]
    ref_files = sorted(p.name for p in ref_out.iterdir())
    if ref_files != sorted(p.name for p in new_out.iterdir()):
        problems.append(f"{capture.name}: tables {ref_files} vs {sorted(p.name for p in new_out.iterdir())}")
    for name in ref_files:
        a, b = ref_out / name, new_out / name
        if not b.exists() or a.read_bytes() == b.read_bytes():
            continue
        if fmt == "parquet":
            equal, added = same_values(a, b)
            if equal:
                print(f"  {capture.name} {name}: same values, {len(added)} columns added ({added[0]} ... {added[-1]})")
                continue
        problems.append(f"{capture.name}: {name} differs")
    return problems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reference", default="e4f689b", help="commit to compare with (default: e4f689b)")
    ap.add_argument("--format", choices=("parquet", "csv", "jsonl"), default="parquet")
    args = ap.parse_args()
    captures = sorted(p for p in (ROOT / "captures").iterdir() if p.name.endswith((".pcap", ".pcapng")))
    with tempfile.TemporaryDirectory() as tmp:
        tree = build_reference(args.reference, Path(tmp))
        problems = []
        for capture in captures:
            found = compare(capture, tree, Path(tmp), args.format)
            print(f"{capture.name}: {'DIFFERENT' if found else 'same'}")
            problems += found
    print("\n".join(problems) if problems else f"all {len(captures)} captures: same tables as {args.reference}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
