#!/usr/bin/env bash
# CPU benchmark (not a test): stories260K greedy decoding on ONE CPU thread, Hexir against
# the PyTorch reference (tests/llm/reference.py, torch.set_num_threads(1)).
#   bash tests/llm/benchmark.sh [TOKENS=200] [CACHE_LEN=512]
# Hexir runs with --cpu-threads=0 (dispatches inline on the calling thread), compiled with the
# default --max-workgroups=64 and with --max-workgroups=1 (the one-thread configuration: one
# workgroup per dispatch); its time is the fastest of 5 calls of @generate with the weights
# uploaded once; PyTorch's one run after a warm-up. Both decode from BOS, so both generate
# the same ids. llama.cpp: npm node-llama-cpp@3.21.1 (prebuilt @node-llama-cpp/linux-x64) in
# $LLAMA_CPP_DIR (default ~/.cache/hexir-llama-cpp; installed there with npm when absent),
# the checkpoint converted to GGUF f32 by llama2c_to_gguf.py, one thread, fastest of 3 after a
# warm-up; its greedy ids are checked against Hexir's.
set -euo pipefail
cd "$(dirname "$0")/../.."
TOKENS=${1:-200}
CACHE=${2:-512}
SHARED=${HEXIR_SHARED_DIR:-$(cd .. && pwd)/shared}
CKPT=$SHARED/models/stories260K.bin
bazel build --jobs=2 //tools/hexir-import //tools/hexir-compile //tools/hexir-generate >/dev/null 2>&1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bazel-bin/tools/hexir-import/hexir-import "$CKPT" --cache-len="$CACHE" -o "$tmp/llm.mlir"
bazel-bin/tools/hexir-compile/hexir-compile "$tmp/llm.mlir" --target=cpu -o "$tmp/llm.vmfb"
bazel-bin/tools/hexir-compile/hexir-compile "$tmp/llm.mlir" --target=cpu --max-workgroups=1 -o "$tmp/llm1.vmfb"
echo "stories260K, $TOKENS tokens from BOS, KV cache $CACHE positions, one CPU thread ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
run() {
  bazel-bin/tools/hexir-generate/hexir-generate --module="$1" --parameters="$CKPT" \
    --max-tokens="$TOKENS" --cpu-threads=0 --repeat=5 --timing 2>&1 >/dev/null
}
hx64=$(run "$tmp/llm.vmfb")
hx=$(run "$tmp/llm1.vmfb")
echo "  hexir (--max-workgroups=64): $hx64"
echo "  hexir (--max-workgroups=1):  $hx"
/usr/bin/python3 tests/llm/reference.py "$CKPT" --steps 20 --threads 1 >/dev/null  # warm-up
pt=$(/usr/bin/python3 tests/llm/reference.py "$CKPT" --steps "$TOKENS" --threads 1 --bench 2>&1 >/dev/null)
echo "  pytorch:                     $pt"
LLAMA_CPP_DIR=${LLAMA_CPP_DIR:-$HOME/.cache/hexir-llama-cpp}
lc=""
if [ ! -d "$LLAMA_CPP_DIR/node_modules/node-llama-cpp" ]; then
  mkdir -p "$LLAMA_CPP_DIR"
  (cd "$LLAMA_CPP_DIR" && npm install --no-audit --no-fund node-llama-cpp@3.21.1 @node-llama-cpp/linux-x64@3.21.1 >/dev/null 2>&1) \
    || echo "  llama.cpp: npm install failed; skipped"
fi
if [ -d "$LLAMA_CPP_DIR/node_modules/node-llama-cpp" ]; then
  /usr/bin/python3 tests/llm/llama2c_to_gguf.py "$CKPT" "$SHARED/models/tok512.bin" "$tmp/stories260K.gguf"
  cp tests/llm/llama_cpp_bench.mjs "$LLAMA_CPP_DIR/"
  lc=$(cd "$LLAMA_CPP_DIR" && node llama_cpp_bench.mjs "$tmp/stories260K.gguf" "$TOKENS" 1 2>"$tmp/lc.err" >"$tmp/lc.ids"; cat "$tmp/lc.err" | tail -1)
  hx_ids=$(bazel-bin/tools/hexir-generate/hexir-generate --module="$tmp/llm1.vmfb" --parameters="$CKPT" --max-tokens="$TOKENS")
  same=$([ "$(cat "$tmp/lc.ids")" == "$hx_ids" ] && echo "same ids as Hexir" || echo "ids DIFFER from Hexir")
  echo "  llama.cpp:                   $lc ($same)"
fi
h=$(echo "$hx" | sed -n 's/.*: \([0-9.]*\) tokens\/s/\1/p')
p=$(echo "$pt" | sed -n 's/.*: \([0-9.]*\) tokens\/s/\1/p')
python3 -c "print('  hexir (--max-workgroups=1) / pytorch: %.2fx' % ($h / $p))"
if [ -n "$lc" ]; then
  l=$(echo "$lc" | sed -n 's/.*: \([0-9.]*\) tokens\/s/\1/p')
  python3 -c "print('  hexir (--max-workgroups=1) / llama.cpp: %.2fx' % ($h / $l))"
fi
