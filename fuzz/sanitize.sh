#!/usr/bin/env bash
# The native (C) parts under AddressSanitizer and UndefinedBehaviorSanitizer: build every extension
# with both, run the differential tests (native against the Python reference) and replay the fuzz
# corpus through them, count the sanitizers' reports, then rebuild the extensions normally.
#
#     bash fuzz/sanitize.sh            # from the repository root, in the project's environment
#     FUZZ_SECONDS=300 bash fuzz/sanitize.sh   # also fuzz the capture and pipeline targets (atheris)
#
# Exit status 0 means the tests passed and the sanitizers reported nothing. CPython itself is not
# instrumented, so libasan is preloaded and leak detection is off (the interpreter keeps objects
# alive at exit by design).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python}"
LOG="$(mktemp -d)/sanitize.log"
FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"

rebuild() { "$PYTHON" setup.py -q build_ext --inplace --force >/dev/null 2>&1; }
trap rebuild EXIT

CFLAGS="$FLAGS" LDFLAGS="$FLAGS" "$PYTHON" setup.py -q build_ext --inplace --force >"$LOG" 2>&1 \
    || { echo "sanitized build failed: $LOG"; exit 2; }

export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

"$PYTHON" -m pytest -q -p no:cacheprovider tests/sources/test_native_*.py \
    tests/engines/test_native_differential.py tests/engines/test_live_device_native.py tests/decoders \
    tests/test_fuzz_corpus.py >>"$LOG" 2>&1
status=$?
if [ "${FUZZ_SECONDS:-0}" -gt 0 ]; then
    for target in capture pipeline; do
        work="$(mktemp -d)"
        "$PYTHON" -m fuzz.run "$target" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=4096 \
            -artifact_prefix="$work/" "$work" "fuzz/corpus/$target" >>"$LOG" 2>&1 || status=1
    done
fi
unset LD_PRELOAD

findings=$(grep -cE "ERROR: AddressSanitizer|runtime error:" "$LOG")
tail -n 3 "$LOG"
echo "sanitizer findings: $findings (log: $LOG)"
[ "$status" -eq 0 ] && [ "$findings" -eq 0 ]
