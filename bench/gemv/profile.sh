#!/usr/bin/env bash
# Kernel times of the bench suite's GEMV cases on the H200 without the per-dispatch overhead of
# hexir-bench's profiled stream mode: Nsight Compute (ncu) times each kernel alone with the L2
# flushed before it (so a 32 MB weight is read from DRAM, as in a decode step), for Hexir's
# kernels and for cuBLAS (PyTorch's matmul of the same shapes), next to bench/run.sh's table.
#   here (LLVM, Bazel):   bash bench/gemv/profile.sh --pack DIR [NAME=COMPILER[@CASE,...] ...]
#     compiles the cases with $HEXIR_BIN/hexir-compile or bazel-bin's (variant "main"), and with each
#     COMPILER (a hexir-compile, or a script running one) as variant NAME, all cases or those
#     listed (an A/B of kernel choices in one GPU run); copies hexir-bench and the scripts.
#   on the GPU machine:   bash bench/gemv/profile.sh DIR
#     prints per case and variant: ncu's kernel time (us), DRAM MB read, GB/s, % of the copy
#     roof (4.19 TB/s, hexir-bench's measured copy) and of the 4.8 TB/s HBM peak; cuBLAS's
#     kernels likewise; then bench/run.sh's summary (variant main).
set -uo pipefail
cd "$(dirname "$0")/../.."
CASES="gemv_bf16_4096x4096,gemv_bf16_4096x14336,gemv_bf16_2048x256,gemv_nk_bf16_4096x4096,gemv_nk_bf16_14336x4096,gemv_nk_bf16_256x2048,decode_ffn_bf16_4096x14336"
if [ "${1:-}" = "--pack" ]; then
  set -e
  out=${2:?usage: profile.sh --pack DIR [NAME=HEXIR_COMPILE ...]}; shift 2
  mkdir -p "$out/bin" "$out/scripts/bench"
  cp -fL bazel-bin/tools/hexir-bench/hexir-bench "$out/bin/"
  cp -r bench/run.sh bench/results.py bench/*.mlir.in bench/gemv "$out/scripts/bench/"
  variants=("main=${HEXIR_BIN:-bazel-bin/tools/hexir-compile}/hexir-compile" "$@")
  for v in "${variants[@]}"; do  # NAME=COMPILER[@CASE,CASE...]
    name=${v%%=*} spec=${v#*=}; compiler=$(readlink -f "${spec%%@*}") only=$CASES
    [[ "$spec" == *@* ]] && only=${spec#*@}
    if ls "$out/$name"/*.cuda.vmfb >/dev/null 2>&1; then continue; fi  # packed before
    mkdir -p "$out/$name/cc"; cp -fL "$compiler" "$out/$name/cc/hexir-compile"
    HEXIR_BIN="$out/$name/cc" bash bench/run.sh --device=cuda --compile-only --only="$only" --out="$out/$name" >/dev/null
    rm -rf "$out/$name/cc" "$out/$name"/*.mlir "$out/$name"/*.compile.log
  done
  echo "profile.sh: packed $(cd "$out" && ls -d */ | tr -d / | tr '\n' ' ')into $out"
  exit 0
fi
D=$(cd "${1:?usage: profile.sh DIR}" && pwd)
NCU=${NCU:-ncu}
metrics=gpu__time_duration.sum,dram__bytes_read.sum
# inputs of a case, from bench/run.sh's table
inputs() { grep -o "\"$1|[^\"]*\"" "$D/scripts/bench/run.sh" | head -1 | tr -d '"' | cut -d'|' -f4 | tr ';' '\n' | sed 's/^/--input=/'; }
summarize() {  # ncu --csv --print-units base rows -> one line per kernel (fastest launch) or per launch ("all")
  python3 -c '
import csv, sys
COPY = 4190.0  # GB/s: the H200 device-to-device copy (read + write) hexir-bench measures
launches = {}
for r in csv.DictReader(l for l in sys.stdin if l.startswith("\"")):
    k = (int(r["ID"]), r["Kernel Name"][:48], r.get("Grid Size", ""), r.get("Block Size", ""))
    launches.setdefault(k, {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
by = {}
for (i, name, grid, block), m in sorted(launches.items()):
    key = (i,) if sys.argv[1] == "all" else (name,)
    by.setdefault(key, []).append((m["gpu__time_duration.sum"] / 1e3, m["dram__bytes_read.sum"], name, grid, block))
if not by: print("  (ncu reported no kernels)")
for v in by.values():
    t, b, name, grid, block = min(v)
    gbps = b / t / 1e3
    print("  %-30s grid %-13s block %-12s %8.2f us %7.2f MB %5.0f GB/s %5.1f%% of copy %4.1f%% of HBM" % (name, grid, block, t, b / 1e6, gbps, gbps / COPY * 100, gbps / 48))
' "${1:-}"
}
for v in $(cd "$D" && ls -d */ | tr -d / | grep -v '^bin$\|^scripts$'); do
  for c in ${CASES//,/ }; do
    m="$D/$v/$c.cuda.vmfb"; [ -f "$m" ] || continue
    mapfile -t ins < <(inputs "$c")
    echo "$v $c:"
    "$NCU" --clock-control none --csv --print-units base --metrics "$metrics" -k regex:dispatch \
      "$D/bin/hexir-bench" --module="$m" --device=cuda --iterations=1 --no-baselines \
      --peak-gbps=4800 --peak-gflops=990000 "${ins[@]}" 2>/dev/null | summarize
  done
done
echo "cuBLAS (torch.matmul, bf16; ncu, L2 flushed):"
"$NCU" --clock-control none --csv --print-units base --metrics "$metrics" python3 -c '
import torch
for k, n in ((4096, 4096), (4096, 14336), (2048, 256), (14336, 4096)):
    x = torch.randn(1, k, device="cuda", dtype=torch.bfloat16); w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    wt = w.t().contiguous()
    for _ in range(2): torch.matmul(x, w); torch.nn.functional.linear(x, wt)
torch.cuda.synchronize()' 2>/dev/null | summarize all
echo "bench/run.sh (variant main; per-dispatch times inside graph replay, hexir-bench --cuda-profile=graph):"
(cd "$D/scripts" && HEXIR_BIN="$D/bin" bash bench/run.sh --device=cuda --run-only --only="$CASES" --out="$D/main" \
   --iterations=20 | grep -v "^reports\|^results")
