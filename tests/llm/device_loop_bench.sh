#!/usr/bin/env bash
# @generate's decode loop on the device against the chunked host loop (not a test; issue 18,
# H200): ms per generated token of stories260K (f32, cache 512) and random768 (f16 weights,
# gpu_decode_bench.sh's shape, cache 256) imported without and with `hexir-import
# --device-loop`, alternating 3 rounds (best of each), with PyTorch's CUDA-graph replay of one
# decode step (tests/llm/torch_decode_bench.py) in the same run; then `hexir-bench` of the
# device-loop module's @generate (submissions, graph launches and kernels per call).
# Two halves:
#   here (LLVM, Bazel):  bash tests/llm/device_loop_bench.sh --pack DIR
#     compiles the four CUDA modules into DIR (random768's from a header-only sparse file).
#   on the GPU machine:  bash tests/llm/device_loop_bench.sh DIR BIN [TOKENS=200]
#     DIR: the modules and stories260K.bin; BIN: hexir-generate and hexir-bench; PyTorch from
#     HEXIR_TORCH_PYTHON (default python3). random768's checkpoint is regenerated there.
set -uo pipefail
cd "$(dirname "$0")/../.."
BENCH_PY=tests/llm/torch_decode_bench.py
RANDOM768=(--dim 768 --hidden 2048 --layers 12 --heads 12 --kv-heads 12 --vocab 32000 --seq-len 256 --seed 768)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ "${1:-}" = "--pack" ]; then
  set -e
  out=$(mkdir -p "$2" && cd "$2" && pwd)
  shared=${HEXIR_SHARED_DIR:-$(cd .. && pwd)/shared}
  IMPORT=${HEXIR_IMPORT:-bazel-bin/tools/hexir-import/hexir-import}
  COMPILE=${HEXIR_COMPILE:-bazel-bin/tools/hexir-compile/hexir-compile}
  cp "$shared/models/stories260K.bin" "$out/"
  "${PACK_PYTHON:-/usr/bin/python3}" "$BENCH_PY" --write-random "$tmp/random768.bin" "${RANDOM768[@]}" --header-only
  for form in chunked device; do
    flag=--host-loop; [ $form = device ] && flag=--device-loop
    "$IMPORT" "$shared/models/stories260K.bin" $flag -o "$tmp/s.mlir"
    "$COMPILE" "$tmp/s.mlir" --target=cuda --cpu=x86-64-v3 -o "$out/stories260K_$form.cuda.vmfb"
    "$IMPORT" "$tmp/random768.bin" --weights=f16 $flag -o "$tmp/r.mlir"
    "$COMPILE" "$tmp/r.mlir" --target=cuda --cpu=x86-64-v3 -o "$out/random768_f16_$form.cuda.vmfb"
  done
  echo "device_loop_bench: modules in $out: $(cd "$out" && echo *.vmfb)"
  exit 0
fi

DIR=$1 BIN=$2 TOKENS=${3:-200}
PY=${HEXIR_TORCH_PYTHON:-python3}
"$PY" "$BENCH_PY" --write-random "$tmp/random768.bin" "${RANDOM768[@]}" || { echo "writing random768 failed"; exit 1; }
# ms NAME MODULE CKPT TOKENS: ms per generated token, fastest of 3 calls; ids kept in $tmp/NAME.ids
ms() {
  local err
  err=$(timeout 120 "$BIN/hexir-generate" --module="$2" --parameters="$3" --device=cuda --max-tokens="$4" \
    --repeat=3 --timing 2>&1 >"$tmp/$1.ids") || { echo "-"; echo "$err" | tail -3 >&2; return; }
  sed -n 's/^hexir-generate: .* + \([0-9]*\) generated tokens in \([0-9.]*\) ms.*/\1 \2/p' <<<"$err" |
    awk '{ if ($1 > 0) printf "%.4f", $2 / $1; else print "-" }'
}
best() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == "-") print a; else if (a == "" || b + 0 < a + 0) print b; else print a }'; }
status=0
for pair in "stories260K:$DIR/stories260K.bin:$TOKENS:f32" "random768_f16:$tmp/random768.bin:$((TOKENS < 255 ? TOKENS : 255)):f16"; do
  IFS=: read -r name ckpt tokens dtype <<<"$pair"
  chunked="" device=""
  for _ in 1 2 3; do
    chunked=$(best "$chunked" "$(ms "${name}_chunked" "$DIR/${name}_chunked.cuda.vmfb" "$ckpt" "$tokens")")
    device=$(best "$device" "$(ms "${name}_device" "$DIR/${name}_device.cuda.vmfb" "$ckpt" "$tokens")")
  done
  same=no; cmp -s "$tmp/${name}_chunked.ids" "$tmp/${name}_device.ids" && same=yes
  [ "$same" = yes ] || status=1
  graph=$(timeout 150 "$PY" "$BENCH_PY" "$ckpt" --device cuda --dtype "$dtype" --tokens "$tokens" --repeat 3 \
    --print-ids 0 2>/dev/null | sed -n 's/^graph_ms_per_token: //p')
  awk -v m="$name" -v n="$tokens" -v c="$chunked" -v d="$device" -v g="${graph:--}" -v s="$same" 'BEGIN {
    printf "%-14s tokens %3d  chunked %8s  device-loop %8s  chunked/device %5s  torch-graph %8s  device/torch %5s  ids equal: %s\n",
      m, n, c, d, (c + 0 > 0 && d + 0 > 0) ? sprintf("%.2f", c / d) : "-", g,
      (d + 0 > 0 && g + 0 > 0) ? sprintf("%.2f", d / g) : "-", s }'
done
# One @generate of the device-loop module: submissions, launches and kernels per call.
"$BIN/hexir-bench" --module="$DIR/stories260K_device.cuda.vmfb" --device=cuda --function=generate \
  --input=1xi64=1 --input=i64="$TOKENS" --fill-inputs=0.01 --iterations=5 --no-baselines 2>&1 |
  grep -E "dispatches per call|per steady call|wall \(invoke" | sed 's/^/stories260K device loop, hexir-bench: /'
# Where a step's time goes: the chunked module's decode kernels in hexir-bench's profiled mode
# (each chunk's graph replayed with event nodes around each kernel: what a kernel adds inside
# the replay; a device loop's body is not reported to the profiler), by time per call: total
# us, entry, launches per call, us per launch.
"$BIN/hexir-bench" --module="$DIR/stories260K_chunked.cuda.vmfb" --device=cuda --function=generate \
  --input=1xi64=1 --input=i64=64 --fill-inputs=0.01 --iterations=3 --no-baselines --peak-gbps=4800 \
  --peak-gflops=60000 2>&1 |
  awk '/per-dispatch breakdown/ { on = 1; next } /^\[2\]/ { on = 0 }
       on && $1 ~ /_dispatch_/ && $1 !~ /prefill/ { printf "%9.1f us  %-24s n=%-5s %s us\n", $2 * $3, $1, $2, $3 }' |
  sort -rn | head -12 | sed 's/^/stories260K chunked, 64 tokens, per call: /'
# Device time of each kernel of a device-loop step, without the profiler's launch overhead:
# Nsight Compute (where installed) on the device-loop module run as stream launches
# (HEXIR_CUDA_DEVICE_LOOPS=0: the same kernels, each a launch ncu can see), 4 tokens, the
# least gpu__time_duration of each @generate kernel, largest first.
NCU=${HEXIR_NCU:-$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)}
if [ -n "$NCU" ]; then
  HEXIR_CUDA_DEVICE_LOOPS=0 timeout 120 "$NCU" --kernel-name regex:'^generate_dispatch' \
    --metrics gpu__time_duration.sum --csv --print-units base "$BIN/hexir-generate" \
    --module="$DIR/stories260K_device.cuda.vmfb" --parameters="$DIR/stories260K.bin" --device=cuda \
    --max-tokens=4 >"$tmp/ncu.csv" 2>"$tmp/ncu.err" || tail -3 "$tmp/ncu.err" >&2
  "$PY" - "$tmp/ncu.csv" <<'PY' | sed 's/^/stories260K device loop, ncu: /'
import collections, csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows:
    sys.exit(print("no kernel rows"))
h = rows[0]
name, value = h.index("Kernel Name"), h.index("Metric Value")
least = collections.defaultdict(lambda: float("inf"))
for r in rows[1:]:
    try:
        least[r[name]] = min(least[r[name]], float(r[value].replace(",", "")))  # "5,120"
    except ValueError:
        pass
for k, ns in sorted(least.items(), key=lambda kv: -kv[1]):
    print(f"{ns / 1000:8.2f} us  {k}")
print(f"{sum(least.values()) / 1000:8.1f} us  the sum over {len(least)} kernels")
PY
else
  echo "stories260K device loop, ncu: not installed (HEXIR_NCU names it)"
fi
exit $status
