#!/usr/bin/env bash
# CPU networks and kernels against their peers, in one run (bench/README.md, "CPU networks
# against onnxruntime"):
#   zoo:     the torchvision zoo of tests/onnx/zoo_models.py (static and dynamic exports,
#            random weights), Hexir (hexir-import with the weights inline -> hexir-compile ->
#            hexir-bench) vs onnxruntime 1.30 (onnxruntime-node's tests/onnx/ort_reference.js
#            time, or where node has none, Python onnxruntime's bench/small_onnx/ort_time.py)
#            and PyTorch eager (python3-torch, bench/zoo/torch_time.py: the same model and seed),
#            each on every thread count of --threads; the dynamic export runs on the static
#            export's input.
#   kernels: f32 matmul 512^3 and 1024^3 vs OpenBLAS sgemm (hexir-bench's baseline, same thread
#            count through OPENBLAS_NUM_THREADS; then least and CPU times of both,
#            zoo/gemm_times.py); a 64 MiB elementwise chain and a 4096x4096
#            softmax vs a one-thread memcpy of the same bytes (64 MiB read + 64 MiB written).
#
#   bash bench/zoo/run.sh [--out=DIR] [--iterations=N] [--threads=1,2,...] [--cpu=NAME]
#                         [--zoo-only | --kernels-only] [MODEL...]
#   bash bench/zoo/run.sh --pack=DIR [--cpu=NAME] [...] [MODEL...]   # here: export and compile only
#   bash bench/zoo/run.sh --from=DIR [--threads=...] [...]           # another machine: run DIR
# Needs `bazel build //tools/hexir-import //tools/hexir-compile //tools/hexir-bench`, Debian's
# python3-torch/torchvision (the export) and node; onnxruntime-node comes from
# tools/fetch_test_models.sh's npm cache. --pack writes the exports, the compiled modules (for
# --cpu, default the host: `--cpu=sapphirerapids` for the H200 machine's host), hexir-bench
# and the OpenBLAS library with its dependencies into DIR; --from needs neither LLVM nor node
# (tools/gpu/run.sh's machine: `bash bench/zoo/run.sh --from=DIR --threads=1,2,4,8,16`).
# --threads (default 1,2): one thread is the calling thread (--cpu-threads=0), N > 1 are N
# workers. Prints one table row per model and thread count, one line per kernel and thread
# count; the reports of every hexir-bench run stay in DIR. Time ratios are Hexir/peer: below 1
# is faster.
set -uo pipefail
cd "$(dirname "$0")/../.."

out=/tmp/hexir-bench-zoo iterations=10 zoo=1 kernels=1 models=() threads=1,2 cpu="" pack="" from=""
for a in "$@"; do
  case "$a" in
    --out=*) out="${a#*=}" ;;
    --iterations=*) iterations="${a#*=}" ;;
    --threads=*) threads="${a#*=}" ;;
    --cpu=*) cpu="${a#*=}" ;;
    --pack=*) pack="${a#*=}" out="$pack" ;;
    --from=*) from="${a#*=}" out="$from" ;;
    --zoo-only) kernels=0 ;;
    --kernels-only) zoo=0 ;;
    --*) echo "zoo/run.sh: unknown argument '$a'" >&2; exit 2 ;;
    *) models+=("$a") ;;
  esac
done
IFS=', ' read -r -a THREADS <<< "$threads"
for th in "${THREADS[@]}"; do
  [[ "$th" =~ ^[1-9][0-9]*$ ]] || { echo "zoo/run.sh: --threads: '$th' is not a thread count" >&2; exit 2; }
done
if [ -n "$from" ]; then
  [ -f "$from/packed.txt" ] || { echo "zoo/run.sh: --from=$from: no packed.txt (made by --pack)" >&2; exit 2; }
  [ "${#models[@]}" = 0 ] || { echo "zoo/run.sh: --from runs every packed model; name none" >&2; exit 2; }
fi
mkdir -p "$out"
bin="${HEXIR_BIN:-bazel-bin/tools}"
tool() { [ -n "${HEXIR_BIN:-}" ] && echo "$bin/$1" || echo "$bin/$1/$1"; }
IMPORT=$(tool hexir-import) COMPILE=$(tool hexir-compile) BENCH=$(tool hexir-bench)
if [ -n "$from" ]; then
  BENCH="$from/bin/hexir-bench"
  export LD_LIBRARY_PATH="$from/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"  # OpenBLAS (--pack)
fi
PY=/usr/bin/python3  # Debian's, with torch and torchvision (the export)
# Another machine's (--from): the python3 on PATH (the GPU machine's has torch and onnxruntime).
[ -z "$from" ] && [ -x "$PY" ] || PY=$(command -v python3)
compile_flags=(--target=cpu)
[ -z "$cpu" ] || compile_flags+=(--cpu="$cpu")

# Median wall per call (ms) of hexir-bench on MODULE on THREADS threads; the report is kept.
# One thread is the calling thread (--cpu-threads=0), as onnxruntime's intra-op pool of 1: a
# worker of its own would add a wake-up per dispatch, milliseconds on a loaded machine.
hexir_ms() {  # hexir_ms REPORT THREADS MODULE ARGS...
  local report=$1 threads=$2
  shift 2
  OPENBLAS_NUM_THREADS=$threads "$BENCH" --module="$1" --cpu-threads="$((threads == 1 ? 0 : threads))" \
    --iterations="$iterations" "${@:2}" > "$report" 2>&1 || { echo "FAILED"; return; }
  awk '/wall \(invoke \+ wait idle\)/ {printf "%.3f", $(NF-1) / 1000; exit}' "$report"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "-"}'; }

if [ -n "$pack" ]; then  # what --from needs besides the working tree
  mkdir -p "$pack/bin" "$pack/lib"
  cp -L "$(tool hexir-bench)" "$pack/bin/"
  blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libopenblas.so.0 2>/dev/null)
  if [ -f "$blas" ]; then
    cp -L "$blas" "$pack/lib/libopenblas.so.0"
    for dep in libgfortran.so.5 libquadmath.so.0; do cp -L "/lib/x86_64-linux-gnu/$dep" "$pack/lib/" 2>/dev/null; done
  else
    echo "zoo/run.sh: no OpenBLAS here to carry: the matmul rows will have no baseline" >&2
  fi
  echo "packed on $(hostname) $(date -u +%FT%TZ), --cpu=${cpu:-host}" > "$pack/packed.txt"
fi

if [ "$zoo" = 1 ]; then
  if [ -z "$from" ]; then
    cache=$(bash tools/fetch_test_models.sh) || { echo "zoo/run.sh: no onnxruntime-node" >&2; exit 1; }
    export NODE_PATH="$cache/ort/node_modules"
    if ! "$PY" tests/onnx/zoo_models.py "$out" "${models[@]}" 2> "$out/export.log"; then
      tail -3 "$out/export.log"; exit 1
    fi
  fi
  names=$(awk '$3 == "static" {sub(/_static$/, "", $1); print $1}' "$out/runs.txt")
  ort_ms() {  # ort_ms MODEL INPUT THREADS
    if [ -z "$from" ] && command -v node > /dev/null; then
      node tests/onnx/ort_reference.js time "$1" "$3" "$iterations" "$2" 2> "$out/ort.err"
    else
      "$PY" bench/small_onnx/ort_time.py "$1" "$2" "$3" "$iterations" cpu 2> "$out/ort.err"
    fi | sed -n 's/^median_ms=//p' | grep . || echo FAILED
  }
  torch_ms() {  # torch_ms NAME INPUT THREADS
    "$PY" bench/zoo/torch_time.py "$1" "$3" "$iterations" "$2" 2> "$out/torch.err" |
      sed -n 's/^median_ms=//p' | grep . || echo FAILED
  }
  # Compiled here (--pack, or a plain run); --from finds them.
  if [ -z "$from" ]; then
    for name in $names; do
      for kind in static dynamic; do
        m="$out/${name}_$kind"
        if ! { "$IMPORT" "$m.onnx" -o "$m.mlir" && "$COMPILE" "$m.mlir" "${compile_flags[@]}" -o "$m.vmfb"; } \
             > "$m.compile.log" 2>&1; then
          echo "$name: $kind export NOT COMPILED: $(grep -m1 -i error "$m.compile.log")"
          rm -f "$m.vmfb"
        fi
        rm -f "$m.mlir"  # the weights inline: up to 100 MB of text
      done
    done
  fi
  if [ -z "$pack" ]; then
    row='%-20s %3s | %9s %9s %9s | %6s %6s | %7s %7s | %7s\n'
    printf "$row" model thr hexir ort torch "/ort" "/torch" "hx 1/N" "ort 1/N" "dyn/sta"
    for name in $names; do
      [ -f "$out/${name}_static.vmfb" ] || { echo "$name: no static module"; continue; }
      x="$out/${name}_static.0.in.npy"
      declare -A t=()
      for th in "${THREADS[@]}"; do
        t[h$th]=$(hexir_ms "$out/${name}_static.t$th.txt" "$th" "$out/${name}_static.vmfb" --input=@"$x" --no-baselines)
        t[d$th]=FAILED
        [ ! -f "$out/${name}_dynamic.vmfb" ] ||
          t[d$th]=$(hexir_ms "$out/${name}_dynamic.t$th.txt" "$th" "$out/${name}_dynamic.vmfb" --input=@"$x" --no-baselines)
        t[o$th]=$(ort_ms "$out/${name}_static.onnx" "$x" "$th")
        t[p$th]=$(torch_ms "$name" "$x" "$th")
      done
      first=${THREADS[0]}
      for th in "${THREADS[@]}"; do
        printf "$row" "$name" "$th" "${t[h$th]}" "${t[o$th]}" "${t[p$th]}" \
          "$(ratio "${t[h$th]}" "${t[o$th]}")" "$(ratio "${t[h$th]}" "${t[p$th]}")" \
          "$(ratio "${t[h$first]}" "${t[h$th]}")" "$(ratio "${t[o$first]}" "${t[o$th]}")" \
          "$(ratio "${t[d$th]}" "${t[h$th]}")"
      done
      unset t
    done
    echo "(ms per call, median of $iterations; /ort, /torch = Hexir's time over onnxruntime's, PyTorch"
    echo " eager's; hx 1/N, ort 1/N = each one's speed-up on N threads over the first thread count;"
    echo " dyn/sta = the dynamic export's time over the static one's, same input and threads)"
  fi
fi

if [ "$kernels" = 1 ]; then
  instantiate() {  # instantiate NAME TEMPLATE SUBSTITUTIONS...
    local name=$1 template=$2
    shift 2
    [ -z "$from" ] || { [ -f "$out/$name.vmfb" ]; return; }
    local args=()
    for kv in "$@"; do args+=(-e "s/@${kv%%=*}@/${kv#*=}/g"); done
    sed "${args[@]}" "bench/$template.mlir.in" > "$out/$name.mlir" &&
      "$COMPILE" "$out/$name.mlir" "${compile_flags[@]}" -o "$out/$name.vmfb" 2> "$out/$name.compile.log"
  }
  for n in 512 1024; do
    instantiate "gemm_f32_$n" gemm M=$n N=$n K=$n T=f32 ACC=f32 || { echo "gemm_f32_$n: NOT COMPILED"; continue; }
    [ -z "$pack" ] || continue
    line="matmul f32 ${n}^3:"
    declare -A g=()
    for th in "${THREADS[@]}"; do
      g[$th]=$(hexir_ms "$out/gemm_f32_$n.t$th.txt" "$th" "$out/gemm_f32_$n.vmfb" \
                 --input="${n}x${n}xf32=0.01" --input="${n}x${n}xf32=0.01")
      blas=$(sed -n 's/.*Hexir\/baseline = \([0-9.]*x\).*/\1/p' "$out/gemm_f32_$n.t$th.txt" | head -1)
      gflops=$(awk -v n=$n -v ms="${g[$th]}" 'BEGIN {if (ms > 0) printf "%.1f", 2 * n^3 / ms / 1e6}')
      line="$line ${th}t ${g[$th]} ms ($gflops GFLOP/s, Hexir/OpenBLAS time ${blas:-?}, speed-up $(ratio "${g[${THREADS[0]}]}" "${g[$th]}")x);"
    done
    echo "$line"
    unset g
    # The same module's least and CPU times with OpenBLAS's (steadier than medians under load).
    for th in "${THREADS[@]}"; do "$PY" bench/zoo/gemm_times.py "$BENCH" "$out/gemm_f32_$n.vmfb" "$n" "$th"; done
  done
  for c in "elementwise_64MiB|elementwise|N=16777216|--input=16777216xf32=0.5" \
           "softmax_4096x4096|softmax|R=4096 C=4096|--input=4096x4096xf32=0.5"; do
    IFS='|' read -r name template subs input <<< "$c"
    instantiate "$name" "$template" $subs || { echo "$name: NOT COMPILED"; continue; }
    [ -z "$pack" ] || continue
    for th in "${THREADS[@]}"; do
      ms=$(hexir_ms "$out/$name.t$th.txt" "$th" "$out/$name.vmfb" "$input" --no-baselines)
      copy=$(awk '/^peaks:/ {for (i = 1; i < NF; ++i) if ($(i+1) ~ /^GB\/s/) {print $i; exit}}' "$out/$name.t$th.txt")
      awk -v name="$name" -v th=$th -v ms="$ms" -v copy="$copy" 'BEGIN {
        gbps = 2 * 64 * 1048576 / (ms / 1000) / 1e9
        printf "%s %dt: %s ms, %.1f GB/s read + write, memcpy %s GB/s (1 thread): %.0f%% of memcpy\n",
               name, th, ms, gbps, copy, (copy > 0) ? 100 * gbps / copy : 0}'
    done
  done
fi
[ -z "$pack" ] || echo "zoo/run.sh: packed $(ls "$pack"/*.vmfb 2>/dev/null | wc -l) modules into $pack ($(du -sh "$pack" | cut -f1))"
