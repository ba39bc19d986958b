#!/usr/bin/env bash
# CPU networks and kernels against their peers, in one run (bench/README.md, "CPU networks
# against onnxruntime"):
#   zoo:     the torchvision zoo of tests/onnx/zoo_models.py (static and dynamic exports,
#            random weights), Hexir (hexir-import with the weights inline -> hexir-compile ->
#            hexir-bench) vs onnxruntime-node 1.30 (tests/onnx/ort_reference.js time) and PyTorch
#            eager (Debian's python3-torch, bench/zoo/torch_time.py: the same model and seed),
#            each on 1 and 2 threads; the dynamic export runs on the static export's input.
#   kernels: f32 matmul 512^3 and 1024^3 vs OpenBLAS sgemm (hexir-bench's baseline, same thread
#            count through OPENBLAS_NUM_THREADS; then least and CPU times of both,
#            zoo/gemm_times.py); a 64 MiB elementwise chain and a 4096x4096
#            softmax vs a one-thread memcpy of the same bytes (64 MiB read + 64 MiB written).
#
#   bash bench/zoo/run.sh [--out=DIR] [--iterations=N] [--zoo-only | --kernels-only] [MODEL...]
# Needs `bazel build //tools/hexir-import //tools/hexir-compile //tools/hexir-bench`, Debian's
# python3-torch/torchvision (the export) and node; onnxruntime-node comes from
# tools/fetch_test_models.sh's npm cache. Prints one table row per model and per kernel; the
# reports of every hexir-bench run stay in DIR. Time ratios are Hexir/peer: below 1 is faster.
set -uo pipefail
cd "$(dirname "$0")/../.."

out=/tmp/hexir-bench-zoo iterations=10 zoo=1 kernels=1 models=()
for a in "$@"; do
  case "$a" in
    --out=*) out="${a#*=}" ;;
    --iterations=*) iterations="${a#*=}" ;;
    --zoo-only) kernels=0 ;;
    --kernels-only) zoo=0 ;;
    --*) echo "zoo/run.sh: unknown argument '$a'" >&2; exit 2 ;;
    *) models+=("$a") ;;
  esac
done
mkdir -p "$out"
bin="${HEXIR_BIN:-bazel-bin/tools}"
tool() { [ -n "${HEXIR_BIN:-}" ] && echo "$bin/$1" || echo "$bin/$1/$1"; }
IMPORT=$(tool hexir-import) COMPILE=$(tool hexir-compile) BENCH=$(tool hexir-bench)
PY=/usr/bin/python3

# Median wall per call (ms) of hexir-bench on MODULE on THREADS threads; the report is kept.
# One thread is the calling thread (--cpu-threads=0), as onnxruntime's intra-op pool of 1: a
# worker of its own would add a wake-up per dispatch, milliseconds on a loaded machine.
hexir_ms() {  # hexir_ms REPORT THREADS MODULE ARGS...
  local report=$1 threads=$2
  shift 2
  OPENBLAS_NUM_THREADS=$threads "$BENCH" --module="$1" --cpu-threads="$((threads == 1 ? 0 : threads))" \
    --iterations="$iterations" "${@:2}" > "$report" 2>&1 || { echo "FAILED"; return; }
  awk '/wall \(invoke \+ wait idle\)/ {printf "%.2f", $(NF-1) / 1000; exit}' "$report"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "-"}'; }

if [ "$zoo" = 1 ]; then
  cache=$(bash tools/fetch_test_models.sh) || { echo "zoo/run.sh: no onnxruntime-node" >&2; exit 1; }
  export NODE_PATH="$cache/ort/node_modules"
  if ! "$PY" tests/onnx/zoo_models.py "$out" "${models[@]}" 2> "$out/export.log"; then
    tail -3 "$out/export.log"; exit 1
  fi
  names=$(awk '$3 == "static" {sub(/_static$/, "", $1); print $1}' "$out/runs.txt")
  ort_ms() {  # ort_ms MODEL INPUT THREADS
    node tests/onnx/ort_reference.js time "$1" "$3" "$iterations" "$2" 2> "$out/ort.err" |
      sed -n 's/^median_ms=//p' | grep . || echo FAILED
  }
  torch_ms() {  # torch_ms NAME INPUT THREADS
    "$PY" bench/zoo/torch_time.py "$1" "$3" "$iterations" "$2" 2> "$out/torch.err" |
      sed -n 's/^median_ms=//p' | grep . || echo FAILED
  }
  row='%-20s | %9s %9s %9s %7s %7s | %9s %9s %9s %7s %7s | %6s %8s\n'
  printf "$row" model "hexir 1t" "ort 1t" "torch 1t" "/ort" "/torch" \
    "hexir 2t" "ort 2t" "torch 2t" "/ort" "/torch" "2t/1t" "dyn/sta"
  for name in $names; do
    for kind in static dynamic; do
      m="$out/${name}_$kind"
      if ! { "$IMPORT" "$m.onnx" -o "$m.mlir" && "$COMPILE" "$m.mlir" --target=cpu -o "$m.vmfb"; } \
           > "$m.compile.log" 2>&1; then
        echo "$name: $kind export NOT COMPILED: $(grep -m1 -i error "$m.compile.log")"
        continue 2
      fi
      rm -f "$m.mlir"  # the weights inline: up to 100 MB of text
    done
    x="$out/${name}_static.0.in.npy"
    declare -A t=()
    for th in 1 2; do
      t[h$th]=$(hexir_ms "$out/${name}_static.t$th.txt" "$th" "$out/${name}_static.vmfb" --input=@"$x" --no-baselines)
      t[d$th]=$(hexir_ms "$out/${name}_dynamic.t$th.txt" "$th" "$out/${name}_dynamic.vmfb" --input=@"$x" --no-baselines)
      t[o$th]=$(ort_ms "$out/${name}_static.onnx" "$x" "$th")
      t[p$th]=$(torch_ms "$name" "$x" "$th")
    done
    printf "$row" "$name" \
      "${t[h1]}" "${t[o1]}" "${t[p1]}" "$(ratio "${t[h1]}" "${t[o1]}")" "$(ratio "${t[h1]}" "${t[p1]}")" \
      "${t[h2]}" "${t[o2]}" "${t[p2]}" "$(ratio "${t[h2]}" "${t[o2]}")" "$(ratio "${t[h2]}" "${t[p2]}")" \
      "$(ratio "${t[h2]}" "${t[h1]}")" "$(ratio "${t[d1]}" "${t[h1]}")"
  done
  echo "(ms per call, median of $iterations; /ort, /torch = Hexir's time over onnxruntime's, PyTorch"
  echo " eager's; 2t/1t = Hexir's time on 2 threads over 1; dyn/sta = the dynamic export's time over"
  echo " the static one's, same input, 1 thread)"
fi

if [ "$kernels" = 1 ]; then
  instantiate() {  # instantiate NAME TEMPLATE SUBSTITUTIONS...
    local name=$1 template=$2
    shift 2
    local args=()
    for kv in "$@"; do args+=(-e "s/@${kv%%=*}@/${kv#*=}/g"); done
    sed "${args[@]}" "bench/$template.mlir.in" > "$out/$name.mlir" &&
      "$COMPILE" "$out/$name.mlir" --target=cpu -o "$out/$name.vmfb" 2> "$out/$name.compile.log"
  }
  for n in 512 1024; do
    instantiate "gemm_f32_$n" gemm M=$n N=$n K=$n T=f32 ACC=f32 || { echo "gemm_f32_$n: NOT COMPILED"; continue; }
    line="matmul f32 ${n}^3:"
    declare -A g=()
    for th in 1 2; do
      g[$th]=$(hexir_ms "$out/gemm_f32_$n.t$th.txt" "$th" "$out/gemm_f32_$n.vmfb" \
                 --input="${n}x${n}xf32=0.01" --input="${n}x${n}xf32=0.01")
      blas=$(sed -n 's/.*Hexir\/baseline = \([0-9.]*x\).*/\1/p' "$out/gemm_f32_$n.t$th.txt" | head -1)
      gflops=$(awk -v n=$n -v ms="${g[$th]}" 'BEGIN {if (ms > 0) printf "%.1f", 2 * n^3 / ms / 1e6}')
      line="$line ${th}t ${g[$th]} ms ($gflops GFLOP/s, Hexir/OpenBLAS time ${blas:-?});"
    done
    echo "$line 2t speed-up $(ratio "${g[1]}" "${g[2]}")x"
    # The same module's least and CPU times with OpenBLAS's (steadier than medians under load).
    for th in 1 2; do "$PY" bench/zoo/gemm_times.py "$BENCH" "$out/gemm_f32_$n.vmfb" "$n" "$th"; done
  done
  for c in "elementwise_64MiB|elementwise|N=16777216|--input=16777216xf32=0.5" \
           "softmax_4096x4096|softmax|R=4096 C=4096|--input=4096x4096xf32=0.5"; do
    IFS='|' read -r name template subs input <<< "$c"
    instantiate "$name" "$template" $subs || { echo "$name: NOT COMPILED"; continue; }
    for th in 1 2; do
      ms=$(hexir_ms "$out/$name.t$th.txt" "$th" "$out/$name.vmfb" "$input" --no-baselines)
      copy=$(awk '/^peaks:/ {for (i = 1; i < NF; ++i) if ($(i+1) ~ /^GB\/s/) {print $i; exit}}' "$out/$name.t$th.txt")
      awk -v name="$name" -v th=$th -v ms="$ms" -v copy="$copy" 'BEGIN {
        gbps = 2 * 64 * 1048576 / (ms / 1000) / 1e9
        printf "%s %dt: %s ms, %.1f GB/s read + write, memcpy %s GB/s (1 thread): %.0f%% of memcpy\n",
               name, th, ms, gbps, copy, (copy > 0) ? 100 * gbps / copy : 0}'
    done
  done
fi
