#!/usr/bin/env bash
# Runs every ONNX backend node test of Debian's libonnx-testdata through hexir-import,
# hexir-compile and hexir-run (tests/onnx/node_runner), prints the table and the summary line,
# and fails only if a test listed in tests/onnx/expected_passing.txt does not pass.
set -euo pipefail
exec tests/onnx/node_runner \
  --hexir-compile=tools/hexir-compile/hexir-compile \
  --hexir-run=tools/hexir-run/hexir-run \
  --work="${TEST_TMPDIR:-/tmp}/onnx-node" \
  --expected=tests/onnx/expected_passing.txt --quiet
