#!/usr/bin/env bash
# hexir-fuse-small-reductions on stories260K (passes/dispatch/fusion/README.md): the decode
# step's RMSNorms run inside the projections that read them. The module compiled with the
# target's default (fused on every target) and with --small-reduction-extent=0 (unfused)
# gives the checked-in reference's 100 greedy ids both ways, and fewer dispatches per decode
# step: hexir-bench's dispatches per @generate call at 17 and at 9 tokens, difference / 8.
# The CPU's module is the --device-loop import (a host loop there); CUDA's the chunked host
# loop's, since a device loop runs every step inside one graph launch (a WHILE node) and its
# dispatches per call do not grow with the tokens (H200: 110 fused, 112 unfused, both
# lengths).
# Targets: HEXIR_LLM_DEVICE's (default cpu), and with the default also cuda, whose modules
# are compiled here (code generation checked) and run only where a GPU answers: elsewhere
# the cuda part prints HEXIR_SKIPPED. HEXIR_PRECOMPILED_DIR / HEXIR_SAVE_MODULES_DIR: take /
# save the modules as llm_small_{fused,unfused}.TARGET.vmfb (the GPU machine has no compiler).
source tests/llm/common.sh
BENCH=tools/hexir-bench/hexir-bench
CKPT=$SHARED/models/stories260K.bin
if [ ! -f "$CKPT" ]; then
  echo "HEXIR_SKIPPED: stories260K: $CKPT not found"
  exit 0
fi
golden=$(cat tests/llm/stories260K_greedy_ids.txt)
# dispatches DEVICE MODULE TOKENS: dispatches per @generate call of MODULE making TOKENS tokens.
dispatches() {
  "$BENCH" --module="$2" --device="$1" --function=generate --input=1xi64=1 \
    --input=i64="$3" --fill-inputs=0.01 --iterations=1 --no-baselines 2>&1 |
    sed -n 's/.*dispatches per call: \([0-9]*\).*/\1/p' | head -1
}
# module TARGET FORM: the module's path (compiled here unless precompiled; saved when asked).
module() {
  local target=$1 form=$2 flags=""
  local name=llm_small_$form.$target.vmfb
  if [ -n "${HEXIR_PRECOMPILED_DIR:-}" ] && [ -f "$HEXIR_PRECOMPILED_DIR/$name" ]; then
    echo "$HEXIR_PRECOMPILED_DIR/$name"
    return 0
  fi
  local loop=--device-loop
  [ "$target" = cuda ] && loop=""
  [ -f "$TMP/s$loop.mlir" ] || "$IMPORT" "$CKPT" $loop -o "$TMP/s$loop.mlir" >&2 || return 1
  [ "$form" = unfused ] && flags=--small-reduction-extent=0
  # shellcheck disable=SC2086
  "$COMPILE" "$TMP/s$loop.mlir" --target="$target" $flags ${HEXIR_COMPILE_FLAGS:-} -o "$TMP/$name" >&2 || return 1
  [ -z "${HEXIR_SAVE_MODULES_DIR:-}" ] || cp "$TMP/$name" "$HEXIR_SAVE_MODULES_DIR/"
  echo "$TMP/$name"
}
# check TARGET DEVICE: ids fused and unfused, and at least the sum and the scaling of the 11
# norms (two per layer, the final one) gone from each decode step (CPU measured: 84 -> 42 per
# step, 15 -> 7 per layer: q/k/v + rotary and w1/w3 + SiLU * mul are one dispatch each;
# CUDA: each projection recomputes its norm, 22 fewer).
check() {
  local target=$1 device=$2 form
  declare -A step path
  for form in fused unfused; do
    path[$form]=$(module "$target" $form) || { fail "$target: hexir-compile $form"; return; }
  done
  if [ "$target" = cuda ] && ! "$GENERATE" --module="${path[fused]}" --device="$device" \
      --parameters="$CKPT" --max-tokens=1 >/dev/null 2>"$TMP/probe.txt"; then
    grep -q "libcuda.so.1 could not be loaded\|no CUDA device" "$TMP/probe.txt" || {
      fail "$target: hexir-generate: $(cat "$TMP/probe.txt")"; return; }
    echo "HEXIR_SKIPPED: stories260K [cuda]: no GPU ($(head -1 "$TMP/probe.txt"))"
    return
  fi
  for form in fused unfused; do
    ids=$("$GENERATE" --module="${path[$form]}" --device="$device" --parameters="$CKPT" --max-tokens=100) \
      || fail "$target: hexir-generate $form"
    [ "$ids" == "$golden" ] && pass "$target $form: 100 greedy ids equal the reference's" \
      || fail "$target $form: ids differ from the reference: $ids"
    d9=$(dispatches "$device" "${path[$form]}" 9) d17=$(dispatches "$device" "${path[$form]}" 17)
    if [ -n "$d9" ] && [ -n "$d17" ] && [ $(((d17 - d9) % 8)) -eq 0 ]; then
      step[$form]=$(((d17 - d9) / 8))
      echo "$target $form: $d9 dispatches at 9 tokens, $d17 at 17: ${step[$form]} per decode step"
    else
      fail "$target $form: dispatches per call '$d9' (9 tokens), '$d17' (17 tokens)"
    fi
  done
  if [ -n "${step[fused]:-}" ] && [ -n "${step[unfused]:-}" ]; then
    saved=$((step[unfused] - step[fused]))
    [ $saved -ge 22 ] && pass "$target fused: $saved fewer dispatches per decode step (${step[unfused]} -> ${step[fused]})" \
      || fail "$target: dispatches per decode step: unfused ${step[unfused]}, fused ${step[fused]} (expected >= 22 fewer)"
  fi
}
check "$TARGET" "$DEVICE"
[ -n "${HEXIR_LLM_DEVICE:-}" ] || check cuda cuda
[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
