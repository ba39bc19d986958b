#!/usr/bin/env bash
# hexir-fuse-small-reductions on stories260K (passes/dispatch/fusion/README.md): the decode
# step's RMSNorms run inside the projections that read them. The device-loop module compiled
# with the target's default (CPU: fused) and with --small-reduction-extent=0 (unfused) gives
# the checked-in reference's 100 greedy ids both ways, and fewer dispatches per decode step:
# hexir-bench's dispatches per @generate call at 17 and at 9 tokens, difference / 8.
source tests/llm/common.sh
BENCH=tools/hexir-bench/hexir-bench
CKPT=$SHARED/models/stories260K.bin
if [ ! -f "$CKPT" ]; then
  echo "HEXIR_SKIPPED: stories260K: $CKPT not found"
  exit 0
fi
"$IMPORT" "$CKPT" --device-loop -o "$TMP/s.mlir" || { echo "FAIL: hexir-import"; exit 1; }
golden=$(cat tests/llm/stories260K_greedy_ids.txt)
# dispatches NAME TOKENS: dispatches per @generate call of $TMP/NAME.vmfb making TOKENS tokens.
dispatches() {
  "$BENCH" --module="$TMP/$1.vmfb" --device="$DEVICE" --function=generate --input=1xi64=1 \
    --input=i64="$2" --fill-inputs=0.01 --iterations=1 --no-baselines 2>&1 |
    sed -n 's/.*dispatches per call: \([0-9]*\).*/\1/p' | head -1
}
declare -A step
for form in fused unfused; do
  flags=""; [ $form = unfused ] && flags=--small-reduction-extent=0
  # shellcheck disable=SC2086
  "$COMPILE" "$TMP/s.mlir" --target="$TARGET" $flags -o "$TMP/$form.vmfb" || { fail "hexir-compile $form"; continue; }
  ids=$("$GENERATE" --module="$TMP/$form.vmfb" --device="$DEVICE" --parameters="$CKPT" --max-tokens=100) \
    || fail "hexir-generate $form"
  [ "$ids" == "$golden" ] && pass "$form: 100 greedy ids equal the reference's" \
    || fail "$form: ids differ from the reference: $ids"
  d9=$(dispatches $form 9) d17=$(dispatches $form 17)
  if [ -n "$d9" ] && [ -n "$d17" ] && [ $(((d17 - d9) % 8)) -eq 0 ]; then
    step[$form]=$(((d17 - d9) / 8))
    echo "$form: $d9 dispatches at 9 tokens, $d17 at 17: ${step[$form]} per decode step"
  else
    fail "$form: dispatches per call '$d9' (9 tokens), '$d17' (17 tokens)"
  fi
done
# CPU: at least the sum and the scaling of the 11 norms (two per layer, the final one) go
# (measured: 84 -> 42 per step, 15 -> 7 per layer: q/k/v + rotary and w1/w3 + SiLU * mul
# are one dispatch each); CUDA: off by default, the same count.
if [ -n "${step[fused]:-}" ] && [ -n "${step[unfused]:-}" ]; then
  saved=$((step[unfused] - step[fused]))
  if [ "$TARGET" == cpu ]; then
    [ $saved -ge 22 ] && pass "fused: $saved fewer dispatches per decode step (${step[unfused]} -> ${step[fused]})" \
      || fail "dispatches per decode step: unfused ${step[unfused]}, fused ${step[fused]} (expected >= 22 fewer)"
  else
    [ $saved -eq 0 ] && pass "$TARGET: fusion off by default (${step[fused]} per step)" \
      || fail "$TARGET: dispatches per decode step changed without the flag: ${step[unfused]} -> ${step[fused]}"
  fi
fi
[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
