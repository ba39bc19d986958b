#!/usr/bin/env bash
# Models exported by torch.onnx.export (Debian python3-torch; torch_export_models.py makes them
# with random weights at test time) go through hexir-import -> hexir-compile -> hexir-run and
# match PyTorch within 1e-4 relative. Their shapes are computed with Equal/Where/Mod/Cast on
# constants and Shape outputs: a static export must import with static shapes only (no `?`,
# no tensor.dim, no i64/i1 shape tensors left); a dynamic-batch export runs at two batch sizes
# from one module. Without torch: "HEXIR_SKIPPED: <reason>", exit 0.
set -euo pipefail

IMPORT=tools/hexir-import/hexir-import
COMPILE=tools/hexir-compile/hexir-compile
RUN=tools/hexir-run/hexir-run
MODELS=tests/onnx/torch_export_models.py
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
PY=/usr/bin/python3  # Debian's python3-torch lives in the system interpreter

if ! "$PY" -c "import torch, numpy" 2>/dev/null; then
  echo "HEXIR_SKIPPED: $PY cannot import torch (Debian python3-torch, tools/setup.sh)"
  exit 0
fi
"$PY" "$MODELS" "$TMP" 2>"$TMP/export.log" || { cat "$TMP/export.log"; exit 1; }

failures=0
compiled=""
while read -r name run kind; do
  if [[ " $compiled " != *" $name "* ]]; then
    "$IMPORT" "$TMP/$name.onnx" -o "$TMP/$name.mlir"
    if [ "$kind" = static ]; then
      # Folded shape computations leave no dynamic dim and no shape tensor behind.
      if grep -nE '\?x|x\?|tensor\.dim|tensor<[0-9x]*xi64>|tensor<[0-9x]*xi1>' "$TMP/$name.mlir" | head -5 | grep .; then
        echo "FAIL $name: the static export imported with dynamic shapes or shape tensors"
        failures=$((failures + 1))
      fi
    fi
    "$COMPILE" "$TMP/$name.mlir" --target=cpu -o "$TMP/$name.vmfb"
    compiled="$compiled $name"
  fi
  "$RUN" --module="$TMP/$name.vmfb" --input="@$TMP/$name.$run.in.npy" \
    --output="@$TMP/$name.$run.got.npy" >/dev/null
  if ! "$PY" - "$TMP/$name.$run.got.npy" "$TMP/$name.$run.out.npy" "$name.$run" <<'PYEOF'
import sys
import numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
if got.shape != want.shape:
    print("FAIL %s: shape %s, PyTorch %s" % (sys.argv[3], got.shape, want.shape))
    sys.exit(1)
err = float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-6))
print("%s %s: max relative error %.2g" % ("ok  " if err <= 1e-4 else "FAIL", sys.argv[3], err))
sys.exit(0 if err <= 1e-4 else 1)
PYEOF
  then
    failures=$((failures + 1))
  fi
done < "$TMP/runs.txt"
[ "$failures" -eq 0 ]
