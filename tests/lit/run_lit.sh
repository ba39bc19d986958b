#!/bin/bash
# Bazel sh_test driver: runs the lit suite against the hexir-opt / hexir-compile / hexir-dump data deps.
# Fails (non-zero) when any lit test fails.
set -euo pipefail
here="$(pwd)"
export HEXIR_OPT="$here/tools/hexir-opt/hexir-opt"
export HEXIR_COMPILE="$here/tools/hexir-compile/hexir-compile"
export HEXIR_DUMP="$here/tools/hexir-dump/hexir-dump"
export FILECHECK=/usr/lib/llvm-22/bin/FileCheck
export LIT_EXEC_ROOT="${TEST_TMPDIR:-$(mktemp -d)}/lit"
exec /usr/lib/llvm-22/bin/lit -v "$here/tests/lit"
