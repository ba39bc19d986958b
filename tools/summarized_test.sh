#!/usr/bin/env bash
# `bazel test ARGS...` with its output shown, then counted by tools/summarize_tests.py: ends
# with the line "N passed, N failed, N skipped" (tools/test.sh, tools/sanitize.sh). A leading
# --config=NAME is given to `bazel info` too, so the counts read that configuration's test
# logs. Exit status 0 only when bazel passed and nothing failed.
#   bash tools/summarized_test.sh [--config=NAME] ARGS...
set -uo pipefail
cd "$(dirname "$0")/.."

info=()
if [[ "${1:-}" == --config=* ]]; then info=("$1"); fi
log=$(mktemp)
bazel test "$@" 2>&1 | tee "$log"
bazel_rc=${PIPESTATUS[0]}
python3 tools/summarize_tests.py "$log" "$(bazel info "${info[@]}" bazel-testlogs 2>/dev/null)"
summary_rc=$?
rm -f "$log"
if [ "$bazel_rc" -ne 0 ] || [ "$summary_rc" -ne 0 ]; then exit 1; fi
exit 0
