#!/usr/bin/env bash
# Quantized TinyLlama decode on the GPU, compiler against compiler (not a test; issue 19's H200
# figure and its per-GEMV profile in one short device call). Two halves:
#   here:   bash tests/llm/gpu_quant_profile.sh --pack DIR NAME [COMPILE_BIN]
#     compiles tinyllama_{f16,q4_0,q4_k,q8_0}.cuda.vmfb into DIR/NAME with COMPILE_BIN
#     (default: Bazel's hexir-compile), from the header-only TinyLlama file (as
#     gpu_decode_bench.sh --pack does), and copies hexir-generate, hexir-quantize and
#     torch_decode_bench.py into DIR/bin (the first --pack into DIR).
#   there:  bash tests/llm/gpu_quant_profile.sh DIR [ROUNDS=3] [TOKENS=200]
#     writes the seeded TinyLlama checkpoint, quantizes it, then per model and variant (the
#     folders of DIR but bin): (1) Nsight Compute's least time and DRAM bytes of each kernel of
#     one decode step (ncu --clock-control none, kernels "dispatch", first 2 tokens), as GB/s
#     and % of 4.2 TB/s; (2) ms/token of hexir-generate (TOKENS, fastest of 3 a process),
#     ROUNDS rounds alternating the variants, least and median; (3) whether each variant's ids
#     equal the first variant's.
# Env: HEXIR_NCU (ncu binary; none: the profile is skipped), HEXIR_QPROF_MODELS (default
# "f16 q4_0 q4_k q8_0"), HEXIR_QPROF_NCU_MODELS (default "q4_0 q4_k f16").
set -uo pipefail
cd "$(dirname "$0")/../.."
TINYLLAMA=(--dim 2048 --hidden 5632 --layers 22 --heads 32 --kv-heads 4 --vocab 32000 --seq-len 512 --seed 2048)
read -r -a MODELS <<<"${HEXIR_QPROF_MODELS:-f16 q4_0 q4_k q8_0}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ "${1:-}" = "--pack" ]; then
  set -e
  [ -n "${3:-}" ] || { echo "usage: gpu_quant_profile.sh --pack DIR NAME [COMPILE_BIN]"; exit 2; }
  dir=$2 name=$3
  bazel build --jobs=2 //tools/hexir-import //tools/hexir-compile //tools/hexir-quantize //tools/hexir-generate >/dev/null 2>&1
  COMPILE=${4:-bazel-bin/tools/hexir-compile/hexir-compile}
  mkdir -p "$dir/$name" "$dir/bin"
  cp -Lf bazel-bin/tools/hexir-generate/hexir-generate bazel-bin/tools/hexir-quantize/hexir-quantize \
    tests/llm/torch_decode_bench.py "$dir/bin/"
  /usr/bin/python3 tests/llm/torch_decode_bench.py --write-random "$tmp/t.bin" "${TINYLLAMA[@]}" --header-only
  for m in "${MODELS[@]}"; do
    if [ "$m" = f16 ]; then
      bazel-bin/tools/hexir-import/hexir-import "$tmp/t.bin" --weights=f16 -o "$tmp/$m.mlir"
    else
      bazel-bin/tools/hexir-quantize/hexir-quantize "$tmp/t.bin" -o "$tmp/$m.gguf" --type="$m" >/dev/null
      bazel-bin/tools/hexir-import/hexir-import "$tmp/$m.gguf" -o "$tmp/$m.mlir"
      rm -f "$tmp/$m.gguf"
    fi
    "$COMPILE" "$tmp/$m.mlir" --target=cuda --cpu=x86-64-v3 -o "$dir/$name/tinyllama_$m.cuda.vmfb"
  done
  echo "gpu_quant_profile: $(cd "$dir/$name" && echo *.vmfb) in $dir/$name"
  exit 0
fi

DIR=${1:?usage: gpu_quant_profile.sh DIR [ROUNDS] [TOKENS]}
ROUNDS=${2:-3} TOKENS=${3:-200}
GEN=$DIR/bin/hexir-generate
VARIANTS=()
for d in "$DIR"/*/; do d=${d%/}; d=${d##*/}; [ "$d" = bin ] || VARIANTS+=("$d"); done
NCU=${HEXIR_NCU:-$(command -v ncu || { [ -x /usr/local/cuda/bin/ncu ] && echo /usr/local/cuda/bin/ncu; })}
python3 "$DIR/bin/torch_decode_bench.py" --write-random "$tmp/tinyllama.bin" "${TINYLLAMA[@]}" || exit 1
ckpt() { if [ "$1" = f16 ]; then echo "$tmp/tinyllama.bin"; else echo "$tmp/tinyllama_$1.gguf"; fi; }
for m in "${MODELS[@]}"; do
  [ "$m" = f16 ] || "$DIR/bin/hexir-quantize" "$tmp/tinyllama.bin" -o "$tmp/tinyllama_$m.gguf" --type="$m" >/dev/null || exit 1
done
echo "gpu_quant_profile: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); variants: ${VARIANTS[*]}"

# (1) per-kernel profile
if [ -n "$NCU" ]; then
  for m in ${HEXIR_QPROF_NCU_MODELS:-q4_0 q4_k f16}; do
    for v in "${VARIANTS[@]}"; do
      echo "ncu $v tinyllama_$m (least of the step's launches per kernel and grid; DRAM read):"
      timeout 240 "$NCU" --clock-control none --csv --print-units base -k regex:dispatch -c 700 \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__block_size \
        "$GEN" --module="$DIR/$v/tinyllama_$m.cuda.vmfb" --parameters="$(ckpt "$m")" --device=cuda \
        --max-tokens=2 2>"$tmp/ncu.err" | python3 -c '
import csv, sys
launches = {}
for r in csv.DictReader(l for l in sys.stdin if l.startswith("\"")):
    k = (int(r["ID"]), r["Kernel Name"][:40])
    launches.setdefault(k, {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
by = {}
for (i, name), m in launches.items():
    key = (name, int(m.get("launch__grid_size", 0)), int(m.get("launch__block_size", 0)))
    by.setdefault(key, []).append((m["gpu__time_duration.sum"] / 1e3, m["dram__bytes_read.sum"]))
total = 0.0
for (name, grid, block), v in sorted(by.items(), key=lambda kv: -min(kv[1])[0]):
    t, b = min(v)
    total += t * len(v)
    gbps = b / t / 1e3
    if t > 1.5 or b > 1e6:
        print("  %-40s grid %6d block %4d n=%3d %7.2f us %7.2f MB %5.0f GB/s %5.1f%% of 4.2 TB/s" % (name, grid, block, len(v), t, b / 1e6, gbps, gbps / 42))
print("  sum of all profiled launches: %.1f us" % total)
' || tail -3 "$tmp/ncu.err"
    done
  done
else
  echo "gpu_quant_profile: no ncu (HEXIR_NCU names it): profile skipped"
fi

# (2) ms/token, alternating
declare -A times
for r in $(seq 1 "$ROUNDS"); do
  for m in "${MODELS[@]}"; do
    for v in "${VARIANTS[@]}"; do
      err=$(timeout 150 "$GEN" --module="$DIR/$v/tinyllama_$m.cuda.vmfb" --parameters="$(ckpt "$m")" \
        --device=cuda --max-tokens="$TOKENS" --repeat=3 --timing 2>&1 >"$tmp/ids.$v.$m.$r")
      t=$(sed -n 's/^hexir-generate: .* + \([0-9]*\) generated tokens in \([0-9.]*\) ms.*/\1 \2/p' <<<"$err" |
        awk '{ if ($1 > 0) printf "%.4f", $2 / $1 }')
      [ -n "$t" ] || { echo "gpu_quant_profile: $v $m failed: $(tail -2 <<<"$err")"; t=nan; }
      times[$v.$m]+="$t "
    done
  done
done
echo "ms/token, $ROUNDS alternating rounds (least / median), ratio to variant ${VARIANTS[0]} and to its f16:"
for m in "${MODELS[@]}"; do
  for v in "${VARIANTS[@]}"; do
    python3 - "$v" "$m" "${times[$v.$m]}" "${times[${VARIANTS[0]}.$m]}" "${times[$v.f16]:-}" "${VARIANTS[0]}" <<'PY'
import statistics, sys
v, m, first = sys.argv[1], sys.argv[2], sys.argv[6]
f = lambda s: sorted(float(x) for x in s.split() if x != "nan")
a, base, f16 = f(sys.argv[3]), f(sys.argv[4]), f(sys.argv[5])
if not a: sys.exit(print(f"  {v:12} {m:5} failed"))
line = f"  {v:12} {m:5} {a[0]:.4f} / {statistics.median(a):.4f} ms/token"
if base: line += f"   vs {first}: {a[0] / base[0]:.3f} / {statistics.median(a) / statistics.median(base):.3f}"
if f16: line += f"   vs f16: {a[0] / f16[0]:.3f} / {statistics.median(a) / statistics.median(f16):.3f}"
print(line)
PY
  done
done
# (3) ids
for m in "${MODELS[@]}"; do
  for v in "${VARIANTS[@]:1}"; do
    if cmp -s "$tmp/ids.${VARIANTS[0]}.$m.1" "$tmp/ids.$v.$m.1"; then echo "ids: $v $m equal ${VARIANTS[0]}'s"
    else echo "ids: $v $m DIFFER from ${VARIANTS[0]}'s: $(head -c 300 "$tmp/ids.$v.$m.1")"; fi
  done
done
