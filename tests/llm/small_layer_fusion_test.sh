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
# per_layer DEVICE MODULE LAYERS: dispatches per layer of a decode step. A @generate call of 17
# tokens runs 16 decode steps, so an executable run n times runs floor(n / 16) times a step
# (the prefill adds fewer than 16), of which floor(that / LAYERS) per layer (the step's own
# kernels, embedding and classifier, run fewer than LAYERS times a step).
per_layer() {
  "$BENCH" --module="$2" --device="$1" --function=generate --input=1xi64=1 --input=i64=17 \
    --fill-inputs=0.01 --iterations=1 --no-baselines 2>&1 |
    awk -v layers="$3" '$1 ~ /^generate_dispatch_/ { n += int(int($2 / 16) / layers) } END { print n + 0 }'
}
# dispatches DEVICE MODULE TOKENS: dispatches per @generate call of MODULE making TOKENS tokens.
dispatches() {
  "$BENCH" --module="$2" --device="$1" --function=generate --input=1xi64=1 \
    --input=i64="$3" --fill-inputs=0.01 --iterations=1 --no-baselines 2>&1 |
    sed -n 's/.*dispatches per call: \([0-9]*\).*/\1/p' | head -1
}
# check TARGET DEVICE: ids fused and unfused, and at least the sum and the scaling of the 11
# norms (two per layer, the final one) gone from each decode step (CPU measured: 79 -> 27 per
# step, 14 -> 4 per layer: norm + q/k/v + rotary + both KV-cache row writes, attention,
# wo + residual, the whole FFN; CUDA: each projection recomputes its norm, 22 fewer); on
# the CPU at most 5 dispatches per layer (issue #18 item 2).
check() {
  local target=$1 device=$2 form
  declare -A step path
  for form in fused unfused; do
    path[$form]=$(small_fusion_module "$target" $form) || { fail "$target: hexir-compile $form"; return; }
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
  layers=$(od -An -t d4 -j 8 -N 4 "$CKPT" | tr -d ' ')  # llama2.c header: dim, hidden, layers, ...
  if [ "${layers:-0}" -gt 0 ]; then
    per=$(per_layer "$device" "${path[fused]}" "$layers")
    echo "$target fused: $per dispatches per layer of a decode step ($layers layers)"
    # Both targets (CUDA since its one-block small-layer kernels, CUDABlockLevels.cpp).
    [ "$per" -ge 1 ] && [ "$per" -le 5 ] && pass "$target fused: $per dispatches per layer (<= 5)" \
      || fail "$target fused: $per dispatches per layer (expected 1..5)"
  else
    fail "$target: no layer count in $CKPT's header"
  fi
  if [ -n "${step[fused]:-}" ] && [ -n "${step[unfused]:-}" ]; then
    saved=$((step[unfused] - step[fused]))
    [ $saved -ge 22 ] && pass "$target fused: $saved fewer dispatches per decode step (${step[unfused]} -> ${step[fused]})" \
      || fail "$target: dispatches per decode step: unfused ${step[unfused]}, fused ${step[fused]} (expected >= 22 fewer)"
  fi
}
check "$TARGET" "$DEVICE"
[ -n "${HEXIR_LLM_DEVICE:-}" ] || check cuda cuda
[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
