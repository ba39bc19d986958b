#!/usr/bin/env bash
# GPU decode benchmark (not a test; issue 7, Speed, H200 part): time per generated token of
# Hexir (hexir-generate --device=cuda, modules precompiled here) against PyTorch eager and
# PyTorch CUDA-graph replay of one decode step (tests/llm/torch_decode_bench.py), same
# weights, greedy from BOS, for
#   stories260K (f32, ../shared/models/stories260K.bin, KV cache 512 = its seq_len) and
#   random768: a random llama, dim 768, hidden 2048, 12 layers, 12 heads, 12 KV heads, vocab
#     32000, seq_len 256 (= the KV cache), seed 768, in f16 (Hexir: hexir-import
#     --weights=f16, f16 weights with f32 activations; PyTorch: everything f16), and the same
#     with an f16 KV cache (hexir-import --kv-cache=f16: random768_f16_kv16);
#   tinyllama: a TinyLlama-1.1B-shaped random llama (dim 2048, hidden 5632, 22 layers, 32
#     heads, 4 KV heads, vocab 32000, KV cache 512, seed 2048), f16 weights, f32 and f16 KV
#     cache (tinyllama_f16, tinyllama_f16_kv16); only when its modules are in the bundle;
#     and the same checkpoint quantized by hexir-quantize to q4_0, q4_k and q8_0
#     (tinyllama_q4_0, ...; blocks kept as stored, the CUDA quantized GEMV dequantizing in
#     registers) plus q4_0 on the generic block-matvec kernel (hexir-compile
#     --cuda-generic-block-matvec: tinyllama_q4_0_generic), each against Hexir's own
#     tinyllama_f16 time and PyTorch f16's CUDA-graph time from that row (issue 19's H200
#     goal: q4_0 and q4_k at <= 0.5x Hexir's f16). Their ids are compared with Hexir f16's
#     (informational: quantization moves the logits; q8_0 should follow f16 longest), the
#     generic-kernel row's with the quantized GEMV's (same file: they should agree).
# The kv16 rows' ids must equal the f32-cache rows' (the "kv16 ids" lines).
# Two halves:
#   here (LLVM, Bazel):  bash tests/llm/gpu_decode_bench.sh --pack DIR
#     compiles stories260K.cuda.vmfb and random768_f16.cuda.vmfb into DIR. A module depends
#     only on the checkpoint header, so random768's is imported from a header-identical sparse
#     file (torch_decode_bench.py --header-only); the 0.44 GB checkpoint never travels. The
#     quantized modules are imported from hexir-quantize's GGUF of the sparse (all-zero)
#     TinyLlama file: its header (metadata, tensor names, shapes, block types) is the real
#     file's, only the block bytes differ; the GGUF is deleted once imported.
#     (tools/gpu/pack.sh runs this with DIR=.out/gpu/llm-bench.)
#   on the GPU machine:  bash tests/llm/gpu_decode_bench.sh [TOKENS=200]
#     from the bundle: .out/gpu/bin/hexir-generate, .out/gpu/llm-bench/*.vmfb,
#     .out/gpu/shared/models/stories260K.bin (HEXIR_GPU_BUNDLE overrides .out/gpu); regenerates
#     the seeded random768 checkpoint in a temporary folder (and TinyLlama's, quantized there
#     by .out/gpu/bin/hexir-quantize, one GGUF at a time); PyTorch from HEXIR_TORCH_PYTHON
#     (default python3 on PATH). (tools/gpu/run.sh runs this.)
# HEXIR_GPU_BENCH_ROWS=tinyllama runs only the TinyLlama rows (f16, f16 KV cache, quantized):
# issue 19's H200 figure in one short call.
# Checking this script where no GPU is: HEXIR_GPU_BENCH_DEVICE=cpu on both halves compiles
# --target=cpu modules (same file names) and runs them on the CPU; HEXIR_GPU_BENCH_TINYLLAMA
# (the --write-random shape flags, same on both halves) shrinks the TinyLlama rows, e.g.
#   HEXIR_GPU_BENCH_TINYLLAMA="--dim 256 --hidden 768 --layers 2 --heads 8 --kv-heads 2
#     --vocab 512 --seq-len 64 --seed 7"
# Hexir's time: the fastest of 3 @generate calls (--timing: KV cache zero-fill, the BOS
# prefill, the decode loop reading its stop flag once per 8 steps (stories260K: once, its device loop), the ids' download) divided by the ids it
# generated; PyTorch decodes exactly that many tokens (fastest of 3 after a warm-up). The
# TinyLlama rows also give the decode loop's time alone ("decode"): (T(N) - T(8)) / (N - 8)
# from a second module call of 8 tokens (fastest of 3), so the prefill and the per-call
# work (zero-fill, download) drop out. Prints a
# table; "ids" says whether the first 20 greedy ids of Hexir and PyTorch agree (f16 random768:
# informational, its f16 activations in PyTorch may diverge from Hexir's f32 ones).
set -uo pipefail
cd "$(dirname "$0")/../.."
BENCH_PY=tests/llm/torch_decode_bench.py
RANDOM768=(--dim 768 --hidden 2048 --layers 12 --heads 12 --kv-heads 12 --vocab 32000 --seq-len 256 --seed 768)
read -r -a TINYLLAMA <<<"${HEXIR_GPU_BENCH_TINYLLAMA:---dim 2048 --hidden 5632 --layers 22 --heads 32 --kv-heads 4 --vocab 32000 --seq-len 512 --seed 2048}"
QUANT_TYPES=(q4_0 q4_k q8_0)
DEV=${HEXIR_GPU_BENCH_DEVICE:-cuda}  # cpu: only to check this script where no GPU is (CPU modules)
ROWS=${HEXIR_GPU_BENCH_ROWS:-all}  # tinyllama: only the TinyLlama rows (f16 and quantized)
case "$ROWS" in all|tinyllama) ;; *) echo "gpu_decode_bench: HEXIR_GPU_BENCH_ROWS=$ROWS is not all or tinyllama"; exit 2 ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ "${1:-}" = "--pack" ]; then
  set -e
  [ -n "${2:-}" ] || { echo "usage: gpu_decode_bench.sh --pack DIR"; exit 2; }
  out=$(mkdir -p "$2" && cd "$2" && pwd)
  shared=${HEXIR_SHARED_DIR:-$(cd .. && pwd)/shared}
  bazel build --jobs=2 //tools/hexir-import //tools/hexir-compile //tools/hexir-quantize >/dev/null 2>&1
  IMPORT=bazel-bin/tools/hexir-import/hexir-import
  QUANTIZE=bazel-bin/tools/hexir-quantize/hexir-quantize
  COMPILE=bazel-bin/tools/hexir-compile/hexir-compile
  flags=${HEXIR_COMPILE_FLAGS:---cpu=x86-64-v3}  # host kernels must run on the GPU machine's CPU
  "$IMPORT" "$shared/models/stories260K.bin" -o "$tmp/stories.mlir"
  # shellcheck disable=SC2086
  "$COMPILE" "$tmp/stories.mlir" --target="$DEV" $flags -o "$out/stories260K.cuda.vmfb"
  # The default keeps the L @layer calls as calls (recorded into the decode step's command
  # buffer, the layer once in the bytecode); the same program with the calls inlined by the
  # compiler (--inline-device-calls: hexir-inline-device-calls, one copy per layer, also one
  # command buffer) is the "@layer calls vs inlined" rows' baseline (issue 14: calls must not
  # be slower, ratio <= 1.03). stories260K's default import is the device loop (a small model:
  # compiler/importers/llama/README.md), whose @generate writes its layers out: its row now
  # compares two device-loop modules; random768's (chunked) still compares the calls.
  # shellcheck disable=SC2086
  "$COMPILE" "$tmp/stories.mlir" --target="$DEV" --inline-device-calls $flags -o "$out/stories260K_inlined.cuda.vmfb"
  "${PACK_PYTHON:-/usr/bin/python3}" "$BENCH_PY" --write-random "$tmp/random768.bin" "${RANDOM768[@]}" --header-only
  "$IMPORT" "$tmp/random768.bin" --weights=f16 -o "$tmp/random768.mlir"
  # shellcheck disable=SC2086
  "$COMPILE" "$tmp/random768.mlir" --target="$DEV" $flags -o "$out/random768_f16.cuda.vmfb"
  # shellcheck disable=SC2086
  "$COMPILE" "$tmp/random768.mlir" --target="$DEV" --inline-device-calls $flags -o "$out/random768_f16_inlined.cuda.vmfb"
  "${PACK_PYTHON:-/usr/bin/python3}" "$BENCH_PY" --write-random "$tmp/tinyllama.bin" "${TINYLLAMA[@]}" --header-only
  for m in random768 tinyllama; do
    "$IMPORT" "$tmp/$m.bin" --weights=f16 --kv-cache=f16 -o "$tmp/${m}_kv16.mlir"
    # shellcheck disable=SC2086
    "$COMPILE" "$tmp/${m}_kv16.mlir" --target="$DEV" $flags -o "$out/${m}_f16_kv16.cuda.vmfb"
  done
  "$IMPORT" "$tmp/tinyllama.bin" --weights=f16 -o "$tmp/tinyllama.mlir"
  # shellcheck disable=SC2086
  "$COMPILE" "$tmp/tinyllama.mlir" --target="$DEV" $flags -o "$out/tinyllama_f16.cuda.vmfb"
  # Each RMSNorm (2048 and 768 wide, over the default 256) recomputed inside the projections
  # reading it: 4 fewer dispatches a layer (the "norms recomputed" rows).
  for m in random768 tinyllama; do
    # shellcheck disable=SC2086
    "$COMPILE" "$tmp/$m.mlir" --target="$DEV" --small-reduction-extent=4096 $flags \
      -o "$out/${m}_f16_normfused.cuda.vmfb"
  done
  for q in "${QUANT_TYPES[@]}"; do
    "$QUANTIZE" "$tmp/tinyllama.bin" -o "$tmp/tinyllama_$q.gguf" --type="$q" >/dev/null
    "$IMPORT" "$tmp/tinyllama_$q.gguf" -o "$tmp/tinyllama_$q.mlir"
    rm -f "$tmp/tinyllama_$q.gguf"
    # shellcheck disable=SC2086
    "$COMPILE" "$tmp/tinyllama_$q.mlir" --target="$DEV" $flags -o "$out/tinyllama_$q.cuda.vmfb"
  done
  # shellcheck disable=SC2086
  "$COMPILE" "$tmp/tinyllama_q4_0.mlir" --target="$DEV" --cuda-generic-block-matvec $flags \
    -o "$out/tinyllama_q4_0_generic.cuda.vmfb"
  echo "gpu_decode_bench: modules in $out: $(cd "$out" && echo *.vmfb)"
  exit 0
fi

TOKENS=${1:-200}
BUNDLE=${HEXIR_GPU_BUNDLE:-.out/gpu}
GEN=$BUNDLE/bin/hexir-generate
QUANTIZE=$BUNDLE/bin/hexir-quantize
MODS=$BUNDLE/llm-bench
SHARED=${HEXIR_SHARED_DIR:-$BUNDLE/shared}
PY=${HEXIR_TORCH_PYTHON:-python3}
for f in "$GEN" "$MODS/stories260K.cuda.vmfb" "$MODS/random768_f16.cuda.vmfb" "$SHARED/models/stories260K.bin"; do
  [ -f "$f" ] || { echo "gpu_decode_bench: missing $f (run tools/gpu/pack.sh here first)"; exit 1; }
done
[ "$DEV" != cuda ] || "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null \
  || { echo "gpu_decode_bench: $PY has no CUDA torch (set HEXIR_TORCH_PYTHON)"; exit 1; }
status=0
rows=()
last_hx_ms="-" last_graph="-"  # the last bench row's Hexir and PyTorch CUDA-graph ms/token

# bench NAME MODULE CKPT TOKENS DTYPE: one table row; logs in $tmp/NAME.*
bench() {
  local name=$1 module=$2 ckpt=$3 tokens=$4 dtype=$5
  local hx_ms="-" n=$tokens total="" eager="-" graph="-" gsync="-" agree="-"
  timeout 150 "$GEN" --module="$module" --parameters="$ckpt" --device="$DEV" --max-tokens="$tokens" \
    --repeat=3 --timing >"$tmp/$name.hexir" 2>"$tmp/$name.hexir.err"
  local rc=$?
  # "hexir-generate: 1 prompt + 200 generated tokens in 12.345 ms (fastest of 3): ..."
  local timing
  timing=$(sed -n 's/^hexir-generate: .* + \([0-9]*\) generated tokens in \([0-9.]*\) ms.*/\1 \2/p' "$tmp/$name.hexir.err")
  if [ $rc -eq 0 ] && [ -n "$timing" ]; then
    read -r n total <<<"$timing"
    hx_ms=$(awk -v t="$total" -v n="$n" 'BEGIN { printf "%.4f", t / n }')
  else
    echo "gpu_decode_bench: $name: hexir-generate failed (exit $rc):"; sed 's/^/  /' "$tmp/$name.hexir.err" | tail -5
    status=1
  fi
  [ "$n" -gt 0 ] 2>/dev/null || n=$tokens
  timeout 150 "$PY" "$BENCH_PY" "$ckpt" --device "$DEV" --dtype "$dtype" --tokens "$n" --repeat 3 \
    --print-ids 20 >"$tmp/$name.torch" 2>"$tmp/$name.torch.err"
  rc=$?
  if [ $rc -eq 0 ]; then
    eager=$(sed -n 's/^eager_ms_per_token: //p' "$tmp/$name.torch")
    graph=$(sed -n 's/^graph_ms_per_token: //p' "$tmp/$name.torch")
    gsync=$(sed -n 's/^graph_sync_ms_per_token: //p' "$tmp/$name.torch")
    eager=${eager:--} graph=${graph:--} gsync=${gsync:--}
  else
    echo "gpu_decode_bench: $name: torch_decode_bench.py failed (exit $rc):"; tail -5 "$tmp/$name.torch.err" | sed 's/^/  /'
    status=1
  fi
  local hx_ids pt_ids
  hx_ids=$(sed -n 's/^ids: //p' "$tmp/$name.hexir" | tr ' ' '\n' | head -20 | tr '\n' ' ')
  pt_ids=$(sed -n 's/^ids: //p' "$tmp/$name.torch" | tr ' ' '\n' | head -20 | tr '\n' ' ')
  if [ -n "$hx_ids" ] && [ -n "$pt_ids" ]; then
    if [ "$hx_ids" = "$pt_ids" ]; then agree=yes; else
      agree="NO($(awk -v a="$hx_ids" -v b="$pt_ids" 'BEGIN { n = split(a, x); split(b, y); for (i = 1; i <= n && x[i] == y[i]; i++); print i - 1 }')/20)"
    fi
  fi
  echo "$name: hexir ids: $hx_ids"
  echo "$name: torch ids: $pt_ids"
  grep -h '^config\|graph-ids' "$tmp/$name.torch" "$tmp/$name.torch.err" | sed "s/^/$name: torch /"
  last_hx_ms=$hx_ms last_graph=$graph last_hx_n=$n last_hx_total=${total:-}
  rows+=("$(awk -v m="$name" -v n="$n" -v h="$hx_ms" -v e="$eager" -v g="$graph" -v s="$gsync" -v a="$agree" 'BEGIN {
    r1 = (h + 0 > 0 && e + 0 > 0) ? sprintf("%.2f", h / e) : "-"
    r2 = (h + 0 > 0 && g + 0 > 0) ? sprintf("%.2f", h / g) : "-"
    printf "%-16s %6s %12s %12s %12s %12s %11s %11s  %s", m, n, h, e, g, s, r1, r2, a }')")
}

echo "gpu_decode_bench: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)," \
     "torch $("$PY" -c 'import torch; print(torch.__version__)')"
r768_tokens=$((TOKENS < 256 ? TOKENS : 256))
if [ "$ROWS" = all ]; then
  bench stories260K "$MODS/stories260K.cuda.vmfb" "$SHARED/models/stories260K.bin" "$TOKENS" f32
  "$PY" "$BENCH_PY" --write-random "$tmp/random768.bin" "${RANDOM768[@]}" \
    || { echo "gpu_decode_bench: writing the random768 checkpoint failed"; exit 1; }
  bench random768_f16 "$MODS/random768_f16.cuda.vmfb" "$tmp/random768.bin" "$r768_tokens" f16
fi
# same_ids A B: the kv16 row's ids against the f32-cache row's (all of them).
same_ids() {
  local a b
  a=$(sed -n 's/^ids: //p' "$tmp/$1.hexir") b=$(sed -n 's/^ids: //p' "$tmp/$2.hexir")
  if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "kv16 ids: $2 equals $1 ($(echo "$a" | wc -w) ids)"; else
    echo "kv16 ids: $2 DIFFERS from $1 after $(awk -v a="$a" -v b="$b" 'BEGIN { n = split(a, x); split(b, y); for (i = 1; i <= n && x[i] == y[i]; i++); print i - 1 }') ids"
    status=1
  fi
}
# hexir_total MODULE CKPT TOKENS [IDS_FILE]: "N MS": the ids generated and the fastest of 3
# calls in ms, or "-"; its stdout (the ids) into IDS_FILE.
hexir_total() {
  local err t
  err=$(timeout 150 "$GEN" --module="$1" --parameters="$2" --device="$DEV" --max-tokens="$3" \
    --repeat=3 --timing 2>&1 >"${4:-/dev/null}") || { echo "-"; return; }
  t=$(sed -n 's/^hexir-generate: .* + \([0-9]*\) generated tokens in \([0-9.]*\) ms.*/\1 \2/p' <<<"$err")
  echo "${t:--}"
}
# hexir_ms MODULE CKPT TOKENS [IDS_FILE]: Hexir's ms per generated token (fastest of 3 calls),
# or "-".
hexir_ms() {
  hexir_total "$@" | awk '{ if (NF == 2 && $1 > 0) printf "%.4f", $2 / $1; else print "-" }'
}
# decode_ms N MS MODULE CKPT: the decode loop's ms per token from a call of N tokens taking MS
# and one of 8 tokens (fastest of 3), or "-".
decode_ms() {
  local short
  [ -n "$2" ] && [ "$1" -gt 8 ] 2>/dev/null || { echo "-"; return; }
  short=$(hexir_total "$3" "$4" 8)
  awk -v n="$1" -v t="$2" -v s="$short" 'BEGIN { split(s, a, " ")
    if (a[1] + 0 > 0 && n > a[1]) printf "%.4f", (t - a[2]) / (n - a[1]); else print "-" }'
}
# quant_row NAME MODULE GGUF [REF=tinyllama_f16]: a quantized TinyLlama row against the
# tinyllama_f16 row (f16_ms, f16_graph); its ids against row REF's ($tmp/REF.hexir).
quant_rows=()
f16_ms="-" f16_graph="-" f16_decode="-" quant_seconds=0
quant_row() {
  local name=$1 ref=${4:-tinyllama_f16} ms="-" decode="-" total agree a b
  total=$(hexir_total "$2" "$3" "$TOKENS" "$tmp/$name.hexir")
  if [ "$total" != "-" ]; then
    ms=$(awk -v s="$total" 'BEGIN { split(s, a, " "); if (a[1] > 0) printf "%.4f", a[2] / a[1]; else print "-" }')
    decode=$(decode_ms $total "$2" "$3")
  fi
  [ "$ms" != "-" ] || { echo "gpu_decode_bench: $name: hexir-generate failed"; status=1; }
  a=$(sed -n 's/^ids: //p' "$tmp/$name.hexir" 2>/dev/null) b=$(sed -n 's/^ids: //p' "$tmp/$ref.hexir")
  agree=$(awk -v a="$a" -v b="$b" 'BEGIN { n = split(a, x); m = split(b, y); if (n == 0 || m == 0) { print "-"; exit }
    for (i = 1; i <= n && i <= m && x[i] == y[i]; i++); printf "%d of %d", i - 1, (n < m ? n : m) }') agree="$agree (${ref#tinyllama_})"
  echo "$name: hexir ids: $(echo "$a" | tr ' ' '\n' | head -20 | tr '\n' ' ')"
  quant_rows+=("$(awk -v m="$name" -v h="$ms" -v f="$f16_ms" -v g="$f16_graph" -v a="$agree" \
    -v d="$decode" -v fd="$f16_decode" 'BEGIN {
    r1 = (h + 0 > 0 && f + 0 > 0) ? sprintf("%.2f", h / f) : "-"
    r2 = (h + 0 > 0 && g + 0 > 0) ? sprintf("%.2f", h / g) : "-"
    r3 = (d + 0 > 0 && fd + 0 > 0) ? sprintf("%.2f", d / fd) : "-"
    printf "%-24s %12s %10s %16s %10s %14s  %s", m, h, r1, r2, d, r3, a }')")
}
if [ "$ROWS" = all ] && [ -f "$MODS/random768_f16_kv16.cuda.vmfb" ]; then
  bench random768_f16_kv16 "$MODS/random768_f16_kv16.cuda.vmfb" "$tmp/random768.bin" "$r768_tokens" f16
  same_ids random768_f16 random768_f16_kv16
fi
[ "$ROWS" = all ] || [ -f "$MODS/tinyllama_f16.cuda.vmfb" ] ||
  { echo "gpu_decode_bench: missing $MODS/tinyllama_f16.cuda.vmfb for HEXIR_GPU_BENCH_ROWS=tinyllama"; status=1; }
if [ -f "$MODS/tinyllama_f16.cuda.vmfb" ]; then
  "$PY" "$BENCH_PY" --write-random "$tmp/tinyllama.bin" "${TINYLLAMA[@]}" \
    || { echo "gpu_decode_bench: writing the tinyllama checkpoint failed"; exit 1; }
  bench tinyllama_f16 "$MODS/tinyllama_f16.cuda.vmfb" "$tmp/tinyllama.bin" "$TOKENS" f16
  f16_ms=$last_hx_ms f16_graph=$last_graph
  f16_decode=$(decode_ms "$last_hx_n" "$last_hx_total" "$MODS/tinyllama_f16.cuda.vmfb" "$tmp/tinyllama.bin")
  if [ -f "$MODS/tinyllama_f16_kv16.cuda.vmfb" ]; then
    bench tinyllama_f16_kv16 "$MODS/tinyllama_f16_kv16.cuda.vmfb" "$tmp/tinyllama.bin" "$TOKENS" f16
    same_ids tinyllama_f16 tinyllama_f16_kv16
  fi
  quant_start=$SECONDS
  for q in "${QUANT_TYPES[@]}"; do
    [ -f "$MODS/tinyllama_$q.cuda.vmfb" ] || { quant_rows+=("tinyllama_$q: no module in the bundle"); continue; }
    if ! "$QUANTIZE" "$tmp/tinyllama.bin" -o "$tmp/tinyllama_$q.gguf" --type="$q" >"$tmp/quantize_$q.log" 2>&1; then
      echo "gpu_decode_bench: hexir-quantize --type=$q failed:"; tail -3 "$tmp/quantize_$q.log" | sed 's/^/  /'
      status=1; continue
    fi
    quant_row "tinyllama_$q" "$MODS/tinyllama_$q.cuda.vmfb" "$tmp/tinyllama_$q.gguf"
    [ "$q" != q4_0 ] || [ ! -f "$MODS/tinyllama_q4_0_generic.cuda.vmfb" ] ||
      quant_row tinyllama_q4_0_generic "$MODS/tinyllama_q4_0_generic.cuda.vmfb" "$tmp/tinyllama_$q.gguf" tinyllama_q4_0
    rm -f "$tmp/tinyllama_$q.gguf"
  done
  quant_seconds=$((SECONDS - quant_start))
fi

# The default module (@layer kept as calls) against the calls inlined by the compiler
# (--inline-device-calls), alternating, 3 rounds each.
layer_rows=()
pairs=()
[ "$ROWS" != all ] || pairs=("stories260K:$SHARED/models/stories260K.bin:$TOKENS" "random768_f16:$tmp/random768.bin:$r768_tokens")
for pair in "${pairs[@]}"; do
  IFS=: read -r name ckpt tokens <<<"$pair"
  [ -f "$MODS/${name}_inlined.cuda.vmfb" ] || { layer_rows+=("$name: no --inline-device-calls module in the bundle"); continue; }
  best_calls="" best_inl=""
  for _ in 1 2 3; do
    c=$(hexir_ms "$MODS/$name.cuda.vmfb" "$ckpt" "$tokens"); i=$(hexir_ms "$MODS/${name}_inlined.cuda.vmfb" "$ckpt" "$tokens")
    best_calls=$(awk -v a="$best_calls" -v b="$c" 'BEGIN { if (b == "-") print a; else if (a == "" || b + 0 < a + 0) print b; else print a }')
    best_inl=$(awk -v a="$best_inl" -v b="$i" 'BEGIN { if (b == "-") print a; else if (a == "" || b + 0 < a + 0) print b; else print a }')
  done
  [ -n "$best_calls" ] && [ -n "$best_inl" ] || status=1
  layer_rows+=("$(awk -v m="$name" -v c="$best_calls" -v i="$best_inl" 'BEGIN {
    r = (c + 0 > 0 && i + 0 > 0) ? sprintf("%.3f", c / i) : "-"
    printf "%-16s %14s %14s %10s", m, (c == "" ? "-" : c), (i == "" ? "-" : i), r }')")
done

# Norms recomputed in their projections (hexir-compile --small-reduction-extent=4096: the sum
# and scaling dispatches of each RMSNorm gone) against the default module, alternating, 3
# rounds each; ids of the two compared (informational: the norm's sum runs in another order).
norm_rows=()
pairs=("tinyllama_f16:$tmp/tinyllama.bin:$TOKENS")
[ "$ROWS" != all ] || pairs+=("random768_f16:$tmp/random768.bin:$r768_tokens")
for pair in "${pairs[@]}"; do
  IFS=: read -r name ckpt tokens <<<"$pair"
  [ -f "$MODS/${name}_normfused.cuda.vmfb" ] && [ -f "$ckpt" ] ||
    { norm_rows+=("$name: no normfused module (or checkpoint) in this run"); continue; }
  best_fused="" best_default=""
  for _ in 1 2 3; do
    f=$(hexir_ms "$MODS/${name}_normfused.cuda.vmfb" "$ckpt" "$tokens" "$tmp/${name}_normfused.ids")
    d=$(hexir_ms "$MODS/$name.cuda.vmfb" "$ckpt" "$tokens" "$tmp/${name}_default.ids")
    best_fused=$(awk -v a="$best_fused" -v b="$f" 'BEGIN { if (b == "-") print a; else if (a == "" || b + 0 < a + 0) print b; else print a }')
    best_default=$(awk -v a="$best_default" -v b="$d" 'BEGIN { if (b == "-") print a; else if (a == "" || b + 0 < a + 0) print b; else print a }')
  done
  [ -n "$best_fused" ] && [ -n "$best_default" ] || status=1
  a=$(sed -n 's/^ids: //p' "$tmp/${name}_normfused.ids" 2>/dev/null) b=$(sed -n 's/^ids: //p' "$tmp/${name}_default.ids" 2>/dev/null)
  same=$(awk -v a="$a" -v b="$b" 'BEGIN { n = split(a, x); m = split(b, y); if (n == 0 || m == 0) { print "-"; exit }
    for (i = 1; i <= n && i <= m && x[i] == y[i]; i++); printf "%d of %d", i - 1, (n < m ? n : m) }')
  norm_rows+=("$(awk -v m="$name" -v f="$best_fused" -v d="$best_default" -v s="$same" 'BEGIN {
    r = (f + 0 > 0 && d + 0 > 0) ? sprintf("%.3f", f / d) : "-"
    printf "%-16s %14s %14s %10s  %s", m, (f == "" ? "-" : f), (d == "" ? "-" : d), r, s }')")
done

echo
echo "ms per generated token (greedy from BOS; graph+sync: graph replay reading each id on the host)"
printf "%-16s %6s %12s %12s %12s %12s %11s %11s  %s\n" model tokens hexir torch-eager torch-graph graph+sync \
  hexir/eager hexir/graph "first 20 ids agree"
for r in "${rows[@]}"; do echo "$r"; done
if [ ${#layer_rows[@]} -gt 0 ]; then
  echo
  echo "@layer called L times (the default: calls kept) vs the calls inlined by the compiler (--inline-device-calls), ms per token, best of 3 alternating"
  printf "%-16s %14s %14s %10s\n" model "@layer calls" inlined calls/inlined
  for r in "${layer_rows[@]}"; do echo "$r"; done
fi
if [ ${#norm_rows[@]} -gt 0 ]; then
  echo
  echo "RMSNorms recomputed in their projections (--small-reduction-extent=4096) vs the default module, ms per token, best of 3 alternating"
  printf "%-16s %14s %14s %10s  %s\n" model normfused default ratio "ids equal"
  for r in "${norm_rows[@]}"; do echo "$r"; done
fi
if [ ${#quant_rows[@]} -gt 0 ]; then
  echo
  echo "TinyLlama-shaped, quantized by hexir-quantize from the same checkpoint, ms per generated token"
  echo "(x f16: over Hexir's tinyllama_f16 row; x torch-graph: over PyTorch f16's CUDA-graph replay;"
  echo " issue 19's goal: q4_0 and q4_k x f16 <= 0.50; ids: the first N equal Hexir's (row);"
  echo " decode: the decode loop alone, (T(N) - T(8)) / (N - 8), x f16 decode: over tinyllama_f16's, $f16_decode)"
  printf "%-24s %12s %10s %16s %10s %14s  %s\n" model hexir "x f16" "x torch-graph" decode "x f16 decode" "ids equal to"
  for r in "${quant_rows[@]}"; do echo "$r"; done
  echo "quantized rows took ${quant_seconds} s (hexir-quantize of each type + 3 timed calls per module)"
fi
exit $status
