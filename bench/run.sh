#!/usr/bin/env bash
# The Hexir benchmark suite: instantiates the .mlir.in templates at the chosen sizes, compiles
# them and runs hexir-bench on each. See bench/README.md.
#
#   bash bench/run.sh [--device=cpu|cuda] [--size=small|full] [--out=DIR] [--iterations=N]
#                     [--compile-only | --run-only] [--only=NAME,...] [--compare=OLD.json]
# Binaries: $HEXIR_BIN/{hexir-compile,hexir-bench} (default: bazel-bin/tools/<tool>/<tool>).
# A case that does not compile is reported as NOT COMPILED with the compiler's first error,
# and the suite goes on. Results also go to OUT/results.json (bench/results.py); with
# --compare, cases slower than in OLD.json are named and the exit status is 1.
set -uo pipefail
cd "$(dirname "$0")/.."

device=cpu size=""; out=""; iterations=""; mode=all; only=""; compare=""
for a in "$@"; do
  case "$a" in
    --device=*) device="${a#*=}" ;;
    --size=*) size="${a#*=}" ;;
    --out=*) out="${a#*=}" ;;
    --iterations=*) iterations="${a#*=}" ;;
    --compile-only) mode=compile ;;
    --run-only) mode=run ;;
    --only=*) only="${a#*=}" ;;
    --compare=*) compare="${a#*=}" ;;
    *) echo "run.sh: unknown argument '$a'" >&2; exit 2 ;;
  esac
done
target="${device%%:*}"
[ -n "$size" ] || { [ "$target" = cuda ] && size=full || size=small; }
[ -n "$out" ] || out="/tmp/hexir-bench-$target-$size"
[ -n "$iterations" ] || { [ "$size" = full ] && iterations=20 || iterations=5; }
mkdir -p "$out"
compile_bin="${HEXIR_BIN:+$HEXIR_BIN/hexir-compile}"; compile_bin="${compile_bin:-bazel-bin/tools/hexir-compile/hexir-compile}"
bench_bin="${HEXIR_BIN:+$HEXIR_BIN/hexir-bench}"; bench_bin="${bench_bin:-bazel-bin/tools/hexir-bench/hexir-bench}"

# name | template | substitutions | inputs
if [ "$size" = full ]; then
  CASES=(
    "gemm_bf16_8192|gemm|M=8192 N=8192 K=8192 T=bf16 ACC=f32|8192x8192xbf16=0.01;8192x8192xbf16=0.01"
    "gemm_f16_8192|gemm|M=8192 N=8192 K=8192 T=f16 ACC=f32|8192x8192xf16=0.01;8192x8192xf16=0.01"
    "prefill_bf16_128x2048x2048|gemm|M=128 N=2048 K=2048 T=bf16 ACC=f32|128x2048xbf16=0.01;2048x2048xbf16=0.01"
    "prefill_bf16_512x2048x2048|gemm|M=512 N=2048 K=2048 T=bf16 ACC=f32|512x2048xbf16=0.01;2048x2048xbf16=0.01"
    "prefill_bf16_128x2048x5632|gemm|M=128 N=5632 K=2048 T=bf16 ACC=f32|128x2048xbf16=0.01;2048x5632xbf16=0.01"
    "prefill_bf16_512x2048x5632|gemm|M=512 N=5632 K=2048 T=bf16 ACC=f32|512x2048xbf16=0.01;2048x5632xbf16=0.01"
    "gemm_f32_4096|gemm|M=4096 N=4096 K=4096 T=f32 ACC=f32|4096x4096xf32=0.01;4096x4096xf32=0.01"
    "gemv_bf16_4096x4096|gemm|M=1 N=4096 K=4096 T=bf16 ACC=f32|1x4096xbf16=0.01;4096x4096xbf16=0.01"
    "gemv_bf16_4096x14336|gemm|M=1 N=14336 K=4096 T=bf16 ACC=f32|1x4096xbf16=0.01;4096x14336xbf16=0.01"
    "gemv_bf16_2048x256|gemm|M=1 N=256 K=2048 T=bf16 ACC=f32|1x2048xbf16=0.01;2048x256xbf16=0.01"
    "gemv_nk_bf16_4096x4096|gemv_nk|N=4096 K=4096 T=bf16|4096x4096xbf16=0.01;4096xbf16=0.01"
    "gemv_nk_bf16_14336x4096|gemv_nk|N=14336 K=4096 T=bf16|14336x4096xbf16=0.01;4096xbf16=0.01"
    "gemv_nk_bf16_256x2048|gemv_nk|N=256 K=2048 T=bf16|256x2048xbf16=0.01;2048xbf16=0.01"
    "elementwise_64M|elementwise|N=67108864|67108864xf32=0.5"
    "softmax_4096x4096|softmax|R=4096 C=4096|4096x4096xf32=0.5"
    "layernorm_4096x4096|layernorm|R=4096 C=4096|4096x4096xf32=0.5;4096xf32=1;4096xf32=0.5"
    "rmsnorm_4096x4096|rmsnorm|R=4096 C=4096|4096x4096xf32=0.5;4096xf32=1"
    "sum_rows_4096x4096|reduce|R=4096 C=4096 AXIS=1 OUT=4096 MAP=(p,r)|4096x4096xf32=0.5"
    "sum_columns_4096x4096|reduce|R=4096 C=4096 AXIS=0 OUT=4096 MAP=(r,p)|4096x4096xf32=0.5"
    "transpose_4096x4096|transpose|R=4096 C=4096|4096x4096xf32=0.5"
    "decode_ffn_bf16_4096x14336|decode_ffn|D=4096 F=14336 T=bf16|1x4096xf32=0.5;4096x14336xbf16=0.01;4096x14336xbf16=0.01;14336x4096xbf16=0.01"
  )
else
  CASES=(
    "gemm_bf16_512|gemm|M=512 N=512 K=512 T=bf16 ACC=f32|512x512xbf16=0.01;512x512xbf16=0.01"
    "gemm_f32_512|gemm|M=512 N=512 K=512 T=f32 ACC=f32|512x512xf32=0.01;512x512xf32=0.01"
    "gemm_f32_1024|gemm|M=1024 N=1024 K=1024 T=f32 ACC=f32|1024x1024xf32=0.01;1024x1024xf32=0.01"
    "gemv_bf16_4096x4096|gemm|M=1 N=4096 K=4096 T=bf16 ACC=f32|1x4096xbf16=0.01;4096x4096xbf16=0.01"
    "gemv_bf16_4096x14336|gemm|M=1 N=14336 K=4096 T=bf16 ACC=f32|1x4096xbf16=0.01;4096x14336xbf16=0.01"
    "gemv_f32_4096x4096|gemm|M=1 N=4096 K=4096 T=f32 ACC=f32|1x4096xf32=0.01;4096x4096xf32=0.01"
    "gemv_nk_bf16_4096x4096|gemv_nk|N=4096 K=4096 T=bf16|4096x4096xbf16=0.01;4096xbf16=0.01"
    "elementwise_4M|elementwise|N=4194304|4194304xf32=0.5"
    "softmax_1024x1024|softmax|R=1024 C=1024|1024x1024xf32=0.5"
    "elementwise_16M|elementwise|N=16777216|16777216xf32=0.5"
    "softmax_4096x4096|softmax|R=4096 C=4096|4096x4096xf32=0.5"
    "layernorm_4096x4096|layernorm|R=4096 C=4096|4096x4096xf32=0.5;4096xf32=1;4096xf32=0.5"
    "rmsnorm_4096x4096|rmsnorm|R=4096 C=4096|4096x4096xf32=0.5;4096xf32=1"
    "sum_rows_4096x4096|reduce|R=4096 C=4096 AXIS=1 OUT=4096 MAP=(p,r)|4096x4096xf32=0.5"
    "sum_columns_4096x4096|reduce|R=4096 C=4096 AXIS=0 OUT=4096 MAP=(r,p)|4096x4096xf32=0.5"
    "transpose_4096x4096|transpose|R=4096 C=4096|4096x4096xf32=0.5"
    "decode_ffn_bf16_2048x5632|decode_ffn|D=2048 F=5632 T=bf16|1x2048xf32=0.5;2048x5632xbf16=0.01;2048x5632xbf16=0.01;5632x2048xbf16=0.01"
  )
fi

# The decode case: a llama2.c checkpoint imported by hexir-import (weights are arguments,
# filled with a constant by --fill-inputs: the token stream is meaningless, the work per
# token is the model's). @generate from one BOS token for $DECODE_TOKENS tokens.
ckpt="${HEXIR_BENCH_CHECKPOINT:-${HEXIR_SHARED_DIR:-$(cd .. && pwd)/shared}/models/stories260K.bin}"
DECODE_TOKENS="${DECODE_TOKENS:-64}"
import_bin="${HEXIR_BIN:+$HEXIR_BIN/hexir-import}"; import_bin="${import_bin:-bazel-bin/tools/hexir-import/hexir-import}"

summary="$out/SUMMARY.txt"
: > "$summary"
echo "hexir bench suite: device=$device size=$size iterations=$iterations out=$out" | tee -a "$summary"
for c in "${CASES[@]}"; do
  IFS='|' read -r name template subs inputs <<< "$c"
  if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then continue; fi
  mlir="$out/$name.mlir" vmfb="$out/$name.$target.vmfb"
  if [ "$mode" != run ]; then
    sed_args=()
    for kv in $subs; do sed_args+=(-e "s/@${kv%%=*}@/${kv#*=}/g"); done
    sed "${sed_args[@]}" "bench/$template.mlir.in" > "$mlir"
    if ! "$compile_bin" "$mlir" --target="$target" -o "$vmfb" 2> "$out/$name.compile.log"; then
      echo "$name: NOT COMPILED for $target: $(grep -m1 -i error "$out/$name.compile.log" || head -c 300 "$out/$name.compile.log")" | tee -a "$summary"
      rm -f "$vmfb"
      continue
    fi
  fi
  [ "$mode" = compile ] && { echo "$name: compiled $vmfb" | tee -a "$summary"; continue; }
  if [ ! -f "$vmfb" ]; then echo "$name: no module $vmfb (not compiled)" | tee -a "$summary"; continue; fi
  input_args=()
  IFS=';' read -ra ins <<< "$inputs"
  for i in "${ins[@]}"; do input_args+=("--input=$i"); done
  if "$bench_bin" --module="$vmfb" --device="$device" --iterations="$iterations" "${input_args[@]}" \
       --trace="$out/$name.trace.json" --roofline="$out/$name.roofline.svg" > "$out/$name.txt" 2>&1; then
    busy=$(grep -m1 "device busy per call" "$out/$name.txt" | sed 's/.*device busy per call: //')
    wall=$(grep -m1 "wall (invoke" "$out/$name.txt" | sed 's/.*: //')
    ratio=$(grep -o "Hexir/baseline = [0-9.]*x[^)]*)\?" "$out/$name.txt" | head -3 | tr '\n' ' ')
    best=$(awk '/^  [a-z_0-9]+ +[0-9]+ /{print $9" GB/s "$10" GFLOP/s roof "$12"%"; exit}' "$out/$name.txt")
    echo "$name: wall $wall, device busy $busy, first dispatch: $best ${ratio:+| $ratio}" | tee -a "$summary"
  else
    echo "$name: hexir-bench FAILED: $(tail -n 2 "$out/$name.txt")" | tee -a "$summary"
  fi
done
decode_case() {
  local name=decode_stories260K vmfb="$out/decode_stories260K.$target.vmfb"
  if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then return; fi
  if [ "$mode" != run ]; then
    if [ ! -f "$ckpt" ]; then echo "$name: NOT COMPILED: no checkpoint $ckpt" | tee -a "$summary"; return; fi
    if ! { "$import_bin" "$ckpt" --cache-len=256 -o "$out/$name.mlir" &&
           "$compile_bin" "$out/$name.mlir" --target="$target" -o "$vmfb"; } 2> "$out/$name.compile.log"; then
      echo "$name: NOT COMPILED for $target: $(grep -m1 -i error "$out/$name.compile.log")" | tee -a "$summary"
      return
    fi
    [ "$mode" = compile ] && { echo "$name: compiled $vmfb" | tee -a "$summary"; return; }
  fi
  [ -f "$vmfb" ] || { echo "$name: no module $vmfb (not compiled)" | tee -a "$summary"; return; }
  if "$bench_bin" --module="$vmfb" --device="$device" --function=generate --iterations="$iterations" \
       --input=1xi64=1 --input=i64="$DECODE_TOKENS" --fill-inputs=0.01 \
       --trace="$out/$name.trace.json" --roofline="$out/$name.roofline.svg" > "$out/$name.txt" 2>&1; then
    wall=$(grep -m1 "wall (invoke" "$out/$name.txt" | sed 's/.*: //')
    busy=$(grep -m1 "device busy per call" "$out/$name.txt" | sed 's/.*: //')
    calls=$(grep -m1 "per steady call" "$out/$name.txt" | sed 's/.*per steady call: //' | cut -c1-160)
    echo "$name ($DECODE_TOKENS tokens/call): wall $wall, device busy $busy, $calls" | tee -a "$summary"
  else
    echo "$name: hexir-bench FAILED: $(tail -n 2 "$out/$name.txt")" | tee -a "$summary"
  fi
}
decode_case
echo "reports: $out/<case>.txt, traces: <case>.trace.json, rooflines: <case>.roofline.svg" | tee -a "$summary"
[ "$mode" = compile ] && exit 0
echo "results: $(python3 bench/results.py parse "$out" --device="$device")" | tee -a "$summary"
if [ -n "$compare" ]; then
  python3 bench/results.py compare "$compare" "$out/results.json" | tee -a "$summary"
  exit "${PIPESTATUS[0]}"
fi
