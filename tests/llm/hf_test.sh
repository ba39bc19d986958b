#!/usr/bin/env bash
# Hugging Face folders end to end: random LlamaForCausalLM folders written by hf_llama.py
# (config.json + safetensors, q/k in HF's rotate-half layout) are imported as folders,
# compiled and generated with --parameters=DIR; 20 greedy ids after a 4-token prompt equal
# hf_llama.py's NumPy reference of the HF formulas (rotate_half), for: f32 single file,
# untied, GQA 4/2, rope_theta 500000 (seeds chosen so that all 20 steps run before an EOS); bf16 in 3 shards with an index, tied embeddings, 4/4
# heads; f16 with GQA 4/1 and linear rope scaling 4 (also as an f16 module). The folder's
# tokenizer.json (byte-level BPE) encodes prompts as the same vocabulary in a GGUF does
# (which llama_cpp_tokenizer_test.sh checks against llama.cpp), and --prompt works with the
# folder alone. Malformed folders fail with named errors in hexir-import and hexir-generate.
source tests/llm/common.sh
[ -n "$NPY" ] || { echo "HEXIR_SKIPPED: no Python with numpy for hf_llama.py"; exit 0; }
HF=tests/llm/hf_llama.py
PROMPT=72,101,289,111
for spec in "${HF_CONFIGS[@]}"; do  # common.sh
  IFS='|' read -r name flags import_flags <<<"$spec"
  dir=$TMP/hf_$name
  # shellcheck disable=SC2086
  "$NPY" $HF write "$dir" $flags || { fail "hf_llama.py write $name"; continue; }
  # shellcheck disable=SC2086
  build_module "$dir" "hf_$name" $import_flags || continue
  want=$("$NPY" $HF generate "$dir" --prompt-ids $PROMPT --steps 20)
  got=$("$GENERATE" --module="$TMP/hf_$name.vmfb" --device="$DEVICE" --parameters="$dir" --prompt-ids=$PROMPT \
        --max-tokens=20 2>&1 | head -1)
  [ "$got" == "$want" ] && [ "$(echo "$want" | wc -w)" -eq 21 ] && pass "HF $name ($flags $import_flags): $got" \
    || fail "HF $name: hexir '$got' vs reference '$want'"
done

# tokenizer.json = the same vocabulary as a GGUF; --prompt with the folder alone.
"$NPY" tests/llm/write_bpe_gguf.py "$TMP/bpe.gguf" || fail "write_bpe_gguf.py"
for text in "Once upon a time, they'll count 12345!" "Café  naïve   日本語 🙂" $'tabs\tand\nnewlines '; do
  a=$("$GENERATE" --parameters="$TMP/hf_f32" --prompt="$text" --tokenize-only --max-tokens=0 2>&1)
  b=$("$GENERATE" --parameters="$TMP/bpe.gguf" --prompt="$text" --tokenize-only --max-tokens=0 2>&1)
  [ "$a" == "$b" ] && pass "tokenizer.json = GGUF BPE: $(echo "$a" | head -1 | head -c 70)" || fail "tokenizer.json '$a' vs GGUF '$b'"
done
out=$("$GENERATE" --module="$TMP/hf_f32.vmfb" --device="$DEVICE" --parameters="$TMP/hf_f32" --prompt="Once upon" \
      --max-tokens=8 --verbose 2>&1)
grep -q "^ids: [0-9]" <<<"$out" && [ "$(echo "$out" | wc -l)" -ge 3 ] && pass "--prompt with a HF folder alone" \
  || fail "--prompt with a HF folder: $out"

# Malformed folders: named errors, exit 1.
expect_error() {  # WHAT PATTERN COMMAND...
  local what=$1 pattern=$2; shift 2
  local out rc
  out=$("$@" 2>&1); rc=$?
  [ $rc -eq 1 ] && grep -q -- "$pattern" <<<"$out" && pass "$what: $(echo "$out" | tail -1 | head -c 150)" \
    || fail "$what: exit $rc, output: $out"
}
for brk in missing-config architecture missing-tensor shape truncated header-length; do
  "$NPY" $HF write "$TMP/bad_$brk" --break $brk >/dev/null || fail "write --break $brk"
done
# hexir-import needs no LLVM, but a precompiled run's bundle lacks it: checked where it runs.
if [ -z "${HEXIR_PRECOMPILED_DIR:-}" ]; then
expect_error "missing config" "bad_missing-config' has no config.json" "$IMPORT" "$TMP/bad_missing-config" -o "$TMP/x.mlir"
expect_error "unknown architecture" "\"architectures\" is \[GPT2LMHeadModel\]; only LlamaForCausalLM" \
  "$IMPORT" "$TMP/bad_architecture" -o "$TMP/x.mlir"
expect_error "missing tensor" "tensor 'model.layers.1.mlp.up_proj.weight' is missing" \
  "$IMPORT" "$TMP/bad_missing-tensor" -o "$TMP/x.mlir"
expect_error "shape mismatch" "tensor 'model.layers.0.self_attn.k_proj.weight' has shape \[18, 32\], expected \[16, 32\]" \
  "$IMPORT" "$TMP/bad_shape" -o "$TMP/x.mlir"
expect_error "truncated safetensors" "model.safetensors': tensor '.*' data ends at [0-9]*, past the end of the file" \
  "$IMPORT" "$TMP/bad_truncated" -o "$TMP/x.mlir"
expect_error "header length past the file" "header length 1099511627776 runs past the end of the file" \
  "$IMPORT" "$TMP/bad_header-length" -o "$TMP/x.mlir"
fi
expect_error "generate with a truncated folder" "data ends at [0-9]*, past the end of the file" \
  "$GENERATE" --module="$TMP/hf_f32.vmfb" --parameters="$TMP/bad_truncated" --max-tokens=3
[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
