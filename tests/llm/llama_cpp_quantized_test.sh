#!/usr/bin/env bash
# Quantized GGUF files written by hexir-quantize, decoded by Hexir (blocks kept as stored,
# dequantized in the kernels) and by llama.cpp (npm node-llama-cpp, one CPU thread) on the
# same file: 100 greedy ids from BOS are equal, or, at the first differing step, llama.cpp's
# top-2 logit gap is below MAX_GAP and the independent f64 reference (quantized_reference.py,
# pure Python: its own GGUF reader and dequantizers) fed Hexir's ids picks Hexir's id or is
# itself at a near tie; both gaps are printed. Also: the reference's dequantizers on
# hand-built blocks, llama.cpp loads every file, and hexir-generate refuses a module imported
# from a file of another type by name. llama.cpp's output for each file (hexir-quantize is
# deterministic) is recorded in llama_cpp_quantized_ids/NAME.txt (made on an AVX2 machine):
# where node-llama-cpp runs, its live ids are compared (a difference from the record is
# noted: llama.cpp's kernels, hence its near-tie choices, depend on the CPU); elsewhere (the
# GPU machine: no node) the record stands in for it.
# Models (from the target's name, llama_cpp_quantized_{stories,random}_test, or the argument;
# two targets so that each fits its timeout): `stories` is
# stories260K (its rows of 64 and 172 values take q8_0/q4_0/q4_1/q5_0/bf16; K-quants need rows
# of 256, so hexir-quantize would write q8_0/f16, the q8_0 file); `random` a random llama
# (dim 256, hidden 512, 2 layers, 8/4 heads, vocab 512, separate classifier, seed 2) in every type.
case "${1:-$(basename "$0")}" in
  *stories*) MODELS=stories ;;
  *random*) MODELS=random ;;
  *) echo "usage: llama_cpp_quantized_test.sh stories|random"; exit 2 ;;
esac
source tests/llm/common.sh
QUANTIZE=tools/hexir-quantize/hexir-quantize
QREF=tests/llm/quantized_reference.py
MAX_GAP=0.5
CKPT=$SHARED/models/stories260K.bin
TOK=$SHARED/models/tok512.bin
if [ ! -f "$CKPT" ] || [ ! -f "$TOK" ]; then
  echo "HEXIR_SKIPPED: stories260K: $CKPT or $TOK not found"
  exit 0
fi
/usr/bin/python3 "$QREF" check-blocks || fail "the reference's dequantizers on hand-built blocks"
LLAMA_CPP_DIR=${LLAMA_CPP_DIR:-${HOME:-/root}/.cache/hexir-llama-cpp}
RECORDED=tests/llm/llama_cpp_quantized_ids
LIVE=0
if command -v node >/dev/null && [ -d "$LLAMA_CPP_DIR/node_modules/node-llama-cpp" ]; then
  LIVE=1
  # ESM imports resolve from the script's folder: run it beside a link to the packages.
  mkdir -p "$TMP/lc" && ln -sfn "$LLAMA_CPP_DIR/node_modules" "$TMP/lc/node_modules"
  cp tests/llm/llama_cpp_greedy.mjs "$TMP/lc/"
else
  echo "note: node-llama-cpp is not available: llama.cpp's ids recorded in $RECORDED stand in"
fi

# check NAME CKPT TYPE: quantize, run both, compare.
check() {
  local name=$1 ckpt=$2 type=$3
  "$QUANTIZE" "$ckpt" -o "$TMP/$name.gguf" --type="$type" --tokenizer="$TOK" >"$TMP/$name.log" \
    || { fail "hexir-quantize $name: $(cat "$TMP/$name.log")"; return; }
  if [ "$LIVE" = 1 ]; then
    (cd "$TMP/lc" && timeout 300 node llama_cpp_greedy.mjs "$TMP/$name.gguf" 100 >"$TMP/$name.llama" 2>"$TMP/$name.err") \
      || { fail "llama.cpp cannot run $name.gguf: $(grep -v n_ctx "$TMP/$name.err" | tail -3)"; return; }
    # llama.cpp picks its dot-product kernels from the CPU (AVX2, AVX512-VNNI, ...), whose
    # rounding differs at near ties: a live run that differs from the record is compared as it
    # is (below), with a note, not failed.
    [ "$(cut -d' ' -f1 "$TMP/$name.llama")" == "$(cut -d' ' -f1 "$RECORDED/$name.txt")" ] \
      || echo "note: $name: llama.cpp on this CPU gives other ids than $RECORDED/$name.txt (its kernels differ by CPU); compared live"
  else
    cp "$RECORDED/$name.txt" "$TMP/$name.llama"
  fi
  build_module "$TMP/$name.gguf" "$name" || return
  "$GENERATE" --module="$TMP/$name.vmfb" --parameters="$TMP/$name.gguf" --max-tokens=100 --device="$DEVICE" \
    --cpu-threads=0 >"$TMP/$name.hexir" 2>&1 || { fail "hexir-generate $name: $(tail -3 "$TMP/$name.hexir")"; return; }
  /usr/bin/python3 "$QREF" compare "$name" "$TMP/$name.gguf" "$(head -1 "$TMP/$name.hexir")" "$TMP/$name.llama" \
    "$MAX_GAP" || fail "$name against llama.cpp"
}
if [ "$MODELS" = stories ]; then
  for type in q8_0 q4_0 q4_1 q5_0 bf16; do check "stories_$type" "$CKPT" "$type"; done
else
  /usr/bin/python3 "$QREF" write-random "$TMP/random.bin" 256 512 2 8 4 512 512 2 || fail "write-random"
  for type in q4_k q5_k q6_k q8_0 q4_0 q4_1 q5_0 bf16 f16; do check "random_$type" "$TMP/random.bin" "$type"; done
fi

# A module takes the block types it was imported with: another file's are refused by name.
if [ -f "$TMP/stories_q4_0.vmfb" ] && [ -f "$TMP/stories_q8_0.gguf" ]; then
  if "$GENERATE" --module="$TMP/stories_q4_0.vmfb" --parameters="$TMP/stories_q8_0.gguf" --max-tokens=2 \
    --device="$DEVICE" >"$TMP/mismatch.out" 2>&1; then
    fail "a q4_0 module ran with q8_0 weights"
  elif grep -q "argument 2 is tensor<512x36xi8> but checkpoint tensor 'token_embedding' (offset [0-9]*) is q8_0 512x68xi8" \
    "$TMP/mismatch.out"; then
    pass "a q4_0 module refuses a q8_0 file naming the tensor and both forms"
  else
    fail "mismatched module error: $(cat "$TMP/mismatch.out")"
  fi
fi
[ "$failures" -eq 0 ] && echo "PASSED" || { echo "$failures failure(s)"; exit 1; }
