#!/usr/bin/env bash
# CPU benchmark (not a test): greedy decoding from BOS on ONE CPU thread, Hexir against
# llama.cpp on the same GGUF file, for several models and weight types, in one run.
#   bash tests/llm/benchmark.sh [ROUNDS=3] [CASE...]
# CASE is MODEL:TYPE[:TOKENS] with MODEL stories260K (../shared/models) or random768 (dim 768,
# hidden 2048, 12 layers, 12 heads, vocab 32000, seq_len 256, seed 768: written here by
# torch_decode_bench.py, with a 32000-piece vocabulary so that llama.cpp loads it) and TYPE
# f32 / f16 (llama2c_to_gguf.py) or a block type (hexir-quantize: q8_0, q4_0, ...). Default:
# stories260K:f32 stories260K:q8_0 stories260K:q4_0 random768:f32:64 random768:f16:64
# random768:q8_0:64 (TOKENS default 200).
# Hexir: the GGUF imported (f16 files with --weights=f16), compiled with --max-workgroups=1
# (the one-thread configuration), hexir-generate --cpu-threads=0 (dispatches inline on the
# calling thread), fastest of 3 calls with the weights uploaded once. llama.cpp: npm
# node-llama-cpp@3.21.1 (prebuilt @node-llama-cpp/linux-x64) in $LLAMA_CPP_DIR (default
# ~/.cache/hexir-llama-cpp; installed with npm when absent), llama_cpp_bench.mjs, one thread,
# fastest of 3 after a warm-up. The machine is shared: each round runs Hexir then llama.cpp
# back to back, and the ratio is reported per round and as the median of the rounds.
# Both sides also state the least CPU time of a call per generated token (hexir-generate
# --timing, process.cpuUsage in llama_cpp_bench.mjs): the "CPU" ratio, llama.cpp's CPU time per
# token over Hexir's, is the one a loaded machine leaves comparable (a preempted call's wall
# grows, its CPU time does not; memory shared with other work still slows both).
# Whether the two sides generate the same ids is printed (block types may differ: llama.cpp
# multiplies by 8-bit-quantized activations).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}
shift || true
CASES=("$@")
[ ${#CASES[@]} -gt 0 ] || CASES=(stories260K:f32 stories260K:q8_0 stories260K:q4_0 random768:f32:64 random768:f16:64 random768:q8_0:64)
SHARED=${HEXIR_SHARED_DIR:-$(cd .. && pwd)/shared}
LLAMA_CPP_DIR=${LLAMA_CPP_DIR:-$HOME/.cache/hexir-llama-cpp}
bazel build --jobs=2 //tools/hexir-import //tools/hexir-compile //tools/hexir-generate //tools/hexir-quantize >/dev/null 2>&1
B=bazel-bin/tools
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -d "$LLAMA_CPP_DIR/node_modules/node-llama-cpp" ]; then
  mkdir -p "$LLAMA_CPP_DIR"
  (cd "$LLAMA_CPP_DIR" && npm install --no-audit --no-fund node-llama-cpp@3.21.1 @node-llama-cpp/linux-x64@3.21.1 >/dev/null 2>&1) \
    || { echo "benchmark: npm install of node-llama-cpp failed"; exit 1; }
fi
mkdir -p "$tmp/lc" && ln -sfn "$LLAMA_CPP_DIR/node_modules" "$tmp/lc/node_modules"
cp tests/llm/llama_cpp_bench.mjs "$tmp/lc/"

# The llama2.c checkpoint and tokenizer of MODEL (random768's written once).
checkpoint() {
  case "$1" in
    stories260K) echo "$SHARED/models/stories260K.bin $SHARED/models/tok512.bin" ;;
    random768)
      if [ ! -f "$tmp/random768.bin" ]; then
        /usr/bin/python3 tests/llm/torch_decode_bench.py --write-random "$tmp/random768.bin" --dim 768 --hidden 2048 \
          --layers 12 --heads 12 --kv-heads 12 --vocab 32000 --seq-len 256 --seed 768 >/dev/null
        /usr/bin/python3 - "$tmp/tok32000.bin" <<'EOF'
import struct, sys
pieces = [b"<unk>", b"<s>", b"</s>"] + [b"<0x%02X>" % i for i in range(256)]
pieces += [b"w%d" % i for i in range(len(pieces), 32000)]
out = struct.pack("<i", max(len(p) for p in pieces))
for i, p in enumerate(pieces):
    out += struct.pack("<fi", -float(i), len(p)) + p
open(sys.argv[1], "wb").write(out)
EOF
      fi
      echo "$tmp/random768.bin $tmp/tok32000.bin" ;;
    *) echo "benchmark: unknown model $1" >&2; exit 1 ;;
  esac
}

rate() { sed -n 's/.*: \([0-9.]*\) tokens\/s.*/\1/p'; }
cpu_ms() { sed -n 's/.*, \([0-9.]*\) ms per token.*/\1/p'; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }
echo "greedy decoding from BOS, one CPU thread ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $ROUNDS rounds"
summary=()
for c in "${CASES[@]}"; do
  IFS=: read -r model type tokens <<<"$c"
  tokens=${tokens:-200}
  read -r ckpt tok <<<"$(checkpoint "$model")"
  gguf="$tmp/$model.$type.gguf"
  weights=f32
  case "$type" in
    f32) /usr/bin/python3 tests/llm/llama2c_to_gguf.py "$ckpt" "$tok" "$gguf" ;;
    f16) /usr/bin/python3 tests/llm/llama2c_to_gguf.py "$ckpt" "$tok" "$gguf" --f16; weights=f16 ;;
    *) $B/hexir-quantize/hexir-quantize "$ckpt" -o "$gguf" --type="$type" --tokenizer="$tok" >/dev/null ;;
  esac
  $B/hexir-import/hexir-import "$gguf" --weights=$weights -o "$tmp/m.mlir"
  $B/hexir-compile/hexir-compile "$tmp/m.mlir" --target=cpu --max-workgroups=1 -o "$tmp/$model.$type.vmfb"
  gen=($B/hexir-generate/hexir-generate --module="$tmp/$model.$type.vmfb" --parameters="$gguf" --max-tokens="$tokens" --cpu-threads=0)
  ratios=() cpu_ratios=()
  for ((r = 1; r <= ROUNDS; ++r)); do
    hx_line=$("${gen[@]}" --repeat=3 --timing 2>&1 >/dev/null | tail -1)
    lc_line=$(cd "$tmp/lc" && node llama_cpp_bench.mjs "$gguf" "$tokens" 1 2>"$tmp/lc.err" >"$tmp/lc.ids"; tail -1 "$tmp/lc.err")
    hx=$(echo "$hx_line" | rate) lc=$(echo "$lc_line" | rate)
    hx_cpu=$(echo "$hx_line" | cpu_ms) lc_cpu=$(echo "$lc_line" | cpu_ms)
    ratio=$(python3 -c "print('%.2f' % ($hx / $lc))")
    cpu_ratio=$(python3 -c "print('%.2f' % ($lc_cpu / $hx_cpu))")
    ratios+=("$ratio") cpu_ratios+=("$cpu_ratio")
    echo "  $model $type round $r: hexir $hx tokens/s ($hx_cpu CPU ms/token), llama.cpp $lc tokens/s ($lc_cpu CPU ms/token): ${ratio}x, CPU ${cpu_ratio}x (load $(cut -d' ' -f1 /proc/loadavg))"
  done
  hx_ids=$("${gen[@]}" | head -1)
  lc_ids=$(head -1 "$tmp/lc.ids")
  same=$([ "$lc_ids" == "$hx_ids" ] && echo "same ids" || echo "ids differ")
  summary+=("$(printf '  %-12s %-5s %4s tokens: hexir / llama.cpp = %sx tokens/s, %sx CPU time (medians of %s rounds; %s)' \
    "$model" "$type" "$tokens" "$(median "${ratios[@]}")" "$(median "${cpu_ratios[@]}")" "$ROUNDS" "$same")")
done
echo "summary:"
printf '%s\n' "${summary[@]}"
