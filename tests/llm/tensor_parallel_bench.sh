#!/usr/bin/env bash
# CPU benchmark (not a test): tensor-parallel greedy decoding of random768 (dim 768, hidden
# 2048, 12 layers, 12 heads, vocab 32000, seq_len 256, seed 768: torch_decode_bench.py's
# random checkpoint) on 2 CPU ranks of one process against 1, in one run.
#   bash tests/llm/tensor_parallel_bench.sh [TYPE=q8_0] [TOKENS=64] [ROUNDS=3]
# TYPE: f32 (the llama2.c file as is) or a block type (hexir-quantize: q8_0, q4_0, ...).
# Both modules come from the same file (hexir-import, and hexir-import --tensor-parallel=2),
# compiled for the CPU; each configuration is hexir-generate --repeat=3 --timing (the
# fastest call), alternated ROUNDS times so that both see the same machine load:
#   1 rank:  --device=cpu:threads=1                      (one thread)
#   2 ranks: --device=cpu:threads=1 --device=cpu:threads=1 (a thread per rank; the ranks' all_reduce
#            through the in-process Gloo group)
#   1 rank, 2 threads: --device=cpu:threads=2             (the same two cores without collectives)
# Prints ms/token per configuration and round, the median ratio 2 ranks / 1 rank, and
# whether the ids are equal (they must be).
set -euo pipefail
cd "$(dirname "$0")/../.."
TYPE=${1:-q8_0}
TOKENS=${2:-64}
ROUNDS=${3:-3}
bazel build --jobs=2 //tools/hexir-import //tools/hexir-compile //tools/hexir-generate //tools/hexir-quantize >/dev/null 2>&1
B=bazel-bin/tools
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

/usr/bin/python3 tests/llm/torch_decode_bench.py --write-random "$tmp/random768.bin" --dim 768 --hidden 2048 \
  --layers 12 --heads 12 --kv-heads 12 --vocab 32000 --seq-len 256 --seed 768 >/dev/null
ckpt=$tmp/random768.bin
if [ "$TYPE" != f32 ]; then
  ckpt=$tmp/random768.$TYPE.gguf
  $B/hexir-quantize/hexir-quantize "$tmp/random768.bin" -o "$ckpt" --type="$TYPE" >/dev/null
fi
for tp in 1 2; do
  flags=()
  [ "$tp" = 2 ] && flags=(--tensor-parallel=2)
  $B/hexir-import/hexir-import "$ckpt" "${flags[@]}" -o "$tmp/tp$tp.mlir"
  $B/hexir-compile/hexir-compile "$tmp/tp$tp.mlir" --target=cpu -o "$tmp/tp$tp.vmfb"
done

# run NAME MODULE DEVICES...: ms/token of the fastest of 3 calls; the ids to $tmp/NAME.ids.
run() {
  local name=$1 module=$2
  shift 2
  local out
  out=$($B/hexir-generate/hexir-generate --module="$tmp/$module.vmfb" "$@" --parameters="$ckpt" \
        --max-tokens="$TOKENS" --repeat=3 --timing 2>&1)
  grep '^ids:' <<<"$out" >"$tmp/$name.ids"
  sed -n 's/.* generated tokens in \([0-9.]*\) ms.*/\1/p' <<<"$out" | tail -1 \
    | awk -v n="$(($(wc -w <"$tmp/$name.ids") - 1))" '{ printf "%.2f", $1 / n }'
}
echo "random768 $TYPE, $TOKENS tokens from BOS, $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load $(cut -d' ' -f1-3 /proc/loadavg)"
ratios=()
for ((r = 1; r <= ROUNDS; r++)); do
  one=$(run one tp1 --device=cpu:threads=1)
  two=$(run two tp2 --device=cpu:threads=1 --device=cpu:threads=1)
  wide=$(run wide tp1 --device=cpu:threads=2)
  ratio=$(awk -v a="$two" -v b="$one" 'BEGIN { printf "%.3f", a / b }')
  ratios+=("$ratio")
  echo "round $r: 1 rank $one ms/token, 2 ranks $two ms/token (ratio $ratio), 1 rank 2 threads $wide ms/token"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
same=no
cmp -s "$tmp/one.ids" "$tmp/two.ids" && cmp -s "$tmp/one.ids" "$tmp/wide.ids" && same=yes
echo "median ratio 2 ranks / 1 rank: $median (ids equal: $same)"
