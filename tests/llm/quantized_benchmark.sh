#!/usr/bin/env bash
# Not a test: stories260K in GGUF q8_0 and q4_0 (hexir-quantize), greedy tokens/s on one CPU
# thread, Hexir (hexir-generate --cpu-threads=0, modules compiled with --max-workgroups=1)
# against llama.cpp (npm node-llama-cpp, llama_cpp_bench.mjs, one thread) on the same file,
# and whether the ids are the same.
#   bash tests/llm/quantized_benchmark.sh [TOKENS=200]
# 2026-12-01 on the shared 2-core EPYC under load 17-19 (both sides in one run, same ids):
# q8_0 567 vs 561 tokens/s (1.01x), q4_0 551 vs 887 (0.62x); issue 19 asks for >= 1.5x.
set -euo pipefail
cd "$(dirname "$0")/../.."
TOKENS=${1:-200}
SHARED=${HEXIR_SHARED_DIR:-$(cd .. && pwd)/shared}
CKPT=$SHARED/models/stories260K.bin
LLAMA_CPP_DIR=${LLAMA_CPP_DIR:-$HOME/.cache/hexir-llama-cpp}
bazel build --jobs=2 //tools/hexir-import //tools/hexir-compile //tools/hexir-generate //tools/hexir-quantize >/dev/null 2>&1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lc" && ln -sfn "$LLAMA_CPP_DIR/node_modules" "$tmp/lc/node_modules"
cp tests/llm/llama_cpp_bench.mjs "$tmp/lc/"
B=bazel-bin/tools
echo "stories260K, $TOKENS tokens from BOS, one CPU thread ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
for type in q8_0 q4_0; do
  $B/hexir-quantize/hexir-quantize "$CKPT" -o "$tmp/$type.gguf" --type=$type --tokenizer="$SHARED/models/tok512.bin" >/dev/null
  $B/hexir-import/hexir-import "$tmp/$type.gguf" -o "$tmp/$type.mlir"
  $B/hexir-compile/hexir-compile "$tmp/$type.mlir" --target=cpu --max-workgroups=1 -o "$tmp/$type.vmfb"
  hx=$($B/hexir-generate/hexir-generate --module="$tmp/$type.vmfb" --parameters="$tmp/$type.gguf" \
    --max-tokens="$TOKENS" --cpu-threads=0 --repeat=5 --timing 2>&1 >/dev/null | tail -1)
  hx_ids=$($B/hexir-generate/hexir-generate --module="$tmp/$type.vmfb" --parameters="$tmp/$type.gguf" \
    --max-tokens="$TOKENS" --cpu-threads=0 | head -1)
  lc=$(cd "$tmp/lc" && node llama_cpp_bench.mjs "$tmp/$type.gguf" "$TOKENS" 1 2>"$tmp/lc.err" >"$tmp/lc.ids"; tail -1 "$tmp/lc.err")
  same=$([ "$(cat "$tmp/lc.ids")" == "$hx_ids" ] && echo "same ids" || echo "ids differ")
  h=$(echo "$hx" | sed -n 's/.*: \([0-9.]*\) tokens\/s/\1/p')
  l=$(echo "$lc" | sed -n 's/.*: \([0-9.]*\) tokens\/s/\1/p')
  echo "  $type hexir:     $hx"
  echo "  $type llama.cpp: $lc ($same)"
  python3 -c "print('  $type hexir / llama.cpp: %.2fx' % ($h / $l))"
done
