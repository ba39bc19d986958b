#!/usr/bin/env bash
# Matrix-vector (M = 1) kernels on CUDA: numerics against the CPU target and bandwidth.
#   here (LLVM, Bazel):    bash bench/gemv/run.sh --pack DIR
#     compiles gemv_f16/gemv_f32 (--target=cuda), checks.mlir and column_checks.mlir (cuda
#     and cpu), writes the checks' random inputs (and f64 references of the column checks)
#     and copies hexir-run / hexir-bench into DIR (about 10 MB).
#   on the GPU machine:    bash bench/gemv/run.sh DIR
#     runs every check on both targets and compares (compare.py: integers exactly, floats
#     within 1e-5 of the largest magnitude; column checks also CUDA against the f64
#     reference), then hexir-bench on each gemv module (per
#     dispatch: time, GB/s, % of the copy roof, cuBLAS ratio for f32). Exit 1 on a mismatch.
set -uo pipefail
cd "$(dirname "$0")/../.."
HERE=bench/gemv
if [ "${1:-}" = "--pack" ]; then
  set -e
  [ -n "${2:-}" ] || { echo "usage: run.sh --pack DIR"; exit 2; }
  out=$2; mkdir -p "$out/in" "$out/bin"
  bazel build --jobs=2 //tools/hexir-compile //tools/hexir-run //tools/hexir-bench >/dev/null 2>&1
  for t in hexir-run hexir-bench; do cp -fL "bazel-bin/tools/$t/$t" "$out/bin/"; done
  C=bazel-bin/tools/hexir-compile/hexir-compile
  for m in gemv_f16 gemv_f32 checks; do "$C" "$HERE/$m.mlir" --target=cuda --cpu=x86-64-v3 -o "$out/$m.cuda.vmfb"; done
  "$C" "$HERE/checks.mlir" --target=cpu --cpu=x86-64-v3 -o "$out/checks.cpu.vmfb"
  for t in cuda cpu; do "$C" "$HERE/column_checks.mlir" --target=$t --cpu=x86-64-v3 -o "$out/column_checks.$t.vmfb"; done
  python3 "$HERE/make_inputs.py" "$out/in" > "$out/in/checks.txt"
  echo "run.sh: packed into $out"
  exit 0
fi
D=${1:?usage: run.sh DIR (made by run.sh --pack DIR)}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
status=0; i=0
while read -r module fn ins; do
  i=$((i + 1)); args=(); for a in $ins; do args+=("--input=$a"); done
  for t in cpu cuda; do
    "$D/bin/hexir-run" --module="$D/$module.$t.vmfb" --device=$t --function="$fn" "${args[@]}" \
      --output=@"$tmp/$i.$t.npy" >/dev/null 2>"$tmp/$i.$t.err" || { echo "$fn $t: FAILED $(tail -1 "$tmp/$i.$t.err")"; status=1; }
  done
  [ -f "$tmp/$i.cuda.npy" ] && [ -f "$tmp/$i.cpu.npy" ] || continue
  r=$(PYTHONPATH=$HERE python3 "$HERE/compare.py" "$tmp/$i.cuda.npy" "$tmp/$i.cpu.npy" 1e-5) || status=1
  echo "$fn ${ins##*/}: $r"
  if [ -f "$D/in/ref/$fn.npy" ]; then
    r=$(PYTHONPATH=$HERE python3 "$HERE/compare.py" "$tmp/$i.cuda.npy" "$D/in/ref/$fn.npy" 1e-5) || status=1
    echo "$fn cuda vs f64 reference: $r"
  fi
done < <(sed 's/^/checks /' "$D/in/checks.txt"; sed 's/^/column_checks /' "$D/in/column_checks.txt")
for t in f16 f32; do
  "$D/bin/hexir-bench" --module="$D/gemv_$t.cuda.vmfb" --device=cuda --function=main --fill-inputs=0.01 \
    --iterations=30 > "$tmp/bench_$t.txt" 2>&1 || status=1
  echo "--- gemv $t"; grep -E "peaks|main_dispatch" "$tmp/bench_$t.txt" | cut -c1-200
done
exit $status
