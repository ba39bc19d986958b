#!/usr/bin/env bash
# Prompt prefill on the GPU against PyTorch (not a test; issue 15, Speed: "Prefill of 512
# tokens, TinyLlama shape: <= 1.25x PyTorch's time"). A TinyLlama-1.1B-shaped random llama
# (dim 2048, hidden 5632, 22 layers, 32 heads, 4 KV heads, vocab 32000; KV cache 1024 so a
# 512-token prompt and its next token fit), f16 weights, seeded; prompts of T random ids
# (seeded, BOS not added) for each T of PREFILL_TOKENS (default "128 512"):
#   Hexir:   hexir-generate --prompt-ids=... --max-tokens=1 --repeat=3 --timing: the fastest
#            call (KV cache zero-fill, the prompt's batched prefill, the next id's argmax and
#            its download to the host);
#   PyTorch: tests/llm/torch_decode_bench.py --prefill (f16 weights and activations, one
#            batched forward, causal attention, the last position's argmax read to the host;
#            fastest of 3 after a warm-up).
# Prints per T both times, Hexir/PyTorch, and whether the next ids agree (informational:
# PyTorch's f16 activations may round a close argmax differently from Hexir's f32 ones).
# Two halves, like gpu_quant_profile.sh:
#   here:   bash tests/llm/gpu_prefill_bench.sh --pack DIR [COMPILE_BIN]
#           (DIR/tinyllama_prefill_f16.cuda.vmfb from the header-only file; DIR/bin: hexir-generate
#           and torch_decode_bench.py)
#   there:  bash tests/llm/gpu_prefill_bench.sh DIR
# HEXIR_PREFILL_NCU=1: also each kernel of one layer's prefill under Nsight Compute (below).
# HEXIR_PREFILL_DEVICE=cpu on both halves checks the script where no GPU is (a CPU module,
# PyTorch on the CPU in f32); HEXIR_PREFILL_SHAPE overrides the --write-random shape flags.
set -uo pipefail
cd "$(dirname "$0")/../.."
read -r -a SHAPE <<<"${HEXIR_PREFILL_SHAPE:---dim 2048 --hidden 5632 --layers 22 --heads 32 --kv-heads 4 --vocab 32000 --seq-len 1024 --seed 2048}"
read -r -a TOKENS <<<"${PREFILL_TOKENS:-128 512}"
DEV=${HEXIR_PREFILL_DEVICE:-cuda}
TORCH_DTYPE=f16
[ "$DEV" = cuda ] || TORCH_DTYPE=f32  # PyTorch's CPU matmuls take no f16
MODULE=tinyllama_prefill_f16.$DEV.vmfb
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ "${1:-}" = "--pack" ]; then
  set -e
  [ -n "${2:-}" ] || { echo "usage: gpu_prefill_bench.sh --pack DIR [COMPILE_BIN]"; exit 2; }
  dir=$2
  bazel build --jobs=2 //tools/hexir-import //tools/hexir-compile //tools/hexir-generate >/dev/null 2>&1
  COMPILE=${3:-bazel-bin/tools/hexir-compile/hexir-compile}
  mkdir -p "$dir/bin"
  cp -Lf bazel-bin/tools/hexir-generate/hexir-generate tests/llm/torch_decode_bench.py "$dir/bin/"
  /usr/bin/python3 tests/llm/torch_decode_bench.py --write-random "$tmp/t.bin" "${SHAPE[@]}" --header-only
  bazel-bin/tools/hexir-import/hexir-import "$tmp/t.bin" --weights=f16 -o "$tmp/t.mlir"
  "$COMPILE" "$tmp/t.mlir" --target="$DEV" --cpu=x86-64-v3 -o "$dir/$MODULE"
  echo "gpu_prefill_bench: $dir/$MODULE"
  exit 0
fi

DIR=${1:?usage: gpu_prefill_bench.sh DIR}
PY=${HEXIR_TORCH_PYTHON:-python3}
[ -f "$DIR/$MODULE" ] || { echo "gpu_prefill_bench: no $DIR/$MODULE (run --pack here first)"; exit 2; }
"$PY" "$DIR/bin/torch_decode_bench.py" --write-random "$tmp/t.bin" "${SHAPE[@]}" || exit 1
vocab=$(awk '{for (i = 1; i < NF; ++i) if ($i == "--vocab") print $(i + 1)}' <<<"${SHAPE[*]}")
[ "$DEV" = cuda ] && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
printf '%-8s | %12s %12s | %8s | %s\n' tokens "hexir ms" "torch ms" "hx/torch" "next ids (hexir, torch)"
status=0
for T in "${TOKENS[@]}"; do
  ids=$("$PY" -c "import random; r = random.Random($T); print(','.join(str(r.randrange(3, $vocab)) for _ in range($T)))")
  "$DIR/bin/hexir-generate" --module="$DIR/$MODULE" --parameters="$tmp/t.bin" --device="$DEV" \
    --prompt-ids="$ids" --max-tokens=1 --repeat=3 --timing > "$tmp/hexir.out" 2> "$tmp/hexir.err" || {
    echo "gpu_prefill_bench: hexir-generate failed for T=$T: $(tail -2 "$tmp/hexir.err")"; status=1; continue; }
  hx=$(sed -n 's/.* generated tokens in \([0-9.]*\) ms (fastest.*/\1/p' "$tmp/hexir.err" | tail -1)
  hid=$(sed -n 's/^ids: \([0-9]*\).*/\1/p' "$tmp/hexir.out")
  "$PY" "$DIR/bin/torch_decode_bench.py" "$tmp/t.bin" --device="$DEV" --dtype="$TORCH_DTYPE" --prefill="$ids" \
    --repeat=3 > "$tmp/torch.out" 2> "$tmp/torch.err" || {
    echo "gpu_prefill_bench: PyTorch failed for T=$T: $(tail -2 "$tmp/torch.err")"; status=1; continue; }
  pt=$(sed -n 's/^prefill_ms: //p' "$tmp/torch.out")
  pid=$(sed -n 's/^prefill_next_id: //p' "$tmp/torch.out")
  printf '%-8s | %12s %12s | %8s | %s %s (%s)\n' "$T" "$hx" "$pt" \
    "$(awk -v a="$hx" -v b="$pt" 'BEGIN {if (a > 0 && b > 0) printf "%.2f", a / b; else printf "-"}')" \
    "$hid" "$pid" "$([ "$hid" = "$pid" ] && echo equal || echo differ)"
done
# Per kernel (HEXIR_PREFILL_NCU=1 and ncu found, or HEXIR_NCU): Nsight Compute's time of each
# kernel of one layer's prefill at the last T (the first @prefill_layer call's launches).
NCU=${HEXIR_NCU:-$(command -v ncu || { [ -x /usr/local/cuda/bin/ncu ] && echo /usr/local/cuda/bin/ncu; })}
if [ -n "${HEXIR_PREFILL_NCU:-}" ] && [ -n "$NCU" ] && [ "$DEV" = cuda ]; then
  echo "ncu, prefill of $T ids, the first layer's kernels (us; grid, block):"
  timeout 300 "$NCU" --clock-control none --csv --print-units base -k regex:prefill_layer -c 40 \
    --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size \
    "$DIR/bin/hexir-generate" --module="$DIR/$MODULE" --parameters="$tmp/t.bin" --device=cuda \
    --prompt-ids="$ids" --max-tokens=1 2>"$tmp/ncu.err" | "$PY" -c '
import csv, sys
launches = {}
for r in csv.DictReader(l for l in sys.stdin if l.startswith("\"")):
    launches.setdefault((int(r["ID"]), r["Kernel Name"][:48]), {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
first, total = None, 0.0
for (i, name), m in sorted(launches.items()):
    if name == first: break  # the second layer
    first = first or name
    t = m["gpu__time_duration.sum"] / 1e3
    total += t
    print("  %-48s %10.1f us  grid %7d block %4d" % (name, t, m.get("launch__grid_size", 0), m.get("launch__block_size", 0)))
print("  one layer: %.1f us" % total)
' || tail -3 "$tmp/ncu.err"
fi
echo "(Hexir: fastest of 3 calls of hexir-generate --max-tokens=1, f16 weights, f32 activations;"
echo " PyTorch: fastest of 3 batched forwards, $TORCH_DTYPE; $(tail -1 "$tmp/torch.err" 2>/dev/null))"
exit $status
