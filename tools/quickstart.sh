#!/usr/bin/env bash
# Installs what Hexir needs, builds everything, then compiles examples/mlp.mlir for the CPU
# and runs it, printing the result.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bazel build //...
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
set -x
bazel-bin/tools/hexir-compile/hexir-compile examples/mlp.mlir --target=cpu -o "$out/mlp.vmfb"
bazel-bin/tools/hexir-run/hexir-run --module="$out/mlp.vmfb" --device=cpu --function=main \
  --input="2x4xf32=1 2 3 4 -1 0.5 2 -3"
set +x
