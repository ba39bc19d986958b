#!/usr/bin/env bash
# GGUF import end to end: stories260K converted to GGUF by llama2c_to_gguf.py (f32, and f16
# 2-D weights with f32 norms), imported from the .gguf, compiled, and generated with
# --parameters=MODEL.gguf: 100 greedy ids equal the llama2.c path's reference ids
# (stories260K_greedy_ids.txt), for f32 and f16 modules. The GGUF import's MLIR equals the
# llama2.c import's (same program). A random checkpoint with GQA and a separate classifier
# (output.weight) as GGUF against reference.py (torch). Malformed GGUF files fail with named
# errors in hexir-import and hexir-generate.
source tests/llm/common.sh
CKPT=$SHARED/models/stories260K.bin
TOK=$SHARED/models/tok512.bin
if [ ! -f "$CKPT" ] || [ ! -f "$TOK" ]; then
  echo "HEXIR_SKIPPED: stories260K: $CKPT or $TOK not found"
  exit 0
fi
# The converter needs numpy: the torch Python, else Debian's.
NPY=""
for p in "$PYTHON" /usr/bin/python3; do "$p" -c "import numpy" 2>/dev/null && { NPY=$p; break; }; done
[ -n "$NPY" ] || { echo "HEXIR_SKIPPED: no Python with numpy for llama2c_to_gguf.py"; exit 0; }
TO_GGUF=tests/llm/llama2c_to_gguf.py
"$NPY" "$TO_GGUF" "$CKPT" "$TOK" "$TMP/stories.gguf" || fail "llama2c_to_gguf.py f32"
"$NPY" "$TO_GGUF" "$CKPT" "$TOK" "$TMP/stories_f16.gguf" --f16 || fail "llama2c_to_gguf.py --f16"
golden=$(cat tests/llm/stories260K_greedy_ids.txt)
[ "$(echo "$golden" | wc -w)" -ge 61 ] || fail "golden list shorter than 60 ids"

# The same program from either format (hexir-import needs no LLVM, but a precompiled run may
# lack it: only checked where it runs).
if [ -z "${HEXIR_PRECOMPILED_DIR:-}" ]; then
  "$IMPORT" "$CKPT" -o "$TMP/bin.mlir" && "$IMPORT" "$TMP/stories.gguf" -o "$TMP/gguf.mlir" \
    && "$IMPORT" "$TMP/stories_f16.gguf" -o "$TMP/gguf16.mlir" || fail "hexir-import"
  cmp -s "$TMP/bin.mlir" "$TMP/gguf.mlir" && cmp -s "$TMP/bin.mlir" "$TMP/gguf16.mlir" \
    && pass "GGUF (f32 and f16) import = llama2.c import (identical MLIR)" || fail "GGUF MLIR differs from llama2.c's"
fi

build_module "$TMP/stories.gguf" gguf_stories || exit 1
build_module "$TMP/stories.gguf" gguf_stories_f16 --weights=f16 || exit 1
# matching_prefix IDS REF: how many leading ids agree (divergence step = that + 1).
matching_prefix() {
  python3 - "$1" "$2" <<'PY'
import sys
a, b = sys.argv[1].split()[1:], sys.argv[2].split()[1:]
n = 0
while n < min(len(a), len(b)) and a[n] == b[n]: n += 1
print(n)
PY
}
for case in "stories gguf_stories" "stories_f16 gguf_stories" "stories gguf_stories_f16" "stories_f16 gguf_stories_f16"; do
  set -- $case
  out=$("$GENERATE" --module="$TMP/$2.vmfb" --device="$DEVICE" --parameters="$TMP/$1.gguf" \
        --tokenizer="$TOK" --max-tokens=100) || { fail "hexir-generate $1.gguf with $2"; continue; }
  ids=$(echo "$out" | sed -n 1p)
  if [ "$ids" == "$golden" ]; then pass "$1.gguf, module $2: 100 greedy ids equal the llama2.c reference's"
  else fail "$1.gguf, module $2: ids differ from the reference after $(matching_prefix "$ids" "$golden") steps"
    echo " hexir:     $ids"; echo " reference: $golden"; fi
  case "$(echo "$out" | sed -n 2p)" in
    "Once upon a time, there was a little girl named Lily."*) ;;
    *) fail "$1.gguf text: '$(echo "$out" | sed -n 2p)'";;
  esac
done

# GQA (4 heads, 2 kv heads) and a separate classifier (output.weight), f32 and f16 files.
if [ "$TORCH" == 1 ]; then
  name=h4_kv2_v-50_s1
  write_random "$TMP/$name.bin" 4 2 -50 1 || fail "write $name"
  "$NPY" "$TO_GGUF" "$TMP/$name.bin" - "$TMP/$name.gguf" && "$NPY" "$TO_GGUF" "$TMP/$name.bin" - "$TMP/${name}_f16.gguf" --f16 \
    || fail "llama2c_to_gguf.py $name"
  if build_module "$TMP/$name.gguf" "gguf_$name" && build_module "$TMP/$name.gguf" "gguf_${name}_f16" --weights=f16; then
    got=$("$GENERATE" --module="$TMP/gguf_$name.vmfb" --device="$DEVICE" --parameters="$TMP/$name.gguf" --prompt-ids=1,5,9 --max-tokens=60)
    want=$("$PYTHON" "$REFERENCE" "$TMP/$name.bin" --steps 60 --prompt-ids 1,5,9)
    [ "$got" == "$want" ] && pass "$name.gguf: $(($(echo "$want" | wc -w) - 1)) ids equal the reference's" \
      || { fail "$name.gguf"; echo " hexir:     $got"; echo " reference: $want"; }
    # f16 file + f16 module: every weight f16-rounded, as reference.py --f16-weights.
    got=$("$GENERATE" --module="$TMP/gguf_${name}_f16.vmfb" --device="$DEVICE" --parameters="$TMP/${name}_f16.gguf" --prompt-ids=1,5,9 --max-tokens=60)
    want=$("$PYTHON" "$REFERENCE" "$TMP/$name.bin" --steps 60 --prompt-ids 1,5,9 --f16-weights)
    [ "$got" == "$want" ] && pass "${name}_f16.gguf, f16 module: $(($(echo "$want" | wc -w) - 1)) ids equal the f16 reference's" \
      || { fail "${name}_f16.gguf"; echo " hexir:     $got"; echo " reference: $want"; }
    # A module from another checkpoint: named mismatch.
    err=$("$GENERATE" --module="$TMP/gguf_stories.vmfb" --device="$DEVICE" --parameters="$TMP/$name.gguf" --max-tokens=3 2>&1) \
      && fail "mismatched GGUF module accepted"
    grep -q "checkpoint '" <<<"$err" && pass "mismatched module: $err" || fail "mismatched module message: $err"
  fi
else
  echo "note: $PYTHON has no torch; random GGUF checkpoint not checked"
fi

# Malformed files: named errors, exit 1, no crash (details in compiler/importers/llama/gguf_test.cc).
head -c $(($(stat -c %s "$TMP/stories.gguf") - 100)) "$TMP/stories.gguf" >"$TMP/truncated.gguf"
head -c 5000 "$TMP/stories.gguf" >"$TMP/cut_metadata.gguf"
printf 'GGUX\003\0\0\0' | cat - <(tail -c +9 "$TMP/stories.gguf") >"$TMP/badmagic.gguf"
expect_error() {  # WHAT PATTERN COMMAND...
  local what=$1 pattern=$2; shift 2
  local err rc
  err=$("$@" 2>&1); rc=$?
  if [ "$rc" -eq 1 ] && grep -q -- "$pattern" <<<"$err"; then pass "$what: $err"
  else fail "$what (exit $rc): $err"; fi
}
if [ -z "${HEXIR_PRECOMPILED_DIR:-}" ]; then
  expect_error "import truncated" "truncated.gguf'.*GGUF: tensor '.*' (f32, info at offset [0-9]*) data at file offset [0-9]*.*runs past the end" \
    "$IMPORT" "$TMP/truncated.gguf" -o "$TMP/t.mlir"
  expect_error "import cut in the metadata" "GGUF: metadata 'tokenizer.ggml.tokens'\[[0-9]*\] at offset [0-9]*: string length" \
    "$IMPORT" "$TMP/cut_metadata.gguf" -o "$TMP/t.mlir"
  expect_error "import bad magic" "GGUF: bad magic at offset 0" "$IMPORT" "$TMP/badmagic.gguf" -o "$TMP/t.mlir"
fi
expect_error "generate truncated" "truncated.gguf'.*runs past the end of the file" \
  "$GENERATE" --module="$TMP/gguf_stories.vmfb" --parameters="$TMP/truncated.gguf" --max-tokens=3
[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
