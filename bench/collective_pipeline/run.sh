#!/usr/bin/env bash
# The row-parallel pipeline (passes/partition/RowParallelPipeline.cpp) against the unchunked
# module, on N CPU devices of one process (in-process Gloo group, the CPU collective lane):
# tests/partition/row_parallel.mlir.in at M x K x N compiled twice, with the cost model's block
# count (hexir-compile --chunk-collectives) and with `hexir.collective_chunks = 1` (the baseline), each run ROUNDS times
# alternately as `hexir-run --repeat=CALLS`; prints each run's wall seconds, the medians and
# the ratio pipelined / unchunked (below 1: the pipeline is faster), and checks that rank 0's
# results of the two are equal. The model's rates are measured first, on these devices: a
# --trace of the unchunked module gives the all_reduce's GB/s (2 x its bytes over its median
# span) and the matmul's GFLOP/s (its median dispatch span); the model variant is compiled
# with them (--matmul-gflops, --collective-gbps) and its remark (predicted times, chosen
# blocks) printed, so the prediction can be held against the measured ratio.
#   bash bench/collective_pipeline/run.sh [M K N] [RANKS] [CALLS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
M=${1:-2048} K=${2:-64} N=${3:-2048}
RANKS=${4:-2} CALLS=${5:-10} ROUNDS=${6:-3}
BIN=${HEXIR_BIN:-bazel-bin/tools}
COMPILE=$BIN/hexir-compile/hexir-compile RUN=$BIN/hexir-run/hexir-run
TMP=$(mktemp -d)
python3 tests/partition/npy_shards.py make "$TMP" 5 "$RANKS" "x:${M}x${K}:1" "w:${K}x${N}:0" >/dev/null
devices=()
for ((r = 0; r < RANKS; r++)); do devices+=(--device=cpu:threads=1); done
sed "s/@M@/$M/g; s/@K@/$K/g; s/@N@/$N/g; s/@ATTR@/{hexir.collective_chunks = 1 : i64}/" \
  tests/partition/row_parallel.mlir.in >"$TMP/whole.mlir"
"$COMPILE" "$TMP/whole.mlir" --target=cpu -o "$TMP/whole.vmfb"
"$RUN" --module="$TMP/whole.vmfb" "${devices[@]}" --function=row_parallel --repeat=3 \
  --input=@"$TMP/x.r{rank}.npy" --input=@"$TMP/w.r{rank}.npy" --trace="$TMP/rates.json" >/dev/null 2>&1
read -r GFLOPS GBPS < <(python3 - "$TMP/rates.json" "$M" "$K" "$N" "$RANKS" <<'PY'
import json, statistics, sys
events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
m, k, n, ranks = map(int, sys.argv[2:])
# Per call and rank the matmul is the longest dispatch; the all_reduce moves 2 x M x N x 4 bytes.
spans = sorted((e["dur"] for e in events if e["cat"] == "dispatch"), reverse=True)
matmul_us = statistics.median(spans[: 3 * ranks])
collective_us = statistics.median(e["dur"] for e in events if e["cat"] == "collective")
print(f"{2 * m * (k // ranks) * n / matmul_us / 1e3:.3f} {2 * m * n * 4 / collective_us / 1e3:.3f}")
PY
)
echo "measured rates: matmul $GFLOPS GFLOP/s per rank, all_reduce $GBPS GB/s"
sed "s/@M@/$M/g; s/@K@/$K/g; s/@N@/$N/g; s/@ATTR@//" tests/partition/row_parallel.mlir.in >"$TMP/model.mlir"
rates=(--chunk-collectives --matmul-gflops="$GFLOPS" --collective-gbps="$GBPS")
"$COMPILE" "$TMP/model.mlir" --target=cpu --remarks "${rates[@]}" -o "$TMP/model.vmfb" 2>&1 | grep -o "remark: .*" || true
for variant in model whole; do
  extra=(); [ $variant = model ] && extra=("${rates[@]}")
  "$COMPILE" "$TMP/$variant.mlir" --target=cpu "${extra[@]}" --dump-after=hexir-partition -o /dev/null 2>&1 \
    | grep -c 'hexir.all_reduce' | sed "s/^/$variant: all_reduces per call: /"
done
run() {  # run VARIANT OUTPUT: wall seconds of one process making CALLS calls
  local start end
  start=$(date +%s.%N)
  "$RUN" --module="$TMP/$1.vmfb" "${devices[@]}" --function=row_parallel --repeat="$CALLS" \
    --input=@"$TMP/x.r{rank}.npy" --input=@"$TMP/w.r{rank}.npy" --output=@"$2.r{rank}.npy" >/dev/null
  end=$(date +%s.%N)
  python3 -c "print(f'{$end - $start:.3f}')"
}
declare -A times
for ((i = 0; i < ROUNDS; i++)); do
  for variant in whole model; do
    t=$(run $variant "$TMP/$variant.out")
    echo "round $i $variant: $t s"
    times[$variant]+="$t "
  done
done
python3 tests/partition/npy_shards.py compare "$TMP/whole.out.r0.npy" "$TMP/model.out.r0.npy" \
  && echo "rank 0's results: pipelined equal unchunked (1e-5)"
python3 - "${times[model]}" "${times[whole]}" "$M" "$K" "$N" "$RANKS" "$CALLS" <<'PY'
import statistics, sys
model = statistics.median(float(t) for t in sys.argv[1].split())
whole = statistics.median(float(t) for t in sys.argv[2].split())
m, k, n, ranks, calls = sys.argv[3:]
print(f"{m}x{k}x{n} on {ranks} CPU devices, {calls} calls: pipelined {model:.3f} s, "
      f"unchunked {whole:.3f} s (medians): ratio {model / whole:.3f}")
PY
