#!/usr/bin/env bash
# CPU LLM decode against llama.cpp on the same GGUF, one thread (issue 21's decode figure).
#   bash bench/llm_decode/run.sh [TOKENS=50] [--keep=DIR]
# random768 (dim 768, hidden 2048, 12 layers, 12/12 heads, vocab 32000, seq_len 256, seed 768,
# written by tests/llm/torch_decode_bench.py --write-random: /usr/bin/python3 with torch) is
# converted to GGUF f32 and f16 (tests/llm/llama2c_to_gguf.py) with a synthetic 32000-piece
# tokenizer (llama.cpp refuses a GGUF without one; the ids are never decoded); every other type
# (bf16, q8_0, q4_0, q4_1, q5_0, q4_k, q5_k, q6_k: rows of 768 and 2048 take every block size)
# is written from the f32 GGUF by hexir-quantize (its tokenizer copied). TYPES="f32 q4_k ..."
# picks a subset (default: all ten). Each GGUF is imported by hexir-import (f16 GGUF:
# --weights=f16; block types kept as stored), compiled --target=cpu and decoded by
# hexir-generate --cpu-threads=0 (one thread, dispatches inline) from BOS, fastest of
# $REPEATS (3) calls; llama.cpp (npm node-llama-cpp@3.21.1 in $LLAMA_CPP_DIR, see
# tests/llm/benchmark.sh) decodes the same GGUF on one thread, fastest of 3 after a warm-up.
# Prints tokens/s of both and hexir/llama.cpp per weight type (> 1: Hexir is faster), the ratio
# of their CPU ms per token (< 1: Hexir is faster; steadier under load), and the
# weight bandwidth Hexir's tokens/s implies (a token reads every weight once: ~ the GGUF's size). Both sides run in the same few minutes, so a
# loaded machine slows both: read the ratio, not the absolute figures.
set -euo pipefail
cd "$(dirname "$0")/../.."
TOKENS=50 keep=""
for a in "$@"; do
  case "$a" in
    --keep=*) keep="${a#*=}" ;;
    [0-9]*) TOKENS=$a ;;
    *) echo "run.sh: unknown argument '$a'" >&2; exit 2 ;;
  esac
done
REPEATS=${REPEATS:-3}
B=${HEXIR_BIN:-}
IMPORT=${B:+$B/hexir-import}; IMPORT=${IMPORT:-bazel-bin/tools/hexir-import/hexir-import}
COMPILE=${B:+$B/hexir-compile}; COMPILE=${COMPILE:-bazel-bin/tools/hexir-compile/hexir-compile}
GEN=${B:+$B/hexir-generate}; GEN=${GEN:-bazel-bin/tools/hexir-generate/hexir-generate}
QUANTIZE=${B:+$B/hexir-quantize}; QUANTIZE=${QUANTIZE:-bazel-bin/tools/hexir-quantize/hexir-quantize}
TYPES=${TYPES:-f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q4_k q5_k q6_k}
for f in "$IMPORT" "$COMPILE" "$GEN" "$QUANTIZE"; do
  [ -x "$f" ] || { echo "run.sh: missing $f (bazel build //tools/hexir-import //tools/hexir-compile //tools/hexir-generate //tools/hexir-quantize)"; exit 1; }
done
if [ -n "$keep" ]; then dir=$(mkdir -p "$keep" && cd "$keep" && pwd); else
  dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT; fi

ckpt=$dir/random768.bin
[ -f "$ckpt" ] || /usr/bin/python3 tests/llm/torch_decode_bench.py --write-random "$ckpt" --dim 768 \
  --hidden 2048 --layers 12 --heads 12 --kv-heads 12 --vocab 32000 --seq-len 256 --seed 768
# <unk> <s> </s>, the 256 byte pieces, then " w<i>" pieces with decreasing scores.
/usr/bin/python3 - "$dir/tok32000.bin" <<'PY'
import struct, sys
pieces = [b"<unk>", b"<s>", b"</s>"] + [b"<0x%02X>" % i for i in range(256)]
pieces += [b" w%d" % i for i in range(32000 - len(pieces))]
out = struct.pack("<i", max(len(p) for p in pieces))
for i, p in enumerate(pieces):
    out += struct.pack("<fi", -float(i), len(p)) + p
open(sys.argv[1], "wb").write(out)
PY

LLAMA_CPP_DIR=${LLAMA_CPP_DIR:-$HOME/.cache/hexir-llama-cpp}
have_llama=0
[ -d "$LLAMA_CPP_DIR/node_modules/node-llama-cpp" ] && have_llama=1 \
  || echo "run.sh: node-llama-cpp not in $LLAMA_CPP_DIR (tests/llm/benchmark.sh installs it): Hexir only"
# A copy of its own beside node_modules (ESM resolves imports from the script's folder; other
# benchmarks use the folder at the same time).
lc_script=llama_cpp_bench.$$.mjs
if [ $have_llama = 1 ]; then
  cp tests/llm/llama_cpp_bench.mjs "$LLAMA_CPP_DIR/$lc_script"
  trap 'rm -f "$LLAMA_CPP_DIR/$lc_script"; [ -n "$keep" ] || rm -rf "$dir"' EXIT
fi
rate() { sed -n 's/.*: \([0-9.]*\) tokens\/s.*/\1/p'; }
cpums() { sed -n 's/.*, \([0-9.]*\) ms per token.*/\1/p'; }

echo "random768 decode, $TOKENS tokens from BOS, one thread ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1 /proc/loadavg))"
f32gguf=$dir/random768.f32.gguf
[ -f "$f32gguf" ] || /usr/bin/python3 tests/llm/llama2c_to_gguf.py "$ckpt" "$dir/tok32000.bin" "$f32gguf"
for wt in $TYPES; do
  gguf=$dir/random768.$wt.gguf
  case $wt in
    f32) weights=(--weights=f32) ;;
    f16) weights=(--weights=f16)
         [ -f "$gguf" ] || /usr/bin/python3 tests/llm/llama2c_to_gguf.py "$ckpt" "$dir/tok32000.bin" "$gguf" --f16 ;;
    *) weights=()
       [ -f "$gguf" ] || "$QUANTIZE" "$f32gguf" -o "$gguf" --type="$wt" >/dev/null ;;
  esac
  "$IMPORT" "$gguf" "${weights[@]}" -o "$dir/$wt.mlir"
  "$COMPILE" "$dir/$wt.mlir" --target=cpu -o "$dir/$wt.vmfb"
  hx=$("$GEN" --module="$dir/$wt.vmfb" --parameters="$gguf" --max-tokens="$TOKENS" --cpu-threads=0 \
         --repeat="$REPEATS" --timing 2>&1 >/dev/null | tail -1)
  h=$(echo "$hx" | rate)
  echo "  $wt hexir:     $hx"
  # Each token reads every weight once (the embedding is also the classifier): ~ the file.
  /usr/bin/python3 -c "import os; print('  $wt hexir reads %.1f GB/s of weights' % ($h * os.path.getsize('$gguf') / 1e9))"
  if [ $have_llama = 1 ]; then
    lc=$(cd "$LLAMA_CPP_DIR" && node "$lc_script" "$gguf" "$TOKENS" 1 2>&1 >/dev/null | tail -1)
    l=$(echo "$lc" | rate)
    echo "  $wt llama.cpp: $lc"
    [ -z "$l" ] || /usr/bin/python3 -c "print('  $wt hexir / llama.cpp tokens/s: %.2fx' % ($h / $l))"
    # CPU time per token: less disturbed by other processes on a loaded machine than wall time.
    hc=$(echo "$hx" | cpums) lcc=$(echo "$lc" | cpums)
    [ -z "$hc" ] || [ -z "$lcc" ] \
      || /usr/bin/python3 -c "print('  $wt hexir / llama.cpp CPU ms per token: %.2fx' % ($hc / $lcc))"
  fi
done
