#!/usr/bin/env bash
# CPU benchmark (not a test): stories260K greedy decoding on ONE CPU thread, Hexir against
# the PyTorch reference (tests/llm/reference.py, torch.set_num_threads(1)).
#   bash tests/llm/benchmark.sh [TOKENS=200] [CACHE_LEN=512]
# Hexir runs with --cpu-threads=0 (dispatches inline on the calling thread), compiled with the
# default --max-workgroups=64 and with --max-workgroups=1 (the one-thread configuration: one
# workgroup per dispatch); its time is the fastest of 5 calls of @generate with the weights
# uploaded once; PyTorch's one run after a warm-up. Both decode from BOS, so both generate
# the same ids. llama.cpp is not included yet.
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
h=$(echo "$hx" | sed -n 's/.*: \([0-9.]*\) tokens\/s/\1/p')
p=$(echo "$pt" | sed -n 's/.*: \([0-9.]*\) tokens\/s/\1/p')
python3 -c "print('  hexir (--max-workgroups=1) / pytorch: %.2fx' % ($h / $p))"
