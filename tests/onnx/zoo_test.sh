#!/usr/bin/env bash
# The torchvision model zoo (zoo_models.py: ResNet-18, MobileNetV3-small, EfficientNet-B0, a
# small DenseNet, ShuffleNetV2-x0.5, RegNetY-400MF, SqueezeNet 1.1, a narrow ConvNeXt, a small
# ViT, nn.TransformerEncoder, an LSTM; random weights exported by torch.onnx.export at test
# time), each exported with fixed dims and with dynamic batch and
# spatial/sequence dims: hexir-import (weights over 4 KiB to a parameter file) ->
# hexir-compile -> hexir-run --parameters on the CPU, compared with PyTorch's outputs within
# 1e-4 relative, the dynamic export at two input sizes from one module. Every case runs; the
# failures are listed at the end with their stage and cause. Without torch/torchvision:
# "HEXIR_SKIPPED: <reason>", exit 0. `zoo_test.sh NAME...` runs only the named models.
set -uo pipefail

IMPORT=tools/hexir-import/hexir-import
COMPILE=tools/hexir-compile/hexir-compile
RUN=tools/hexir-run/hexir-run
MODELS=tests/onnx/zoo_models.py
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
PY=/usr/bin/python3  # Debian's python3-torch/python3-torchvision live in the system interpreter

if ! "$PY" -c "import torch, torchvision, numpy" 2>/dev/null; then
  echo "HEXIR_SKIPPED: $PY cannot import torch and torchvision (Debian python3-torchvision, tools/setup.sh)"
  exit 0
fi
"$PY" "$MODELS" "$TMP" "$@" 2>"$TMP/export.log" || { cat "$TMP/export.log"; exit 1; }

failed=()   # "case: stage: cause"
broken=""   # cases whose import or compile failed: their runs are not attempted
compiled=""
# Runs one stage; on failure records the case, the stage and the first error line.
stage() {
  local name=$1 what=$2
  shift 2
  if ! "$@" >"$TMP/$name.$what.log" 2>&1; then
    failed+=("$name: $what: $(grep -m1 -iE 'error|fail' "$TMP/$name.$what.log" || head -1 "$TMP/$name.$what.log")")
    return 1
  fi
}
while read -r name run kind; do
  [[ " $broken " == *" $name "* ]] && continue
  if [[ " $compiled " != *" $name "* ]]; then
    start=$SECONDS
    if ! stage "$name" import "$IMPORT" "$TMP/$name.onnx" -o "$TMP/$name.mlir" \
           --parameters="$TMP/$name.gguf" ||
       ! stage "$name" compile "$COMPILE" "$TMP/$name.mlir" --target=cpu -o "$TMP/$name.vmfb"; then
      broken="$broken $name"
      continue
    fi
    echo "$name: imported and compiled in $((SECONDS - start)) s"
    compiled="$compiled $name"
  fi
  stage "$name.$run" run "$RUN" --module="$TMP/$name.vmfb" --parameters="$TMP/$name.gguf" \
    --input="@$TMP/$name.$run.in.npy" --output="@$TMP/$name.$run.got.npy" || continue
  if ! verdict=$("$PY" - "$TMP/$name.$run.got.npy" "$TMP/$name.$run.out.npy" <<'PYEOF'
import sys
import numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
if got.shape != want.shape:
    print("shape %s, PyTorch %s" % (got.shape, want.shape))
    sys.exit(1)
err = float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-6))
print("max relative error %.2g (limit 1e-4)" % err)
sys.exit(0 if err <= 1e-4 else 1)
PYEOF
  ); then
    failed+=("$name.$run: compare: $verdict")
  else
    echo "ok   $name.$run ($kind): $verdict"
  fi
done < "$TMP/runs.txt"
if [ ${#failed[@]} -gt 0 ]; then
  echo "zoo: ${#failed[@]} failure(s):"
  printf '  FAIL %s\n' "${failed[@]}"
  exit 1
fi
echo "zoo: every model matches PyTorch"
