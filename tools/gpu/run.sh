#!/usr/bin/env bash
# Runs on the GPU machine over the bundle tools/gpu/pack.sh made: every GPU test, then the
# benchmarks. Writes logs into $OUT (when set) and prints a summary line per test binary.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/hexir-gpu-out}
# --part=tests: the test binaries and the HAL benchmarks; --part=bench: the bench suite and the
# LLM benchmarks (two device calls that each fit a call's time limit); default both.
PART=all
case "${1:-}" in --part=tests) PART=tests ;; --part=bench) PART=bench ;; "") ;; *) echo "usage: run.sh [--part=tests|bench]"; exit 2 ;; esac
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
export HEXIR_PRECOMPILED_DIR="$PWD/.out/gpu/modules"
export HEXIR_SHARED_DIR="$PWD/.out/gpu/shared"
export HEXIR_LLM_DEVICE=cuda
export LD_LIBRARY_PATH="$PWD/.out/gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"  # the ONNX importer's (pack.sh)
# The LLM tests' PyTorch reference: Debian's python there has no torch, the one on PATH does.
python3 -c "import torch" 2>/dev/null && export HEXIR_TORCH_PYTHON=$(command -v python3)
status=0
if [ "$PART" != bench ]; then
for dir in .out/gpu/tests/*/; do
  name=$(basename "$dir")
  [ "$name" != waves_benchmark_runfiles ] || continue
  bin=$(find "$dir" -type f -name "${name#*.}" | head -1)  # "llm.name": pack.sh's second test of a name
  rel=${bin#$dir}
  (cd "$dir" && TEST_TMPDIR=$(mktemp -d) "./$rel") > "$OUT/$name.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  echo "$name: exit $rc: $(grep -E 'All tests passed|test cases:' "$OUT/$name.log" | tail -1)," \
       "$(grep -c HEXIR_SKIPPED "$OUT/$name.log") skipped"
done
# The benchmark finds its test kernels under the working directory, as in cuda_device_test's runfiles.
(cd .out/gpu/tests/cuda_device_test && ../../bin/replay_benchmark) > "$OUT/replay_benchmark.log" 2>&1 || status=1
cat "$OUT/replay_benchmark.log"
# Device loops (RepeatWhile as a WHILE node) vs the chunked host loop (hal/drivers/cuda/README.md).
(cd .out/gpu/tests/cuda_device_test && ../../bin/device_loop_benchmark) > "$OUT/device_loop_benchmark.log" 2>&1 || status=1
cat "$OUT/device_loop_benchmark.log"
# Queue transfers (pageable staging by size, pinned, CPU <-> CUDA, CUDA <-> CUDA) vs raw copies.
.out/gpu/bin/transfer_benchmark > "$OUT/transfer_benchmark.log" 2>&1 || status=1
cat "$OUT/transfer_benchmark.log"
# HAL-level concurrency waves: 8 chains x 8 dispatches, waves/serial per replay (bench/hal_waves).
(cd .out/gpu/tests/waves_benchmark_runfiles && ./bench/hal_waves/waves_benchmark) > "$OUT/waves_benchmark.log" 2>&1 || status=1
cat "$OUT/waves_benchmark.log"
# ---- small ONNX models: Hexir on CUDA and the host vs onnxruntime (bench/small_onnx) ----
if [ -d .out/gpu/small_onnx ]; then
  HEXIR_BIN=.out/gpu/bin bash bench/small_onnx/run.sh --from=.out/gpu/small_onnx > "$OUT/small_onnx.log" 2>&1 || status=1
  cat "$OUT/small_onnx.log"
else
  echo "small onnx benchmark: skipped (pack.sh could not fetch the models)"
fi
# ---- waves vs serial, compiled (bench/schedule_waves: 8 independent chains of small dispatches) ----
HEXIR_BIN=.out/gpu/bin bash bench/schedule_waves/run.sh --device=cuda --run-only \
  --out=.out/gpu/schedule_waves 2>&1 | tee "$OUT/schedule_waves.log" || status=1
fi
[ "$PART" != tests ] || exit $status

# ---- bench/ suite (hexir-bench per case: per-dispatch times, roofline, cuBLAS ratios) ----
HEXIR_BIN=.out/gpu/bin timeout 300 bash bench/run.sh --device=cuda --run-only --iterations=5 \
  --out=.out/gpu/bench > "$OUT/bench_suite.log" 2>&1 || status=1
cp .out/gpu/bench/SUMMARY.txt "$OUT/bench_summary.txt" 2>/dev/null
cat .out/gpu/bench/SUMMARY.txt 2>/dev/null || tail -20 "$OUT/bench_suite.log"

# ---- host loop s += (i*7)%13 (3e7) vs Lua 5.4 and hand-written bytecode, on the host CPU (bench/vm_loop) ----
lua=$(command -v lua5.4 || echo .out/gpu/bin/lua5.4)
HEXIR_BIN=.out/gpu/bin MODULES=.out/gpu/vm_loop LUA=$lua bash bench/vm_loop/run.sh 2>&1 | tee "$OUT/vm_loop.log" || status=1

# ---- LLM decode benchmark (tests/llm/gpu_decode_bench.sh; modules from pack.sh) ----
# Hexir vs PyTorch eager / CUDA-graph ms per token, stories260K f32 and random768 f16 (< 3 min).
if [ -n "${HEXIR_TORCH_PYTHON:-}" ]; then
  bash tests/llm/gpu_decode_bench.sh > "$OUT/llm_decode_bench.log" 2>&1 || status=1
  cat "$OUT/llm_decode_bench.log"
else
  echo "llm decode benchmark: skipped (python3 on PATH has no torch)"
fi
# ---- startup: TinyLlama-shaped f16 from process start to the first token (tests/llm/gpu_startup_bench.sh) ----
timeout 400 bash tests/llm/gpu_startup_bench.sh > "$OUT/startup_bench.log" 2>&1 || status=1
cat "$OUT/startup_bench.log"
exit $status
