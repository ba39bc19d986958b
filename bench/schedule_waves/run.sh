#!/usr/bin/env bash
# Waves vs serial on one program of independent work: chains.mlir (8 independent chains of 4
# small GEMVs, 32 dispatches in one command buffer) compiled with --schedule=waves (3
# barriers) and --schedule=serial (31), each timed by hexir-bench in one run; prints the
# median steady-state wall time per call of each and the ratio waves / serial (below 1:
# waves is faster) per device. On CUDA a graph's edges come from the kernels' ranges whatever
# the barriers (hal/drivers/cuda/README.md), so the serial module runs as 8 branches too: the
# serial module is also timed with HEXIR_CUDA_GRAPH_EDGES=barriers (its 31 barriers kept whole,
# one chain: the order --schedule=serial states), and waves / that chain is printed beside.
#   bash bench/schedule_waves/run.sh [--device=cpu|cuda]... [--iterations=N] [--cpu-threads=N]
#                                    [--compile-only|--run-only] [--out=DIR]
# Devices: cpu, plus cuda when nvidia-smi finds a GPU (or as given). Binaries come from
# $HEXIR_BIN (a folder with hexir-compile and hexir-bench) or bazel-bin. --compile-only
# writes the modules to --out (here, where LLVM is); --run-only times modules found there (on
# the GPU machine). Not a test: no limits.
set -euo pipefail
cd "$(dirname "$0")/../.."
devices=() iterations=200 threads=2 mode=both out=""
for arg in "$@"; do
  case "$arg" in
    --device=*) devices+=("${arg#--device=}") ;;
    --iterations=*) iterations=${arg#--iterations=} ;;
    --cpu-threads=*) threads=${arg#--cpu-threads=} ;;
    --compile-only) mode=compile ;;
    --run-only) mode=run ;;
    --out=*) out=${arg#--out=} ;;
    *) echo "schedule_waves: unknown argument '$arg'" >&2; exit 1 ;;
  esac
done
if [ ${#devices[@]} -eq 0 ]; then
  devices=(cpu)
  if nvidia-smi -L >/dev/null 2>&1; then devices+=(cuda); fi
fi
bin() {
  if [ -n "${HEXIR_BIN:-}" ]; then echo "$HEXIR_BIN/$1"; else echo "bazel-bin/tools/$1/$1"; fi
}
if [ -z "$out" ]; then out=$(mktemp -d); trap 'rm -rf "$out"' EXIT; fi
mkdir -p "$out"

# wall_us REPORT: the median steady-state wall per call (microseconds) from a hexir-bench report.
wall_us() {
  awk '/wall \(invoke \+ wait idle\):/ {
         v = $6; u = $7;
         if (u == "ms") v *= 1000; else if (u == "s") v *= 1000000; else if (u == "ns") v /= 1000;
         print v; exit }' "$1"
}

for device in "${devices[@]}"; do
  target=${device%%:*}
  schedules=(waves serial)
  [ "$target" = cuda ] && schedules+=(serial-chain)
  for schedule in "${schedules[@]}"; do
    module="$out/chains.${schedule%-chain}.$target.vmfb"
    edges=ranges
    [ "$schedule" = serial-chain ] && edges=barriers
    if [ "$mode" != run ] && [ "$schedule" != serial-chain ]; then
      "$(bin hexir-compile)" bench/schedule_waves/chains.mlir --target="$target" \
        --schedule="$schedule" -o "$module"
    fi
    if [ "$mode" != compile ]; then
      [ -f "$module" ] || { echo "schedule_waves: $module is missing (compile it first)" >&2; exit 1; }
      HEXIR_CUDA_GRAPH_EDGES=$edges "$(bin hexir-bench)" --module="$module" --device="$device" --function=main \
        --fill-inputs=0.01 --iterations="$iterations" --no-baselines --cpu-threads="$threads" \
        > "$out/$schedule.$target.txt"
    fi
  done
  [ "$mode" = compile ] && continue
  waves=$(wall_us "$out/waves.$target.txt")
  serial=$(wall_us "$out/serial.$target.txt")
  [ -n "$waves" ] && [ -n "$serial" ] || { echo "schedule_waves: no wall time in the $device reports ($out)" >&2; exit 1; }
  awk -v d="$device" -v w="$waves" -v s="$serial" 'BEGIN {
    printf "%s: waves %.1f us, serial %.1f us per call (median); waves/serial = %.2f\n", d, w, s, w / s }'
  if [ "$target" = cuda ]; then
    chain=$(wall_us "$out/serial-chain.$target.txt")
    awk -v d="$device" -v w="$waves" -v c="$chain" 'BEGIN {
      printf "%s: serial as one chain (HEXIR_CUDA_GRAPH_EDGES=barriers) %.1f us; waves/serial-chain = %.2f\n", d, c, w / c }'
  fi
done
