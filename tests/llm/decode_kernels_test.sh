#!/usr/bin/env bash
# Every CUDA kernel of real decode modules spreads over threads: stories260K (f32), random768
# (dim 768, 12 layers, f16 weights) and the TinyLlama-1.1B shape (dim 2048, 22 layers, 4 KV
# heads, f16 weights; f32 and f16 KV cache) compiled for --target=cuda, their kernels read
# back with hexir-dump (`cuda.block_size.<entry>`, `cost.<entry>.bytes_written`). A kernel on
# a one-thread block fails the test unless a row of ALLOWED below names why it may (the KV
# cache's row writes ran on one thread until codegen::IsSlotWriteBack: 256-768 powf/sin/cos
# or copies per layer in one thread). Compile-only: no device is opened, so it runs here.
# The random checkpoints are header-only sparse files (torch_decode_bench.py --header-only):
# a module depends only on the header. Also: stories260K's decode step uses at most 2 CUDA
# kernels a layer (4 with --chain-small-layers=0) (read from the device loop's command buffer, compile-only), the
# TinyLlama-shaped one at most 12, 10 with --norm-pair-extent=16384 (its decode step's command
# buffer, 2 layers minus 1), 8 with --sibling-projections.
# PART (the first argument): which checks run, one Bazel target each so that they run in
# parallel (tests/llm/BUILD.bazel): small (stories260K-shaped kernels per layer and staged
# weights), tinyllama (TinyLlama-shaped kernels per layer), quantized (block formats' kernels
# per layer and their one-thread check), threads (the real modules' one-thread check); all
# (the default): every part.
source tests/llm/common.sh
PART=${1:-all}
case "$PART" in all|small|tinyllama|quantized|threads) ;; *) echo "usage: decode_kernels_test.sh [all|small|tinyllama|quantized|threads]"; exit 2 ;; esac
runs() { [ "$PART" = all ] || [ "$PART" = "$1" ]; }
DUMP=tools/hexir-dump/hexir-dump
BENCH_PY=tests/llm/torch_decode_bench.py
# ALLOWED: "rule|reason". The one rule: a kernel whose output is one scalar (<= 8 bytes
# written: the cache length, a position, a stop flag, a token id) has nothing to spread.
ALLOWED=("scalar|writes one element (<= 8 bytes): the whole job is one thread's")

# one_thread_kernels MODULE: prints "entry bytes_written" for each one-thread kernel, then a
# last line "kernels N".
one_thread_kernels() {
  "$DUMP" --no-code "$1" | awk '
    match($0, /attr cost\.[^ ]+\.bytes_written = "/) {
      name = $2; sub(/^cost\./, "", name); sub(/\.bytes_written$/, "", name)
      v = $4; gsub(/"/, "", v); written[name] = v }
    match($0, /attr cuda\.block_size\.[^ ]+ = "/) {
      name = $2; sub(/^cuda\.block_size\./, "", name)
      v = $4; gsub(/"/, "", v); block[name] = v; ++kernels }
    END {
      for (k in block) if (block[k] == "1,1,1") print k, (k in written ? written[k] : "?")
      print "kernels", kernels + 0 }'
}

# check NAME CKPT [import flags...] (COMPILE_FLAGS: hexir-compile's extra flags)
COMPILE_FLAGS=()
check() {
  local name=$1 ckpt=$2; shift 2
  "$IMPORT" "$ckpt" -o "$TMP/$name.mlir" "$@" || { fail "$name: hexir-import"; return; }
  "$COMPILE" "$TMP/$name.mlir" --target=cuda "${COMPILE_FLAGS[@]}" -o "$TMP/$name.cuda.vmfb" \
    || { fail "$name: hexir-compile --target=cuda ${COMPILE_FLAGS[*]}"; return; }
  local listing kernels bad=0
  listing=$(one_thread_kernels "$TMP/$name.cuda.vmfb")
  kernels=$(echo "$listing" | sed -n 's/^kernels //p')
  [ "${kernels:-0}" -ge 20 ] || { fail "$name: only ${kernels:-0} CUDA kernels read back"; return; }
  while read -r entry written; do
    [ "$entry" = kernels ] && continue
    [ -z "$entry" ] && continue
    if [[ "$written" =~ ^[0-9]+$ ]] && [ "$written" -le 8 ]; then
      echo "allowed: $name: $entry on one thread (${ALLOWED[0]#*|})"
    else
      fail "$name: kernel $entry runs on a one-thread block (writes $written bytes) and no row of ALLOWED covers it"
      bad=1
    fi
  done <<<"$listing"
  [ "$bad" -eq 0 ] && pass "$name: all $kernels CUDA kernels spread over threads (bar one-element ones)"
}

# loop_body_dispatches MODULE: the dispatches the device loop's repeating command buffer
# records (from the last hal.command_buffer.create before repeat_while_slot up to it).
loop_body_dispatches() {
  "$DUMP" "$1" | awk '
    /call.import .hal.command_buffer.create/ { n = 0 }
    /call.import .hal.command_buffer.dispatch/ { ++n }
    /call.import .hal.command_buffer.repeat_while_slot/ { print n; exit }'
}

# Kernels per layer of a stories260K-shaped decode step on CUDA (issue #18 item 2: at most 5;
# 2 with the groups chained, the default: the attention and one block for wo + residual + the
# FFN + the next layer's norm + q/k/v, passes/dispatch/fusion/README.md; 4 with
# --chain-small-layers=0, the one-block small-layer kernels of
# passes/codegen/CUDABlockLevels.cpp; 10 before them, 18 with --no-fusion): the device loop's body with 2 layers minus with 1 (header-only
# checkpoints of stories260K's shape: dim 64, hidden 172, 8 heads, 4 KV heads, vocab 512).
per_layer_kernels() {
  local flags=$1 label=$2 L body1 body2
  for L in 1 2; do
    /usr/bin/python3 "$BENCH_PY" --write-random "$TMP/s260_$L.bin" --dim 64 --hidden 172 --layers $L \
      --heads 8 --kv-heads 4 --vocab 512 --seq-len 512 --seed 260 --header-only
    "$IMPORT" "$TMP/s260_$L.bin" --device-loop -o "$TMP/s260_$L.mlir" || { fail "$label: hexir-import"; return; }
    # shellcheck disable=SC2086
    "$COMPILE" "$TMP/s260_$L.mlir" --target=cuda $flags -o "$TMP/s260_$L.vmfb" \
      || { fail "$label: hexir-compile --target=cuda $flags"; return; }
  done
  body1=$(loop_body_dispatches "$TMP/s260_1.vmfb") body2=$(loop_body_dispatches "$TMP/s260_2.vmfb")
  echo "$label: device loop body ${body1:-?} dispatches with 1 layer, ${body2:-?} with 2"
  PER_LAYER=$(( ${body2:-0} - ${body1:-0} )) BODY1=${body1:-0}
  rm -f "$TMP"/s260_*
}
if runs small; then
  per_layer_kernels "" "stories260K shape, CUDA"
  fused=$PER_LAYER tails_body=$BODY1
  # Tails (the default; --small-layer-tails=0 turns them off): the argmax pair takes the
  # in-place updates of the ids, the decode state and the stop flag (group-tails): 3 kernels
  # fewer a step than without, the layers as they were.
  per_layer_kernels "--small-layer-tails=0" "stories260K shape, CUDA --small-layer-tails=0"
  [ "$PER_LAYER" -eq "$fused" ] && [ $(( BODY1 - tails_body )) -eq 3 ] &&
    pass "stories260K shape, CUDA: $tails_body kernels a 1-layer step, 3 fewer than --small-layer-tails=0's $BODY1; $PER_LAYER per layer" ||
    fail "stories260K shape, CUDA: $tails_body kernels a 1-layer step (expected --small-layer-tails=0's $BODY1 - 3), $PER_LAYER per layer without tails (expected $fused)"
  [ "$fused" -ge 1 ] && [ "$fused" -le 2 ] && pass "stories260K shape, CUDA: $fused kernels per layer (<= 2)" \
    || fail "stories260K shape, CUDA: $fused kernels per layer (expected 1..2)"
  per_layer_kernels "--chain-small-layers=0" "stories260K shape, CUDA --chain-small-layers=0"
  [ "$PER_LAYER" -eq 4 ] && pass "stories260K shape, CUDA --chain-small-layers=0: 4 kernels per layer" \
    || fail "stories260K shape, CUDA --chain-small-layers=0: $PER_LAYER kernels per layer (expected 4)"
  per_layer_kernels "--no-fusion" "stories260K shape, CUDA --no-fusion"
  [ "$PER_LAYER" -gt "$fused" ] && pass "stories260K shape, CUDA --no-fusion: $PER_LAYER kernels per layer (more than fused)" \
    || fail "stories260K shape, CUDA --no-fusion: $PER_LAYER kernels per layer (expected more than $fused)"

  # Weights staged before the programmatic wait (passes/codegen/CUDAStagedWeights.h, issue #18):
  # the stories260K-shaped device loop's one-block groups copy their read-only weights into
  # dynamic shared memory (`cuda.shared_bytes.<entry>`) and still count as waiting first
  # (`cuda.programmatic_wait.<entry>` = 1, so graphs launch them programmatically); the largest,
  # a layer's FFN + the next layer's norm and q/k/v (w1, w3, w2 64 x 172 f32; wq, wo 64 x 64;
  # wk, wv 32 x 64; two norms), needs 181760 bytes and more with padded rows, under 227 KiB.
  # By default (shared) and with --cuda-weight-staging=shared; --cuda-weight-staging=none: no
  # dynamic shared memory anywhere.
  /usr/bin/python3 "$BENCH_PY" --write-random "$TMP/s260_staged.bin" --dim 64 --hidden 172 --layers 2 \
    --heads 8 --kv-heads 4 --vocab 512 --seq-len 512 --seed 260 --header-only
  "$IMPORT" "$TMP/s260_staged.bin" --device-loop -o "$TMP/s260_staged.mlir" || fail "staged weights: hexir-import"
  for staging in default shared none; do
    flag=(--cuda-weight-staging="$staging")
    [ "$staging" != default ] || flag=()
    "$COMPILE" "$TMP/s260_staged.mlir" --target=cuda "${flag[@]}" -o "$TMP/s260_staged.vmfb" \
      || { fail "staged weights: hexir-compile ${flag[*]}"; continue; }
    read -r staged largest unwaited < <("$DUMP" --no-code "$TMP/s260_staged.vmfb" | awk '
      match($0, /attr cuda\.shared_bytes\.[^ ]+ = "/) {
        name = $2; sub(/^cuda\.shared_bytes\./, "", name); v = $4; gsub(/"/, "", v)
        shared[name] = v; if (v + 0 > max) max = v + 0 }
      match($0, /attr cuda\.programmatic_wait\.[^ ]+ = "1"/) {
        name = $2; sub(/^cuda\.programmatic_wait\./, "", name); waits[name] = 1 }
      END { n = 0; bad = 0; for (k in shared) { ++n; if (!(k in waits)) ++bad }; print n, max + 0, bad }')
    echo "staged weights ($staging): $staged kernels with dynamic shared memory, the largest $largest bytes, $unwaited of them not waiting first"
    if [ "$staging" != none ]; then
      [ "${staged:-0}" -ge 2 ] && [ "${largest:-0}" -gt 181760 ] && [ "${largest:-0}" -le 232448 ] && [ "${unwaited:-1}" -eq 0 ] \
        && pass "staged weights ($staging): $staged one-block kernels copy their weights into shared memory (largest $largest bytes) and wait first" \
        || fail "staged weights ($staging): $staged kernels with dynamic shared memory (largest ${largest:-?}, expected > 181760 and <= 232448), $unwaited not waiting first"
    else
      [ "${staged:-1}" -eq 0 ] && pass "staged weights: none with --cuda-weight-staging=none" \
        || fail "staged weights: $staged kernels with dynamic shared memory under --cuda-weight-staging=none"
    fi
  done
  rm -f "$TMP"/s260_staged*
fi

# Kernels per layer of the TinyLlama-shaped decode step on CUDA (default import, the calls
# inlined by --inline-device-calls: the decode loop's step is the last command buffer
# `generate` records), 2 layers minus 1; kept as calls (the default), the kernels `@layer`
# records into the step (its recording function, layer.record) must be as many (issue #15:
# 13 a layer before sibling reductions, passes/codegen/CUDAWholeReductions.h: norm sum, norm
# scaling, q, k, k rotary + cache row, v + cache row, attention, wo + residual, norm sum,
# norm scaling, w1 and w3 + SiLU * mul, w2 + residual = 12; 10 since each 2048-wide norm is one
# block, --norm-pair-extent's default 16384; 12 with --norm-pair-extent=1024).
decode_step_dispatches() {
  "$DUMP" "$1" | awk '
    /^  #[0-9]+ "/ { fn = $2 }
    /call.import .hal.command_buffer.create/ { n = 0 }
    /call.import .hal.command_buffer.dispatch/ { ++n }
    /call.import .hal.command_buffer.finalize/ { if (fn == "\"generate\"") last = n }
    END { print last + 0 }'
}
# function_dispatches MODULE FN: the dispatches function FN records.
function_dispatches() {
  "$DUMP" "$1" | awk -v f="\"$2\"" '
    /^  #[0-9]+ "/ { fn = $2 }
    /call.import .hal.command_buffer.dispatch/ && fn == f { ++n }
    END { print n + 0 }'
}
# tinyllama_per_layer MAX [hexir-compile flags...]
tinyllama_per_layer() {
  local max=$1 L steps=() kept; shift
  for L in 1 2; do
    /usr/bin/python3 "$BENCH_PY" --write-random "$TMP/tl_$L.bin" --dim 2048 --hidden 5632 --layers $L \
      --heads 32 --kv-heads 4 --vocab 32000 --seq-len 512 --seed 2048 --header-only
    "$IMPORT" "$TMP/tl_$L.bin" --weights=f16 -o "$TMP/tl_$L.mlir" || { fail "tinyllama $L layers: hexir-import"; return; }
    "$COMPILE" "$TMP/tl_$L.mlir" --target=cuda --inline-device-calls "$@" -o "$TMP/tl_$L.vmfb" \
      || { fail "tinyllama $L layers: hexir-compile --inline-device-calls $*"; return; }
    steps+=("$(decode_step_dispatches "$TMP/tl_$L.vmfb")")
  done
  "$COMPILE" "$TMP/tl_1.mlir" --target=cuda "$@" -o "$TMP/tl_kept.vmfb" || { fail "tinyllama 1 layer: hexir-compile $*"; return; }
  kept=$(function_dispatches "$TMP/tl_kept.vmfb" layer.record)
  rm -f "$TMP"/tl_*
  local per=$(( steps[1] - steps[0] ))
  echo "TinyLlama shape f16, CUDA $*: decode step ${steps[0]} dispatches with 1 layer, ${steps[1]} with 2 (inlined); @layer records $kept (kept)"
  [ "$per" -ge 1 ] && [ "$per" -le "$max" ] && pass "TinyLlama shape f16, CUDA $*: $per kernels per decode layer (<= $max)" \
    || fail "TinyLlama shape f16, CUDA $*: $per kernels per decode layer (expected 1..$max)"
  [ "$kept" = "$per" ] && pass "TinyLlama shape f16, CUDA $*: @layer kept as calls records $kept kernels, as inlined" \
    || fail "TinyLlama shape f16, CUDA $*: @layer kept as calls records $kept kernels, inlined $per per layer"
}
if runs tinyllama; then
  tinyllama_per_layer 10
  tinyllama_per_layer 12 --norm-pair-extent=1024
  # q, k and v + its cache row as one kernel (hexir-merge-sibling-projections, off by default).
  tinyllama_per_layer 8 --sibling-projections
fi

# Quantized (GGUF block formats, hexir-quantize of a TinyLlama-shaped header: dim 2048, 1 and
# 2 layers, vocab 512). With --block-matvec-norm-extent=8192 each 2048-wide norm is recomputed
# inside the quantized GEMVs reading it (q, k, v; w1 + w3 as one kernel): 2 kernels fewer a
# layer than without (the two norm pairs), and every kernel still spreads over threads, q6_k
# (which the quantized GEMV does not take) keeping its norm pairs.
QUANTIZE=tools/hexir-quantize/hexir-quantize
quantized_per_layer() {  # TYPE [hexir-compile flags...]: sets PER_LAYER
  local type=$1 L steps=(); shift
  for L in 1 2; do
    /usr/bin/python3 "$BENCH_PY" --write-random "$TMP/tq_$L.bin" --dim 2048 --hidden 5632 --layers $L \
      --heads 32 --kv-heads 4 --vocab 512 --seq-len 64 --seed 2048 --header-only
    "$QUANTIZE" "$TMP/tq_$L.bin" -o "$TMP/tq_$L.gguf" --type="$type" >/dev/null || { fail "$type: hexir-quantize"; return; }
    "$IMPORT" "$TMP/tq_$L.gguf" -o "$TMP/tq_$L.mlir" || { fail "$type $L layers: hexir-import"; return; }
    "$COMPILE" "$TMP/tq_$L.mlir" --target=cuda --inline-device-calls "$@" -o "$TMP/tq_$L.vmfb" \
      || { fail "$type $L layers: hexir-compile --inline-device-calls $*"; return; }
    steps+=("$(decode_step_dispatches "$TMP/tq_$L.vmfb")")
  done
  PER_LAYER=$(( steps[1] - steps[0] ))
  echo "TinyLlama shape $type, CUDA $*: decode step ${steps[0]} dispatches with 1 layer, ${steps[1]} with 2"
}
if runs threads; then
  if [ -f "$SHARED/models/stories260K.bin" ]; then
    check stories260K "$SHARED/models/stories260K.bin"
    check stories260K_device_loop "$SHARED/models/stories260K.bin" --device-loop
  else
    echo "HEXIR_SKIPPED: stories260K: $SHARED/models/stories260K.bin not found"
  fi
  /usr/bin/python3 "$BENCH_PY" --write-random "$TMP/random768.bin" --dim 768 --hidden 2048 --layers 12 \
    --heads 12 --kv-heads 12 --vocab 32000 --seq-len 256 --seed 768 --header-only
  /usr/bin/python3 "$BENCH_PY" --write-random "$TMP/tinyllama.bin" --dim 2048 --hidden 5632 --layers 22 \
    --heads 32 --kv-heads 4 --vocab 32000 --seq-len 512 --seed 2048 --header-only
  check random768_f16 "$TMP/random768.bin" --weights=f16
  check tinyllama_f16 "$TMP/tinyllama.bin" --weights=f16
  check tinyllama_f16_kv16 "$TMP/tinyllama.bin" --weights=f16 --kv-cache=f16
  rm -f "$TMP"/random768.bin "$TMP"/tinyllama.bin
fi
if runs quantized; then
  for type in q4_0 q6_k; do
    quantized_per_layer "$type"
    plain=$PER_LAYER
    quantized_per_layer "$type" --block-matvec-norm-extent=8192
    expected=$(( plain - 2 ))
    [ "$type" != q6_k ] || expected=$plain
    [ "$plain" -ge 1 ] && [ "$PER_LAYER" -eq "$expected" ] \
      && pass "TinyLlama shape $type, CUDA --block-matvec-norm-extent=8192: $PER_LAYER kernels per decode layer (without: $plain)" \
      || fail "TinyLlama shape $type, CUDA --block-matvec-norm-extent=8192: $PER_LAYER kernels per decode layer (expected $expected; without: $plain)"
    cp "$TMP/tq_2.gguf" "$TMP/tq_$type.gguf"
    rm -f "$TMP"/tq_[12].*
  done
  for type in q4_0 q6_k; do
    COMPILE_FLAGS=(--block-matvec-norm-extent=8192)
    check "tinyllama2_${type}_normed" "$TMP/tq_$type.gguf"
    rm -f "$TMP/tq_$type.gguf"
  done
  COMPILE_FLAGS=()
fi
[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
