#!/usr/bin/env bash
# A small ONNX model as one CUDA graph launch per call (issue #18 item 4): the keyword
# spotter hello_deepa (npm openwakeword-js, input 1x25x96, output 1x1) compiled with
# --target=cuda. Here (code generation): the module's @main records its kernels into one
# command buffer (one hal.command_buffer.create, K dispatches) and submits it once a call
# (one hal.device.queue.execute_bound). Where a GPU answers: hexir-bench reports per steady
# call 1 graph launch, 0 stream launches and K dispatches (the kernel count), and hexir-run's
# output equals the CPU module's within 1e-4 relative; elsewhere that part prints
# HEXIR_SKIPPED. HEXIR_PRECOMPILED_DIR / HEXIR_SAVE_MODULES_DIR: take / save the modules as
# onnx_hello_deepa.{cuda,cpu}.vmfb (the GPU machine has no compiler, npm or node).
set -euo pipefail
IMPORT=tools/hexir-import/hexir-import
COMPILE=tools/hexir-compile/hexir-compile
DUMP=tools/hexir-dump/hexir-dump
RUN=tools/hexir-run/hexir-run
BENCH=tools/hexir-bench/hexir-bench
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# module TARGET: the module's path (precompiled, or imported and compiled here; saved when asked).
module() {
  local name=onnx_hello_deepa.$1.vmfb
  if [ -n "${HEXIR_PRECOMPILED_DIR:-}" ] && [ -f "$HEXIR_PRECOMPILED_DIR/$name" ]; then
    echo "$HEXIR_PRECOMPILED_DIR/$name"
    return 0
  fi
  "$COMPILE" "$TMP/hello_deepa.mlir" --target="$1" ${HEXIR_COMPILE_FLAGS:-} -o "$TMP/$name" >&2 || return 1
  [ -z "${HEXIR_SAVE_MODULES_DIR:-}" ] || cp "$TMP/$name" "$HEXIR_SAVE_MODULES_DIR/"
  echo "$TMP/$name"
}

if [ -z "${HEXIR_PRECOMPILED_DIR:-}" ]; then
  SRC=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
  if ! CACHE=$(bash "$SRC/tools/fetch_test_models.sh" 2>"$TMP/fetch.err"); then
    echo "HEXIR_SKIPPED: cannot fetch hello_deepa with npm: $(tail -1 "$TMP/fetch.err")"
    exit 0
  fi
  "$IMPORT" "$CACHE/openwakeword-js/package/models/hello_deepa.onnx" -o "$TMP/hello_deepa.mlir"
fi
cuda=$(module cuda) || { echo "FAIL hexir-compile --target=cuda"; exit 1; }
cpu=$(module cpu) || { echo "FAIL hexir-compile --target=cpu"; exit 1; }

# The imports @main calls, one line each (hexir-dump's listing of function #0, "main").
"$DUMP" "$cuda" | awk '/^  #[0-9]+ "main"/ { on = 1; next } /^  #[0-9]+ "/ { on = 0 } on' |
  grep -o "call.import '[a-z_.]*'" >"$TMP/main_imports.txt" || true
count() { grep -c "'$1'" "$TMP/main_imports.txt" || true; }
kernels=$(count hal.command_buffer.dispatch_slots)
[ "$(count hal.command_buffer.create)" -eq 1 ] && [ "$(count hal.device.queue.execute_bound)" -eq 1 ] &&
  [ "$kernels" -ge 2 ] &&
  pass "cuda module: @main records $kernels kernels into one command buffer, submitted once a call" ||
  fail "cuda module: @main: $(count hal.command_buffer.create) command buffers, $(count hal.device.queue.execute_bound) submissions, $kernels dispatches (expected 1, 1, >= 2)"

if ! "$RUN" --module="$cuda" --device=cuda --function=main --input=1x25x96xf32=0.5 \
    >"$TMP/cuda_out.txt" 2>"$TMP/probe.txt"; then
  grep -q "libcuda.so.1 could not be loaded\|no CUDA device" "$TMP/probe.txt" ||
    fail "hexir-run --device=cuda: $(cat "$TMP/probe.txt")"
  [ "$failures" -eq 0 ] && echo "HEXIR_SKIPPED: hello_deepa [cuda]: no GPU ($(head -1 "$TMP/probe.txt"))"
else
  "$RUN" --module="$cpu" --device=cpu --function=main --input=1x25x96xf32=0.5 >"$TMP/cpu_out.txt"
  # Both print 1x1xf32=<value>.
  if awk -F= 'NR == FNR { c = $2; next } { d = $2 - c; if (d < 0) d = -d; m = c < 0 ? -c : c;
              exit !(d <= 1e-4 * m + 1e-7) }' "$TMP/cpu_out.txt" "$TMP/cuda_out.txt"; then
    pass "cuda output $(cat "$TMP/cuda_out.txt") equals the cpu's $(cat "$TMP/cpu_out.txt")"
  else
    fail "cuda output $(cat "$TMP/cuda_out.txt"), cpu $(cat "$TMP/cpu_out.txt")"
  fi
  "$BENCH" --module="$cuda" --device=cuda --function=main --input=1x25x96xf32=0.5 --iterations=20 \
    --no-baselines >"$TMP/bench.txt" 2>&1 || fail "hexir-bench --device=cuda: $(tail -1 "$TMP/bench.txt")"
  steady=$(grep "per steady call" "$TMP/bench.txt" || true)
  launches=$(sed -n 's/.*graph launches \([0-9.]*\).*/\1/p' <<<"$steady")
  streams=$(sed -n 's/.*stream launches \([0-9.]*\).*/\1/p' <<<"$steady")
  per_call=$(sed -n 's/.*dispatches per call: \([0-9]*\).*/\1/p' "$TMP/bench.txt" | head -1)
  [ "$launches" = 1.0 ] && [ "$streams" = 0.0 ] && [ "$per_call" = "$kernels" ] &&
    pass "cuda: 1 graph launch per call, $per_call kernels (hexir-bench: $steady)" ||
    fail "cuda: graph launches '$launches', stream launches '$streams', kernels '$per_call' per call (expected 1.0, 0.0, $kernels): $steady"
  grep "wall (invoke" "$TMP/bench.txt" || true
fi
[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
