#!/usr/bin/env bash
# Peak memory of importing a ~350 MB ONNX model against the model's size (issue 20, item 6:
# at most 1.2x). Exports a 3-layer MLP (3 x 5376^2 f32 weights, random, fixed seed) with
# Debian's python3-torch, imports it with `hexir-import --parameters` (weights streamed to the
# GGUF parameter file, not into the text) under /usr/bin/time, and prints the model's size,
# the import's peak RSS, their ratio and the size of the module text.
#   bazel build //tools/hexir-import && bash bench/onnx_import_memory/run.sh [OUTDIR]
# Binaries come from $HEXIR_BIN or bazel-bin; OUTDIR defaults to /tmp/hexir-onnx-import-memory
# (about 0.7 GB is written there).
set -euo pipefail
cd "$(dirname "$0")/../.."
IMPORT=${HEXIR_BIN:-bazel-bin/tools/hexir-import}/hexir-import
OUT=${1:-/tmp/hexir-onnx-import-memory}
PY=/usr/bin/python3  # Debian's python3-torch lives in the system interpreter
mkdir -p "$OUT"
"$PY" - "$OUT/mlp.onnx" <<'PYEOF' 2>/dev/null
import sys
import torch
import torch.nn as nn
torch.manual_seed(0)
d = 5376
model = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d)).eval()
torch.onnx.export(model, torch.randn(1, d), sys.argv[1], opset_version=14, input_names=["x"],
                  output_names=["y"])
PYEOF
/usr/bin/time -f '%M' -o "$OUT/maxrss_kb.txt" "$IMPORT" "$OUT/mlp.onnx" -o "$OUT/mlp.mlir" \
  --parameters="$OUT/mlp.gguf"
model=$(stat -c %s "$OUT/mlp.onnx")
text=$(stat -c %s "$OUT/mlp.mlir")
params=$(stat -c %s "$OUT/mlp.gguf")
rss_kb=$(tail -1 "$OUT/maxrss_kb.txt")
awk -v m="$model" -v r="$rss_kb" -v t="$text" -v p="$params" 'BEGIN {
  printf "model %.1f MB, parameter file %.1f MB, module text %.1f KB\n", m / 1e6, p / 1e6, t / 1e3
  printf "import peak RSS %.1f MB = %.3fx the model (goal <= 1.2x)\n", r * 1024 / 1e6, r * 1024 / m
}'
