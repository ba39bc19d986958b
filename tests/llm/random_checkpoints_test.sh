#!/usr/bin/env bash
# Small random llama2.c checkpoints (written by reference.py): shared and separate
# classifiers, head ratios 4/2, 4/4, 4/1, 8/2; Hexir's greedy ids must equal the PyTorch
# reference's for 80 steps (or up to an early BOS/EOS stop, which both must take), from BOS
# and after a 9-token prompt (one-pass prefill); two of them also with f16 weights.
# Each checkpoint's module checks the stop flag every 1, 3, 8, 5 or 2 decode steps
# (hexir-import --decode-chunk): stops inside a chunk must give the same ids.
# Also the error paths: a truncated checkpoint, a module that does not fit the checkpoint.
source tests/llm/common.sh
if [ "$TORCH" != 1 ]; then
  echo "HEXIR_SKIPPED: random checkpoints: $PYTHON has no torch (Debian python3-torch)"
  exit 0
fi
stopped=0
chunks=(1 3 8 5 2)
k=0
for cfg in "${RANDOM_CONFIGS[@]}"; do
  set -- $cfg
  name="h$1_kv$2_v$3_s$4"
  ckpt=$TMP/$name.bin
  write_random "$ckpt" "$@" || { fail "write $name"; continue; }
  chunk=${chunks[$((k++ % ${#chunks[@]}))]}
  build_module "$ckpt" "$name" --decode-chunk="$chunk" || continue
  got=$("$GENERATE" --module="$TMP/$name.vmfb" --device="$DEVICE" --parameters="$ckpt" --max-tokens=80)
  want=$("$PYTHON" "$REFERENCE" "$ckpt" --steps 80)
  n=$(($(echo "$want" | wc -w) - 1))
  if [ "$got" == "$want" ]; then pass "$name (decode chunk $chunk): $n ids equal the reference's"; else
    fail "$name"; echo " hexir:     $got"; echo " reference: $want"; fi
  [ "$n" -lt 80 ] && stopped=$((stopped + 1))
  # A 9-token prompt: one-pass prefill (M = 9), then decode.
  prompt="1,$(($4 + 3)),7,11,$(($4 * 2 + 5)),13,0,17,19"
  got=$("$GENERATE" --module="$TMP/$name.vmfb" --device="$DEVICE" --parameters="$ckpt" --prompt-ids="$prompt" --max-tokens=40)
  want=$("$PYTHON" "$REFERENCE" "$ckpt" --steps 40 --prompt-ids "$prompt")
  [ "$got" == "$want" ] && pass "$name, prompt $prompt: $(($(echo "$want" | wc -w) - 1)) ids equal the reference's" \
    || { fail "$name prompt $prompt"; echo " hexir:     $got"; echo " reference: $want"; }
done
# f16 weights (hexir-import --weights=f16; hexir-generate converts at upload) against the
# reference with every weight rounded to f16.
for name in h4_kv2_v-50_s1 h4_kv1_v50_s3; do
  build_module "$TMP/$name.bin" "${name}_f16" --weights=f16 || continue
  got=$("$GENERATE" --module="$TMP/${name}_f16.vmfb" --device="$DEVICE" --parameters="$TMP/$name.bin" --prompt-ids=1,5,9 --max-tokens=60)
  want=$("$PYTHON" "$REFERENCE" "$TMP/$name.bin" --steps 60 --f16-weights --prompt-ids 1,5,9)
  [ "$got" == "$want" ] && pass "$name, f16 weights: $(($(echo "$want" | wc -w) - 1)) ids equal the reference's" \
    || { fail "$name f16"; echo " hexir:     $got"; echo " reference: $want"; }
done

[ "$stopped" -ge 1 ] && pass "$stopped case(s) stopped early on BOS/EOS" || fail "no case exercised the early stop"

# A cache shorter than the generation bounds it.
build_module "$TMP/h4_kv2_v-50_s1.bin" short --cache-len=10 || true
got=$("$GENERATE" --module="$TMP/short.vmfb" --device="$DEVICE" --parameters="$TMP/h4_kv2_v-50_s1.bin" --max-tokens=80)
[ "$(echo "$got" | wc -w)" -eq 11 ] && pass "--cache-len=10 bounds generation to 10 ids" || fail "cache-len 10: '$got'"

# A prompt longer than the cache is refused.
err=$("$GENERATE" --module="$TMP/short.vmfb" --device="$DEVICE" --parameters="$TMP/h4_kv2_v-50_s1.bin" --prompt-ids=1,2,3,4,5,6,7,8,9,10,11 --max-tokens=3 2>&1) \
  && fail "prompt longer than the cache accepted"
grep -q "the prompt has 11 tokens but module .* has a KV cache of 10 positions" <<<"$err" \
  && pass "long prompt: $err" || fail "long prompt message: $err"

# Errors name what is wrong.
head -c 5000 "$TMP/h4_kv2_v-50_s1.bin" > "$TMP/truncated.bin"
if [ -x "$IMPORT" ]; then
  err=$("$IMPORT" "$TMP/truncated.bin" -o "$TMP/t.mlir" 2>&1) && fail "truncated checkpoint accepted"
  grep -q "file has 5000 bytes but the header" <<<"$err" && grep -q "does not fit" <<<"$err" \
    && pass "truncated checkpoint: $err" || fail "truncated checkpoint message: $err"
  err=$("$IMPORT" "$TMP/h4_kv2_v-50_s1.bin" --decode-chunk=0 -o "$TMP/t.mlir" 2>&1) && fail "decode chunk 0 accepted"
  grep -q "decode chunk 0 is outside 1..4096" <<<"$err" && pass "decode chunk 0: $err" \
    || fail "decode chunk 0 message: $err"
else
  echo "note: no hexir-import here; truncated-checkpoint import check not run"
fi
err=$("$GENERATE" --module="$TMP/short.vmfb" --device="$DEVICE" --parameters="$TMP/truncated.bin" --max-tokens=3 2>&1) \
  && fail "hexir-generate accepted a truncated checkpoint"
grep -q "does not fit" <<<"$err" && pass "hexir-generate, truncated checkpoint: $err" \
  || fail "hexir-generate truncated checkpoint message: $err"
err=$("$GENERATE" --module="$TMP/h4_kv4_v-50_s2.vmfb" --device="$DEVICE" --parameters="$TMP/h4_kv2_v-50_s1.bin" --max-tokens=3 2>&1) \
  && fail "mismatched module accepted"
grep -q "layer0.wk" <<<"$err" && pass "mismatched module: $err" || fail "mismatched module message: $err"
[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
