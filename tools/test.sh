#!/usr/bin/env bash
# Runs the whole test suite and ends with the line "N passed, N failed, N skipped".
# Counts are per test case: Catch2 test cases, lit tests, pytest cases, and one per other test target.
# A test case that prints "HEXIR_SKIPPED: <reason>" (e.g. a CUDA test on a machine without a
# GPU) counts as skipped, never as passed. Exit status: 0 only when nothing failed.
set -uo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh >/dev/null || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }
export HEXIR_SHARED_DIR="${HEXIR_SHARED_DIR:-$(cd .. && pwd)/shared}"

log=$(mktemp)
bazel test //... --keep_going "$@" 2>&1 | tee "$log"
bazel_rc=${PIPESTATUS[0]}
python3 tools/summarize_tests.py "$log" "$(bazel info bazel-testlogs 2>/dev/null)"
summary_rc=$?
rm -f "$log"
if [ "$bazel_rc" -ne 0 ] || [ "$summary_rc" -ne 0 ]; then exit 1; fi
exit 0
