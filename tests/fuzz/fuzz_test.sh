#!/usr/bin/env bash
# Runs both libFuzzer targets for a fixed number of inputs from the seed corpus (seconds each):
#   vm_fuzzer         resealed mutants through the verifier and the interpreter;
#   integrity_fuzzer  whole modules, a compiled one with a CPU shared object among the seeds:
#                     a mutant that changed checksummed bytes and still loads aborts it.
# Fails on any crash, sanitizer report, leak, timeout, out-of-memory or oracle violation.
set -euo pipefail
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
corpus="$tmp/corpus"
mkdir -p "$corpus"
tests/fuzz/make_seeds "$corpus"
cp tests/fuzz/cpu_seed.vmfb "$corpus/cpu_seed.vmfb"
runs="${HEXIR_FUZZ_RUNS:-50000}"

run_fuzzer() {  # NAME EXTRA_FLAGS...
  local name=$1 log="$tmp/$1.log" status=0
  shift
  # A private copy of the corpus: libFuzzer adds the inputs it finds interesting to it.
  rm -rf "$tmp/$name.corpus" && cp -r "$corpus" "$tmp/$name.corpus"
  "tests/fuzz/$name" -runs="$runs" -seed=1 -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 "$@" "$tmp/$name.corpus" >"$log" 2>&1 || status=$?
  if grep -q "HEXIR_SKIPPED" "$log"; then cat "$log"; return 2; fi
  tail -n 12 "$log"
  if [ "$status" -ne 0 ]; then echo "FAIL: $name exited with $status"; return 1; fi
  grep -q "Done $runs runs" "$log" || { echo "FAIL: $name: fewer than $runs runs"; return 1; }
  echo "PASS: $name: $runs inputs"
}

status=0
run_fuzzer vm_fuzzer || status=$?
if [ "$status" -eq 2 ]; then exit 0; fi  # no libFuzzer runtime: reported as skipped
[ "$status" -eq 0 ] || exit 1
# -use_cmp=0: told the checksums it compares, libFuzzer would forge valid modules (the trust
# model's excluded case), not make accidental corruption.
HEXIR_INTEGRITY_SEEDS="$corpus" run_fuzzer integrity_fuzzer -use_cmp=0 -use_value_profile=0 || exit 1
