# Shared setup for the LLM tests (sourced). Runs from the Bazel runfiles root, where the
# tools sit at their package paths. Sets IMPORT COMPILE GENERATE REFERENCE SHARED TMP
# PYTHON (HEXIR_TORCH_PYTHON, default Debian's /usr/bin/python3), TORCH (1 when it has torch) and DEVICE/TARGET (HEXIR_LLM_DEVICE,
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
PYTHON=${HEXIR_TORCH_PYTHON:-/usr/bin/python3}
TORCH=0
"$PYTHON" -c "import torch" 2>/dev/null && TORCH=1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
# Random-checkpoint configurations: heads, kv heads, vocab (negative: separate classifier), seed.
RANDOM_CONFIGS=("4 2 -50 1" "4 4 -50 2" "4 1 50 3" "8 2 -64 4" "2 1 40 5")
# Hugging Face folders of hf_test.sh (hf_llama.py write): "name|writer flags|import flags".
HF_CONFIGS=(
  "f32|--dtype f32 --heads 4 --kv-heads 2 --theta 500000 --seed 4|"
  "bf16|--dtype bf16 --heads 4 --kv-heads 4 --tied --shards 3 --seed 2|"
  "f16|--dtype f16 --heads 4 --kv-heads 1 --linear-scaling 4 --seed 3|"
  "f16w|--dtype f16 --heads 4 --kv-heads 1 --linear-scaling 4 --seed 3|--weights=f16"
)
# A Python with numpy (the GGUF/HF writers need it): $PYTHON, else Debian's; empty if none.
NPY=""
for p in "$PYTHON" /usr/bin/python3 python3; do "$p" -c "import numpy" 2>/dev/null && { NPY=$p; break; }; done
# write_random OUT.bin HEADS KV_HEADS VOCAB SEED (dim 32, hidden 48, 2 layers, seq_len 96)
write_random() {
  "$PYTHON" "$REFERENCE" --write-random "$1" --dim 32 --hidden 48 --layers 2 \
    --heads "$2" --kv-heads "$3" --vocab "$4" --seq-len 96 --seed "$5"
}
# import + compile CKPT into $TMP/NAME.vmfb; extra import flags after NAME. A module depends
# only on the checkpoint's header. HEXIR_PRECOMPILED_DIR: take llm_NAME.TARGET.vmfb from there
# instead (machines without LLVM; see precompile.sh); HEXIR_SAVE_MODULES_DIR: also save it
# there; HEXIR_COMPILE_FLAGS: extra hexir-compile flags.
build_module() {
  local ckpt=$1 name=$2; shift 2
  local saved=${HEXIR_PRECOMPILED_DIR:-}/llm_$name.$TARGET.vmfb
  if [ -n "${HEXIR_PRECOMPILED_DIR:-}" ] && [ -f "$saved" ]; then
    cp "$saved" "$TMP/$name.vmfb"
    echo "note: module $name precompiled: $saved"
    return 0
  fi
  "$IMPORT" "$ckpt" -o "$TMP/$name.mlir" "$@" || { fail "hexir-import $ckpt"; return 1; }
  # shellcheck disable=SC2086
  "$COMPILE" "$TMP/$name.mlir" --target="$TARGET" ${HEXIR_COMPILE_FLAGS:-} -o "$TMP/$name.vmfb" \
    || { fail "hexir-compile $name"; return 1; }
  if [ -n "${HEXIR_SAVE_MODULES_DIR:-}" ]; then cp "$TMP/$name.vmfb" "$HEXIR_SAVE_MODULES_DIR/llm_$name.$TARGET.vmfb"; fi
}
# small_fusion_module TARGET FORM (fused|unfused): the path of small_layer_fusion_test.sh's
# stories260K module llm_small_FORM.TARGET.vmfb: the --device-loop import on the CPU, the chunked
# host loop's on CUDA; unfused with --small-reduction-extent=0. Taken from HEXIR_PRECOMPILED_DIR
# when there, else compiled into $TMP (and saved to HEXIR_SAVE_MODULES_DIR: precompile.sh).
small_fusion_module() {
  local target=$1 form=$2 flags="" loop=--device-loop
  local name=llm_small_$form.$target.vmfb
  if [ -n "${HEXIR_PRECOMPILED_DIR:-}" ] && [ -f "$HEXIR_PRECOMPILED_DIR/$name" ]; then
    echo "$HEXIR_PRECOMPILED_DIR/$name"
    return 0
  fi
  [ "$target" = cuda ] && loop=--host-loop
  [ -f "$TMP/s$loop.mlir" ] || "$IMPORT" "$SHARED/models/stories260K.bin" $loop -o "$TMP/s$loop.mlir" >&2 || return 1
  [ "$form" = unfused ] && flags=--small-reduction-extent=0
  # shellcheck disable=SC2086
  "$COMPILE" "$TMP/s$loop.mlir" --target="$target" $flags ${HEXIR_COMPILE_FLAGS:-} -o "$TMP/$name" >&2 || return 1
  [ -z "${HEXIR_SAVE_MODULES_DIR:-}" ] || cp "$TMP/$name" "$HEXIR_SAVE_MODULES_DIR/"
  echo "$TMP/$name"
}
