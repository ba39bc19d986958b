#!/usr/bin/env bash
# Runs the whole test suite and ends with the line "N passed, N failed, N skipped".
# Counts are per test case: Catch2 test cases, lit tests, pytest cases, and one per other test target.
# A test case that prints "HEXIR_SKIPPED: <reason>" (e.g. a CUDA test on a machine without a
# GPU) counts as skipped, never as passed. Exit status: 0 only when nothing failed.
set -uo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh >/dev/null || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }
export HEXIR_SHARED_DIR="${HEXIR_SHARED_DIR:-$(cd .. && pwd)/shared}"

exec bash tools/summarized_test.sh //... --keep_going "$@"
