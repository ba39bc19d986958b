#!/usr/bin/env bash
# Kept calls never submit more than inlined ones (passes/README.md step 1a): by default a call
# stays a call only where its callee records into the caller's command buffer, every other
# callee with device work is inlined (hexir-inline-unrecordable-calls). Checked against
# `hexir-compile --inline-device-calls` (every call inlined), on the CPU, compile + run here:
# - stories260K and random768 (dim 768, 12 layers, f16 weights; a header-only checkpoint, the
#   weights filled by hexir-bench) @generate, prefill + 8 decode steps: queue submissions per
#   call equal (hexir-bench's "queue submissions"); stories260K's ids equal the golden ones;
# - two CPU devices (--embedding-device 0: the layers on device 1) and 2 tensor-parallel ranks
#   (collectives in every layer): no callee can record there, so the default module is the
#   --inline-device-calls one, byte for byte (tensor-parallel: also the one of the layers
#   written out, hexir-import --inline-layers);
# - stories260K and random768 for --target=cuda (compile-only): every function left a call
#   records into its caller (hexir-dump lists NAME.record beside it: the decode step's @layer),
#   and @prefill_layer, whose projections' rows are the prompt length (an M = 1 switch on the
#   host, dispatch/MatmulRows.h), is inlined.
source tests/llm/common.sh
BENCH=tools/hexir-bench/hexir-bench
DUMP=tools/hexir-dump/hexir-dump
BENCH_PY=tests/llm/torch_decode_bench.py
CKPT=$SHARED/models/stories260K.bin
if [ ! -f "$CKPT" ]; then
  echo "HEXIR_SKIPPED: stories260K: $CKPT not found"
  exit 0
fi

# submissions MODULE: hexir-bench's queue submissions per @generate call (prompt [1], 9 tokens).
submissions() {
  "$BENCH" --module="$1" --device=cpu --cpu-threads=0 --function=generate --input=1xi64=1 \
    --input=i64=9 --fill-inputs=0.01 --iterations=2 --no-baselines 2>&1 |
    sed -n 's/.*queue submissions \([0-9.]*\).*/\1/p' | head -1
}

# compile_pair NAME MLIR TARGET...: $TMP/NAME.vmfb (default) and $TMP/NAME_inlined.vmfb.
compile_pair() {
  local name=$1 mlir=$2; shift 2
  "$COMPILE" "$mlir" "$@" -o "$TMP/$name.vmfb" || { fail "$name: hexir-compile $*"; return 1; }
  "$COMPILE" "$mlir" "$@" --inline-device-calls -o "$TMP/${name}_inlined.vmfb" \
    || { fail "$name: hexir-compile $* --inline-device-calls"; return 1; }
}

# same_submissions NAME: the default and inlined modules submit as often per call.
same_submissions() {
  local name=$1 kept inlined
  kept=$(submissions "$TMP/$name.vmfb")
  inlined=$(submissions "$TMP/${name}_inlined.vmfb")
  if [ -n "$kept" ] && [ "$kept" = "$inlined" ]; then
    pass "$name: $kept submissions per @generate call, as --inline-device-calls"
  else
    fail "$name: '$kept' submissions per @generate call, --inline-device-calls '$inlined'"
  fi
}

# stories260K on the CPU: submissions, and the golden ids through the kept calls.
"$IMPORT" "$CKPT" -o "$TMP/s.mlir" || fail "stories260K: hexir-import"
if compile_pair s260 "$TMP/s.mlir" --target=cpu; then
  same_submissions s260
  golden=$(cut -d' ' -f1-17 tests/llm/stories260K_greedy_ids.txt)
  ids=$("$GENERATE" --module="$TMP/s260.vmfb" --parameters="$CKPT" --max-tokens=16 2>/dev/null | head -1)
  if [ "$ids" = "$golden" ]; then pass "stories260K: 16 greedy ids equal the reference's"
  else fail "stories260K: ids '$ids', the reference's '$golden'"; fi
fi

# random768 (f16 weights) on the CPU.
/usr/bin/python3 "$BENCH_PY" --write-random "$TMP/random768.bin" --dim 768 --hidden 2048 --layers 12 \
  --heads 12 --kv-heads 12 --vocab 32000 --seq-len 256 --seed 768 --header-only
"$IMPORT" "$TMP/random768.bin" --weights=f16 -o "$TMP/r768.mlir" || fail "random768: hexir-import"
compile_pair r768 "$TMP/r768.mlir" --target=cpu && same_submissions r768

# identical NAME: the default module is the --inline-device-calls one.
identical() {
  if cmp -s "$TMP/$1.vmfb" "$TMP/$1_inlined.vmfb"; then
    pass "$1: the default module equals --inline-device-calls' ($(stat -c %s "$TMP/$1.vmfb") bytes)"
  else
    fail "$1: the default module differs from --inline-device-calls'"
  fi
}
"$IMPORT" "$CKPT" --embedding-device=0 -o "$TMP/placed.mlir" || fail "placed: hexir-import"
compile_pair placed "$TMP/placed.mlir" --target=cpu --target=cpu && identical placed
"$IMPORT" "$CKPT" --tensor-parallel=2 -o "$TMP/tp.mlir" || fail "tensor-parallel: hexir-import"
compile_pair tp "$TMP/tp.mlir" --target=cpu && identical tp
# The tensor-parallel @layer calls, inlined by default, give the written-out layers' module.
"$IMPORT" "$CKPT" --tensor-parallel=2 --inline-layers -o "$TMP/tp_out.mlir" || fail "tensor-parallel: hexir-import --inline-layers"
if "$COMPILE" "$TMP/tp_out.mlir" --target=cpu -o "$TMP/tp_out.vmfb" && cmp -s "$TMP/tp.vmfb" "$TMP/tp_out.vmfb"; then
  pass "tp: @layer calls compile to the written-out layers' module"
else
  fail "tp: the @layer calls' module differs from the written-out layers' (--inline-layers)"
fi

# CUDA (compile-only): a called function that does not record into its caller (no
# "NAME.record" beside it) submits its own command buffers at each call; none may be left.
# submitting_callees MODULE: such functions (neither exported nor the module's initializers).
submitting_callees() {
  "$DUMP" --no-code "$1" | awk '
    /^exports/ { section = "e"; next } /^functions/ { section = "f"; next } /^[^ ]/ { section = "" }
    section == "e" && match($0, /^  "[^"]+"/) { exported[substr($0, 4, RLENGTH - 4)] = 1 }
    section == "f" && match($0, /^  #[0-9]+ "[^"]+"/) { n = $2; gsub(/"/, "", n); names[n] = 1 }
    END { for (n in names) if (!(n in exported) && n !~ /^__hexir/ && n !~ /\.record$/ && !((n ".record") in names)) print n }'
}
for model in s260 r768; do
  mlir=$TMP/s.mlir
  [ $model = r768 ] && mlir=$TMP/r768.mlir
  "$COMPILE" "$mlir" --target=cuda -o "$TMP/${model}_cuda.vmfb" || { fail "$model: hexir-compile --target=cuda"; continue; }
  left=$(submitting_callees "$TMP/${model}_cuda.vmfb" | tr '\n' ' ')
  functions=$("$DUMP" --no-code "$TMP/${model}_cuda.vmfb" | awk '
    /^functions/ { f = 1; next } /^[^ ]/ { f = 0 }
    f && match($0, /^  #[0-9]+ "[^"]+"/) { n = $2; gsub(/"/, "", n); print n }')
  recorded=$(grep -c '\.record$' <<<"$functions")
  if [ -z "$left" ] && grep -qx 'layer\.record' <<<"$functions" && ! grep -qx 'prefill_layer' <<<"$functions"; then
    pass "$model [cuda]: every kept callee records into its caller ($recorded recorded callees: @layer; @prefill_layer inlined)"
  else
    fail "$model [cuda]: callees submitting their own command buffers: '$left'; recorded: $(grep '\.record$' <<<"$functions" | tr '\n' ' ')"
  fi
done

[ "$failures" -eq 0 ] || exit 1
