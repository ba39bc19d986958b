#!/usr/bin/env bash
# Prepares a self-contained bundle for the GPU machine, which has no Bazel, LLVM or MLIR:
# builds the GPU-relevant test and benchmark binaries here, copies each with its runfiles
# (symlinks resolved) into .out/gpu/, and precompiles the end-to-end modules for --target=cuda
# by running the e2e tests here with HEXIR_SAVE_MODULES_DIR. Then run, on the GPU machine:
#   bash tools/gpu/run.sh          (with .out carried)
# --tests-only: the test binaries, their modules and the HAL benchmarks only (what
# `run.sh --part=tests` runs); skips the bench suite and the LLM benchmarks' modules.
set -euo pipefail
cd "$(dirname "$0")/../.."
TESTS_ONLY=0
case "${1:-}" in --tests-only) TESTS_ONLY=1 ;; "") ;; *) echo "usage: pack.sh [--tests-only]"; exit 2 ;; esac
TESTS=(
  //hal/drivers/cuda:cuda_device_test
  //hal/drivers/cuda:cuda_transfer_queue_test
  //hal/drivers/cuda:cuda_timepoints_test
  //hal/drivers/cuda:cuda_argument_readiness_test
  //hal/drivers/cuda:cuda_peer_copy_test
  //hal/cts:cuda_cts_test
  //tests/e2e:models_test
  //tests/e2e:compiled_calls_test
  //tests/e2e:compiler_gaps_test
  //tests/e2e:launch_optimizations_test
  //tests/e2e:deadline_test
  //tests/e2e:decode_attention_test
  //tests/e2e:prompt_attention_test
  //tests/e2e:cache_row_write_test
  //tests/e2e:small_layer_fusion_test
  //tests/e2e:sibling_gemv_test
  //tests/e2e:decode_projections_test
  //tests/e2e:norm_pair_test
  //tests/e2e:row_chain_test
  //tests/e2e:tensor_core_matmul_test
  //tests/e2e:dynamic_grids_test
  //tests/e2e:generate_limits_test
  //tests/e2e:kernel_checks_test
  //tests/e2e:low_precision_floats_test
  //tests/e2e:shape_checks_test
  //tests/e2e:shape_memo_test
  //tests/e2e:schedule_test
  //tests/e2e:programmatic_launch_test
  //tests/e2e:heterogeneous_test
  //tests/e2e:placed_llm_test
  //tests/onnx:placement_test
  //tests/onnx:quantized_models_test
  //tests/onnx:cuda_graph_test
  //tests/e2e:cuda_quantized_gemv_test
  //tests/e2e:layer_calls_test
  //tests/e2e:sampling_test
  //tests/e2e:streaming_test
  //tests/e2e:device_loops_test
  //tests/e2e:device_loop_generate_test
  //tools/hexir-bench:cuda_bench_test
  //tests/llm:stories260k_test
  //tests/llm:small_layer_fusion_test
  //tests/llm:random_checkpoints_test
  //tests/llm:kv_cache_test
  //tests/llm:gguf_test
  //tests/llm:gguf_tokenizer_test
  //tests/llm:hf_test
  //tests/llm:llama_cpp_quantized_stories_test
  //tests/llm:llama_cpp_quantized_random_test
)
# Binaries as "package name".
BINARIES=(
  "hal/drivers/cuda replay_benchmark"
  "hal/drivers/cuda device_loop_benchmark"
  "hal/drivers/cuda transfer_benchmark"
  "tools/hexir-run hexir-run"
  "tools/hexir-bench hexir-bench"
)
bazel build "${TESTS[@]}" //hal/drivers/cuda:replay_benchmark //hal/drivers/cuda:device_loop_benchmark \
  //hal/drivers/cuda:transfer_benchmark //tools/hexir-run //tools/hexir-bench \
  //bench/hal_waves:waves_benchmark
rm -rf .out/gpu && mkdir -p .out/gpu/modules .out/gpu/bin
for t in "${TESTS[@]}"; do
  pkg=${t#//}; pkg=${pkg%%:*}; name=${t##*:}
  # Two tests of one name (tests/e2e and tests/llm) get "package.name" folders (run.sh strips it).
  dir=$name
  [ ! -e ".out/gpu/tests/$dir" ] || dir="${pkg##*/}.$name"
  mkdir -p ".out/gpu/tests/$dir"
  cp -rL "bazel-bin/$pkg/$name.runfiles/hexir/." ".out/gpu/tests/$dir/"
  # The compiler needs LLVM, which the GPU machine lacks: modules come precompiled.
  rm -f ".out/gpu/tests/$dir/tools/hexir-compile/hexir-compile" ".out/gpu/tests/$dir/tools/hexir-import/hexir-import"
done
# The HAL waves benchmark runs from its runfiles (test kernels: .so and .cubin).
mkdir -p .out/gpu/tests/waves_benchmark_runfiles
cp -rL bazel-bin/bench/hal_waves/waves_benchmark.runfiles/hexir/. .out/gpu/tests/waves_benchmark_runfiles/
# The shared model files do not travel with the working tree: carry a copy (never committed).
shared="${HEXIR_SHARED_DIR:-$(cd .. && pwd)/shared}"
mkdir -p .out/gpu/shared/models && cp "$shared"/models/*.bin .out/gpu/shared/models/
# The ONNX importer's libraries, which the GPU machine lacks (run.sh puts them on LD_LIBRARY_PATH).
mkdir -p .out/gpu/lib
cp -L /lib/x86_64-linux-gnu/libonnx_proto.so.1 /lib/x86_64-linux-gnu/libprotobuf.so.32 .out/gpu/lib/
for b in "${BINARIES[@]}"; do
  read -r pkg name <<<"$b"
  cp -L "bazel-bin/$pkg/$name" .out/gpu/bin/
done
export HEXIR_SAVE_MODULES_DIR="$PWD/.out/gpu/modules"
export HEXIR_COMPILE_FLAGS="--cpu=x86-64-v3"  # CPU kernels must run on the GPU machine's host too
for t in //tests/e2e:models_test //tests/e2e:compiled_calls_test //tests/e2e:compiler_gaps_test \
         //tests/e2e:deadline_test //tests/e2e:decode_attention_test //tests/e2e:prompt_attention_test //tests/e2e:cache_row_write_test //tests/e2e:small_layer_fusion_test //tests/e2e:sibling_gemv_test //tests/e2e:decode_projections_test //tests/e2e:norm_pair_test //tests/e2e:row_chain_test //tests/e2e:launch_optimizations_test //tests/e2e:tensor_core_matmul_test //tests/e2e:dynamic_grids_test //tests/e2e:generate_limits_test \
         //tests/e2e:kernel_checks_test \
         //tests/e2e:low_precision_floats_test //tests/e2e:shape_checks_test //tests/e2e:shape_memo_test \
         //tests/e2e:schedule_test //tests/e2e:programmatic_launch_test //tests/e2e:heterogeneous_test //tests/e2e:layer_calls_test \
         //tests/e2e:sampling_test //tests/e2e:streaming_test //tests/e2e:device_loops_test \
         //tests/e2e:device_loop_generate_test //tests/e2e:placed_llm_test //tests/onnx:placement_test \
         //tests/onnx:quantized_models_test //tests/onnx:cuda_graph_test //tests/e2e:cuda_quantized_gemv_test; do
  pkg=${t#//}; pkg=${pkg%%:*}; name=${t##*:}
  (cd "bazel-bin/$pkg/$name.runfiles/hexir" && TEST_TMPDIR=$(mktemp -d) "./$pkg/$name" >/dev/null) \
    || { echo "pack: $name failed here; fix it before a GPU run"; exit 1; }
done
HEXIR_SHARED_DIR="$shared" bash tests/llm/precompile.sh .out/gpu/modules cuda >/dev/null

bash bench/schedule_waves/run.sh --device=cuda --compile-only --out=.out/gpu/schedule_waves
# Small ONNX models vs onnxruntime (bench/small_onnx): models, inputs and both modules.
# Without npm (the models' source) the bundle goes without it, as cuda_graph_test skips.
bash bench/small_onnx/run.sh --pack=.out/gpu/small_onnx >/dev/null ||
  { echo "pack: bench/small_onnx not packed (see above); run.sh will report it"; rm -rf .out/gpu/small_onnx; }
if [ "$TESTS_ONLY" -eq 0 ]; then
# ---- bench/ suite at full size, compiled here, run there by run.sh ----
bash bench/run.sh --device=cuda --compile-only --out=.out/gpu/bench >/dev/null

# ---- host loop vs Lua 5.4 and hand-written bytecode (bench/vm_loop; run.sh runs the modules) ----
bazel build --jobs=2 //bench:vm_loop_modules //tools/hexir-compile
cp -L bazel-bin/bench/vm_loop_modules .out/gpu/bin/
cp -L "$(command -v lua5.4)" .out/gpu/bin/ 2>/dev/null || echo "pack: no lua5.4 here to carry (tools/setup.sh installs it)"
REPEATS=1 OUT=.out/gpu/vm_loop bash bench/vm_loop/run.sh 1000 >/dev/null

# ---- LLM decode benchmark (tests/llm/gpu_decode_bench.sh; run.sh runs it last) ----
# hexir-generate, hexir-quantize (the quantized TinyLlama rows' GGUFs are written there, from the
# seeded checkpoint) and the CUDA modules into .out/gpu/llm-bench.
bazel build --jobs=2 //tools/hexir-generate //tools/hexir-quantize
cp -L bazel-bin/tools/hexir-generate/hexir-generate bazel-bin/tools/hexir-quantize/hexir-quantize .out/gpu/bin/
HEXIR_SHARED_DIR="$shared" bash tests/llm/gpu_decode_bench.sh --pack .out/gpu/llm-bench
# ---- startup benchmark: TinyLlama-shaped f16, process start -> first token (run.sh) ----
bash tests/llm/gpu_startup_bench.sh --pack .out/gpu/llm-bench
fi

du -sh .out/gpu
# The bundle passed the device tool's 64 MiB carry limit: it travels as one xz tarball.
mkdir -p .out/carry
tar -cf - .out/gpu | xz -T0 -6 > .out/carry/bundle.tar.xz
du -sh .out/carry/bundle.tar.xz
echo "pack: ready; carry .out/carry and run there:"
echo "  xz -dc .out/carry/bundle.tar.xz | tar -xf - && bash tools/gpu/run.sh --part=tests   (then --part=bench)"
