#!/usr/bin/env bash
# The native (C) parts under AddressSanitizer and UndefinedBehaviorSanitizer: build every extension
# with both, run the differential tests (native against the Python reference) and replay the fuzz
# corpus through them, count the sanitizers' reports, then rebuild the extensions normally.
#
#     bash fuzz/sanitize.sh            # from the repository root, in the project's environment
#     FUZZ_SECONDS=300 bash fuzz/sanitize.sh   # first fuzz the capture and pipeline targets (atheris)
#
# With FUZZ_SECONDS, each target is first fuzzed (atheris, coverage-guided) for that long on the
# normal build, starting from its committed corpus; every input it kept is then replayed through the
# sanitized build with the rest. Why two phases: atheris' coverage needs its own (clang) sanitizer
# runtime, which cannot load beside gcc's, and with gcc's preloaded it gets no coverage and fuzzes
# blind. Exit status 0 means the tests and replays passed and the sanitizers reported nothing.
# CPython itself is not instrumented, so libasan is preloaded and leak detection is off (the
# interpreter keeps objects alive at exit by design). The memory-bound tests are left out: shadow
# memory and quarantine make their RSS figures meaningless here.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python}"
WORK="$(mktemp -d)"
LOG="$WORK/sanitize.log"
FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
TARGETS=(capture pipeline)
status=0

# pyproject.toml's license is an SPDX string, which setuptools before 77 (a fresh venv's) rejects: upgrade it
"$PYTHON" -c 'import setuptools, sys; sys.exit(int(setuptools.__version__.split(".")[0]) < 77)' 2>/dev/null \
    || "$PYTHON" -m pip install -q 'setuptools>=77' >/dev/null \
    || { echo "building needs setuptools>=77 in $PYTHON's environment"; exit 2; }

rebuild() { "$PYTHON" setup.py -q build_ext --inplace --force >/dev/null 2>&1; }
trap rebuild EXIT

if [ "${FUZZ_SECONDS:-0}" -gt 0 ]; then
    rebuild
    for target in "${TARGETS[@]}"; do
        mkdir -p "$WORK/$target"
        "$PYTHON" -m fuzz.run "$target" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=4096 \
            -artifact_prefix="$WORK/$target-" "$WORK/$target" "fuzz/corpus/$target" >"$WORK/fuzz-$target.log" 2>&1 \
            || status=1
        echo "fuzzed $target: $(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$WORK/fuzz-$target.log"), " \
             "$(ls "$WORK/$target" | wc -l) new inputs kept" | tee -a "$LOG"
    done
fi

CFLAGS="$FLAGS" LDFLAGS="$FLAGS" "$PYTHON" setup.py -q build_ext --inplace --force >>"$LOG" 2>&1 \
    || { echo "sanitized build failed: $LOG"; exit 2; }

export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

# -s: a report goes straight to the log. Captured, it went to the temporary file pytest holds a test's stderr
# in, which a process that aborts on its first report never hands back (the run failed with 0 findings).
"$PYTHON" -m pytest -s -q -p no:cacheprovider tests/sources/test_native_*.py tests/reassembly/test_native_lanes.py tests/tables/test_detail_walk.py tests/tables/test_walk_bytes.py \
    tests/tables/test_record_rows_native.py tests/tables/test_codes_native.py tests/tables/test_spans_native.py \
    tests/tables/test_typed_columns.py tests/tables/test_list_parts.py \
    tests/engines/test_native_differential.py tests/engines/test_live_device_native.py tests/engines/test_spark_packed.py \
    tests/decoders \
    tests/test_fuzz_corpus.py --ignore-glob='*test_bounds_*' >>"$LOG" 2>&1 || status=1
if [ "${FUZZ_SECONDS:-0}" -gt 0 ]; then
    for target in "${TARGETS[@]}"; do  # -runs=0: each kept input once, through the sanitized build
        "$PYTHON" -m fuzz.run "$target" -runs=0 -timeout=10 -rss_limit_mb=4096 "$WORK/$target" \
            >>"$LOG" 2>&1 || status=1
    done
fi
unset LD_PRELOAD

findings=$(cat "$LOG" "$WORK"/fuzz-*.log 2>/dev/null | grep -cE "ERROR: AddressSanitizer|runtime error:")
tail -n 3 "$LOG"
grep -m 1 -A 12 -E "ERROR: AddressSanitizer|runtime error:" "$LOG"
echo "sanitizer findings: $findings (log: $LOG)"
[ "$status" -eq 0 ] && [ "$findings" -eq 0 ]
