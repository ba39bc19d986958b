#!/usr/bin/env bash
# hexir-fuse-small-reductions on stories260K (passes/dispatch/fusion/README.md): the decode
# step's RMSNorms run inside the projections that read them. The module compiled with the
# target's default (fused on every target) and with --small-reduction-extent=0 (unfused)
# gives the checked-in reference's 100 greedy ids both ways, and fewer dispatches per decode
# step: from hexir-bench's per-dispatch counts of @generate calls of 9 and 17 tokens (8 more
# decode steps), each executable's growth in whole multiples of 8 (per_step: the host loop's
# once-a-chunk work, prefill and warm-up drop out, whatever the chunk size).
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
# counts DEVICE MODULE TOKENS: hexir-bench's per-dispatch counts of one @generate call of
# MODULE making TOKENS tokens, as "executable count" lines, then "total N" (its "dispatches
# per call").
counts() {
  "$BENCH" --module="$2" --device="$1" --function=generate --input=1xi64=1 \
    --input=i64="$3" --fill-inputs=0.01 --iterations=1 --no-baselines 2>&1 |
    awk '$1 ~ /_dispatch_[0-9]+$/ { print $1, $2 }
         /dispatches per call:/ && !t++ { sub(/.*dispatches per call: /, ""); print "total", $1 + 0 }'
}
# per_step FILE9 FILE17 DIVISOR: from the counts at 9 and 17 tokens (8 more decode steps, the
# same prompt and prefill), the dispatches of one decode step divided by DIVISOR (1: a whole
# step; the layer count: per layer): each executable's growth floor((n17 - n9) / (8 * DIVISOR)).
# Work done once per chunk of the host loop (the stop flag's reset: one dispatch a chunk of 8
# steps) grows by fewer than 8 per 8 steps and counts 0, whatever the chunk size; an
# executable run twice a layer counts 2.
per_step() {
  awk -v div="$3" 'NR == FNR { n9[$1] = $2; next } $1 != "total" { s += int(($2 - n9[$1]) / (8 * div)) }
    END { print s + 0 }' "$1" "$2"
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
    counts "$device" "${path[$form]}" 9 >"$TMP/$form.9" && counts "$device" "${path[$form]}" 17 >"$TMP/$form.17"
    d9=$(sed -n 's/^total //p' "$TMP/$form.9") d17=$(sed -n 's/^total //p' "$TMP/$form.17")
    step[$form]=$(per_step "$TMP/$form.9" "$TMP/$form.17" 1)
    # The growth not in whole steps: the host loop's per-chunk work (CUDA: 1 for the second chunk).
    other=$(( ${d17:-0} - ${d9:-0} - 8 * step[$form] ))
    if [ -n "$d9" ] && [ -n "$d17" ] && [ "${step[$form]}" -gt 0 ] && [ "$other" -ge 0 ] && [ "$other" -lt 8 ]; then
      echo "$target $form: $d9 dispatches at 9 tokens, $d17 at 17: ${step[$form]} per decode step (+$other per-chunk)"
    else
      fail "$target $form: dispatches per call '$d9' (9 tokens), '$d17' (17 tokens), ${step[$form]} per step, $other other"
      unset "step[$form]"
    fi
  done
  layers=$(od -An -t d4 -j 8 -N 4 "$CKPT" | tr -d ' ')  # llama2.c header: dim, hidden, layers, ...
  if [ "${layers:-0}" -gt 0 ]; then
    per=$(per_step "$TMP/fused.9" "$TMP/fused.17" "$layers")
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
