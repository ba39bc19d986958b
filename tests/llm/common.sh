# Shared setup for the LLM tests (sourced). Runs from the Bazel runfiles root, where the
# tools sit at their package paths. Sets IMPORT COMPILE GENERATE REFERENCE SHARED TMP
# TORCH (1 when Debian's /usr/bin/python3 has torch) and DEVICE/TARGET (HEXIR_LLM_DEVICE,
# default cpu).
set -uo pipefail
IMPORT=tools/hexir-import/hexir-import
COMPILE=tools/hexir-compile/hexir-compile
GENERATE=tools/hexir-generate/hexir-generate
REFERENCE=tests/llm/reference.py
here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")   # the source tree's tests/llm
SHARED=${HEXIR_SHARED_DIR:-$(cd "$here/../../.." && pwd)/shared}
TMP=${TEST_TMPDIR:-$(mktemp -d)}
DEVICE=${HEXIR_LLM_DEVICE:-cpu}
TARGET=${DEVICE%%:*}
TORCH=0
/usr/bin/python3 -c "import torch" 2>/dev/null && TORCH=1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
# import + compile CKPT into $TMP/NAME.vmfb; extra import flags after NAME.
build_module() {
  local ckpt=$1 name=$2; shift 2
  "$IMPORT" "$ckpt" -o "$TMP/$name.mlir" "$@" || { fail "hexir-import $ckpt"; return 1; }
  "$COMPILE" "$TMP/$name.mlir" --target="$TARGET" -o "$TMP/$name.vmfb" || { fail "hexir-compile $name"; return 1; }
}
