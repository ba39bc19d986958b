#!/usr/bin/env bash
# A GGUF alone is enough for hexir-generate --prompt: its own tokenizer encodes the prompt and
# decodes the ids, and the program stops at its own BOS/EOS ids.
# - stories260K as GGUF (llama2c_to_gguf.py writes tok512's vocabulary as tokenizer.ggml.*):
#   the same prompt ids, generated ids and text as the llama2.c checkpoint with --tokenizer.
# - a random llama with a byte-level BPE vocabulary (write_bpe_gguf.py): BOS = EOS =
#   <|endoftext|> (id 2xx, not 1/2) reach the program's stop test; the prompt is encoded
#   without BOS (add_bos_token false), and generation runs.
# - a GGUF without tokenizer metadata refuses --prompt with a named error.
source tests/llm/common.sh
CKPT=$SHARED/models/stories260K.bin
TOK=$SHARED/models/tok512.bin
if [ ! -f "$CKPT" ] || [ ! -f "$TOK" ]; then
  echo "HEXIR_SKIPPED: stories260K: $CKPT or $TOK not found"
  exit 0
fi
[ -n "$NPY" ] || { echo "HEXIR_SKIPPED: no Python with numpy for the GGUF writers"; exit 0; }
"$NPY" tests/llm/llama2c_to_gguf.py "$CKPT" "$TOK" "$TMP/stories.gguf" || fail "llama2c_to_gguf.py"
"$NPY" tests/llm/llama2c_to_gguf.py "$CKPT" - "$TMP/notok.gguf" || fail "llama2c_to_gguf.py (no tokenizer)"
"$NPY" tests/llm/write_bpe_gguf.py "$TMP/bpe.gguf" || fail "write_bpe_gguf.py"

PROMPT="Once upon a time, a little dog named   Max found 3 shiny stones."
build_module "$TMP/stories.gguf" tok_stories || exit 1
"$GENERATE" --module="$TMP/tok_stories.vmfb" --device="$DEVICE" --parameters="$TMP/stories.gguf" \
  --prompt="$PROMPT" --max-tokens=40 --verbose >"$TMP/gguf.out" 2>"$TMP/gguf.err" || fail "generate (GGUF alone)"
"$GENERATE" --module="$TMP/tok_stories.vmfb" --device="$DEVICE" --parameters="$CKPT" --tokenizer="$TOK" \
  --prompt="$PROMPT" --max-tokens=40 --verbose >"$TMP/bin.out" 2>"$TMP/bin.err" || fail "generate (llama2.c + tok512)"
if cmp -s "$TMP/gguf.out" "$TMP/bin.out" && cmp -s "$TMP/gguf.err" "$TMP/bin.err" && [ "$(wc -l <"$TMP/gguf.out")" -eq 2 ]; then
  pass "stories260K GGUF alone = llama2.c + tok512: $(head -c 60 "$TMP/gguf.err")... -> $(tail -1 "$TMP/gguf.out" | head -c 50)..."
else
  fail "GGUF tokenizer output differs: $(cat "$TMP/gguf.err" "$TMP/gguf.out") vs $(cat "$TMP/bin.err" "$TMP/bin.out")"
fi

# The BPE model: its stop id (<|endoftext|>) is in the program; the prompt has no BOS.
eot=$("$NPY" - "$TMP/bpe.gguf" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
key = b"tokenizer.ggml.bos_token_id"
at = d.index(key) + len(key) + 4
print(struct.unpack("<I", d[at:at + 4])[0])
PY
)
build_module "$TMP/bpe.gguf" tok_bpe || exit 1
if [ -z "${HEXIR_PRECOMPILED_DIR:-}" ]; then
  n=$(grep -c "arith.constant $eot : i64" "$TMP/tok_bpe.mlir")
  [ "$eot" -gt 2 ] && [ "$n" -ge 2 ] && pass "the BPE model's BOS/EOS id $eot is the program's stop id" \
    || fail "stop id $eot not in the program ($n constants)"
fi
tok=$("$GENERATE" --parameters="$TMP/bpe.gguf" --prompt="Hello world, 123!" --tokenize-only --max-tokens=0 | head -1)
"$GENERATE" --module="$TMP/tok_bpe.vmfb" --device="$DEVICE" --parameters="$TMP/bpe.gguf" \
  --prompt="Hello world, 123!" --max-tokens=20 --verbose >"$TMP/bpe.out" 2>"$TMP/bpe.err" || fail "generate (BPE GGUF)"
got=$(sed -n 's/^hexir-generate: prompt ids:/ids:/p' "$TMP/bpe.err")
if [ "$got" == "$tok" ] && [ "${tok#ids: $eot }" == "$tok" ] && grep -q "^ids: [0-9]" "$TMP/bpe.out"; then
  pass "BPE GGUF: prompt '$tok' (no BOS), generated $(head -1 "$TMP/bpe.out" | awk "{print NF - 1}") ids"
else
  fail "BPE GGUF prompt ids '$got' vs --tokenize-only '$tok'; output $(cat "$TMP/bpe.out")"
fi

"$GENERATE" --module="$TMP/tok_stories.vmfb" --parameters="$TMP/notok.gguf" --prompt="Hi" --max-tokens=3 \
  >/dev/null 2>"$TMP/notok.err"
[ $? -eq 1 ] && grep -q "needs a tokenizer: --tokenizer, or a GGUF with tokenizer.ggml" "$TMP/notok.err" \
  && pass "a GGUF without a tokenizer refuses --prompt by name" || fail "no-tokenizer GGUF: $(cat "$TMP/notok.err")"
[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
