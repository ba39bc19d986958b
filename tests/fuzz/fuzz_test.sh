#!/usr/bin/env bash
# Runs the libFuzzer target for a fixed number of inputs from the seed corpus. Fails on any
# crash, sanitizer report, leak, timeout or out-of-memory.
set -euo pipefail
corpus="${TEST_TMPDIR:-$(mktemp -d)}/corpus"
mkdir -p "$corpus"
tests/fuzz/make_seeds "$corpus"
runs="${HEXIR_FUZZ_RUNS:-50000}"
log="${TEST_TMPDIR:-/tmp}/fuzz.log"
status=0
tests/fuzz/vm_fuzzer -runs="$runs" -seed=1 -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 "$corpus" >"$log" 2>&1 || status=$?
if grep -q "HEXIR_SKIPPED" "$log"; then cat "$log"; exit 0; fi
tail -n 25 "$log"
if [ "$status" -ne 0 ]; then
  echo "FAIL: vm_fuzzer exited with $status"
  exit 1
fi
grep -q "Done $runs runs" "$log" || { echo "FAIL: fewer than $runs runs"; exit 1; }
echo "PASS: $runs fuzz inputs"
