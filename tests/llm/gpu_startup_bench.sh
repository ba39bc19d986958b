#!/usr/bin/env bash
# GPU startup benchmark (not a test; issue 14, Speed): wall time from process start to the first
# generated token for a TinyLlama-1.1B-shaped llama (dim 2048, hidden 5632, 22 layers, 32 heads,
# 4 KV heads, vocab 32000; KV cache 512) with f16 weights converted from a random llama2.c f32
# checkpoint (seed 2048) that is in the page cache. `hexir-generate --max-tokens=1` from BOS,
# measured three times; prints each wall time and hexir-generate's own --timing lines.
# Two halves, like gpu_decode_bench.sh:
#   here:   bash tests/llm/gpu_startup_bench.sh --pack DIR   (imports the module from a
#           header-only sparse checkpoint: a module depends only on the header; compiles it)
#   there:  bash tests/llm/gpu_startup_bench.sh               (bundle .out/gpu, or HEXIR_GPU_BUNDLE)
set -uo pipefail
cd "$(dirname "$0")/../.."
BENCH_PY=tests/llm/torch_decode_bench.py
TINYLLAMA=(--dim 2048 --hidden 5632 --layers 22 --heads 32 --kv-heads 4 --vocab 32000 --seq-len 512 --seed 2048)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }

if [ "${1:-}" = "--pack" ]; then
  set -e
  [ -n "${2:-}" ] || { echo "usage: gpu_startup_bench.sh --pack DIR"; exit 2; }
  out=$(mkdir -p "$2" && cd "$2" && pwd)
  bazel build --jobs=2 //tools/hexir-import //tools/hexir-compile >/dev/null 2>&1
  "${PACK_PYTHON:-/usr/bin/python3}" "$BENCH_PY" --write-random "$tmp/tinyllama.bin" "${TINYLLAMA[@]}" --header-only
  bazel-bin/tools/hexir-import/hexir-import "$tmp/tinyllama.bin" --weights=f16 -o "$tmp/tinyllama.mlir"
  # shellcheck disable=SC2086
  bazel-bin/tools/hexir-compile/hexir-compile "$tmp/tinyllama.mlir" --target=cuda \
    ${HEXIR_COMPILE_FLAGS:---cpu=x86-64-v3} -o "$out/tinyllama_f16.cuda.vmfb"
  echo "gpu_startup_bench: module in $out/tinyllama_f16.cuda.vmfb"
  exit 0
fi

BUNDLE=${HEXIR_GPU_BUNDLE:-.out/gpu}
GEN=$BUNDLE/bin/hexir-generate
MOD=$BUNDLE/llm-bench/tinyllama_f16.cuda.vmfb
for f in "$GEN" "$MOD"; do
  [ -f "$f" ] || { echo "gpu_startup_bench: missing $f (run tools/gpu/pack.sh here first)"; exit 1; }
done
start=$(now)
python3 "$BENCH_PY" --write-random "$tmp/tinyllama.bin" "${TINYLLAMA[@]}" >/dev/null || exit 1
echo "gpu_startup_bench: wrote the 4.1 GB f32 checkpoint in $(since "$start") s"
cat "$tmp/tinyllama.bin" >/dev/null  # in the page cache, as the issue measures
status=0
for i in 1 2 3; do
  start=$(now)
  timeout 120 "$GEN" --module="$MOD" --parameters="$tmp/tinyllama.bin" --device=cuda \
    --prompt-ids=1 --max-tokens=1 --timing >"$tmp/out" 2>"$tmp/err" || status=1
  echo "tinyllama f16 run $i: process start -> first token $(since "$start") s"
  sed 's/^/  /' "$tmp/err"
done
exit $status
