#!/usr/bin/env bash
# Compiles every module the LLM tests use into OUTDIR as llm_NAME.TARGET.vmfb, for running
# the tests where hexir-compile cannot run (the GPU machine has no LLVM):
#   bash tests/llm/precompile.sh OUTDIR [TARGET=cuda]        (here, after bazel build)
#   HEXIR_PRECOMPILED_DIR=OUTDIR HEXIR_LLM_DEVICE=cuda bash tests/llm/stories260k_test.sh
#   (run the tests from a runfiles-like root: tools/hexir-generate/hexir-generate and
#    tests/llm/ at their paths; random_checkpoints_test.sh also needs /usr/bin/python3 torch)
# Modules depend only on checkpoint headers, so the random checkpoints regenerated there fit.
# HEXIR_COMPILE_FLAGS (e.g. --cpu=x86-64-v3) is passed to hexir-compile.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
bazel build --jobs=2 //tools/hexir-import //tools/hexir-compile //tools/hexir-quantize >/dev/null 2>&1
export HEXIR_LLM_DEVICE=${2:-cuda} HEXIR_SAVE_MODULES_DIR=$OUT
unset HEXIR_PRECOMPILED_DIR
source tests/llm/common.sh
IMPORT=bazel-bin/tools/hexir-import/hexir-import
COMPILE=bazel-bin/tools/hexir-compile/hexir-compile
build_module "$SHARED/models/stories260K.bin" stories
for cfg in "${RANDOM_CONFIGS[@]}"; do
  set -- $cfg
  name="h$1_kv$2_v$3_s$4"
  write_random "$TMP/$name.bin" "$@"
  build_module "$TMP/$name.bin" "$name"
done
build_module "$TMP/h4_kv2_v-50_s1.bin" short --cache-len=10
for name in h4_kv2_v-50_s1 h4_kv1_v50_s3; do build_module "$TMP/$name.bin" "${name}_f16" --weights=f16; done
build_module "$SHARED/models/stories260K.bin" stories_kvbf16 --kv-cache=bf16
for spec in h4_kv2_v-50_s1:f16 h4_kv1_v50_s3:bf16; do  # kv_cache_test.sh
  build_module "$TMP/${spec%%:*}.bin" "${spec%%:*}_kv${spec##*:}" --kv-cache="${spec##*:}"
done
# gguf_test.sh: modules imported from the GGUF conversions (same text as the .bin's).
/usr/bin/python3 tests/llm/llama2c_to_gguf.py "$SHARED/models/stories260K.bin" "$SHARED/models/tok512.bin" "$TMP/stories.gguf"
build_module "$TMP/stories.gguf" gguf_stories
build_module "$TMP/stories.gguf" gguf_stories_f16 --weights=f16
/usr/bin/python3 tests/llm/llama2c_to_gguf.py "$TMP/h4_kv2_v-50_s1.bin" - "$TMP/h4_kv2_v-50_s1.gguf"
build_module "$TMP/h4_kv2_v-50_s1.gguf" gguf_h4_kv2_v-50_s1
build_module "$TMP/h4_kv2_v-50_s1.gguf" gguf_h4_kv2_v-50_s1_f16 --weights=f16
# gguf_tokenizer_test.sh: stories260K as GGUF with its vocabulary, the random BPE-vocabulary llama.
build_module "$TMP/stories.gguf" tok_stories
"$NPY" tests/llm/write_bpe_gguf.py "$TMP/bpe.gguf"
build_module "$TMP/bpe.gguf" tok_bpe
# hf_test.sh: the Hugging Face folders.
for spec in "${HF_CONFIGS[@]}"; do
  IFS='|' read -r name flags import_flags <<<"$spec"
  # shellcheck disable=SC2086
  "$NPY" tests/llm/hf_llama.py write "$TMP/hf_$name" $flags
  # shellcheck disable=SC2086
  build_module "$TMP/hf_$name" "hf_$name" $import_flags
done
# small_layer_fusion_test.sh: its fused and unfused stories260K modules (common.sh).
for form in fused unfused; do small_fusion_module "$TARGET" $form >/dev/null; done
# llama_cpp_quantized_test.sh: hexir-quantize's files (deterministic) of both models.
QUANTIZE=bazel-bin/tools/hexir-quantize/hexir-quantize
/usr/bin/python3 tests/llm/quantized_reference.py write-random "$TMP/qrandom.bin" 256 512 2 8 4 512 512 2
for spec in "stories $SHARED/models/stories260K.bin q8_0 q4_0 q4_1 q5_0 bf16" \
            "random $TMP/qrandom.bin q4_k q5_k q6_k q8_0 q4_0 q4_1 q5_0 bf16 f16"; do
  set -- $spec
  model=$1 src=$2; shift 2
  for type in "$@"; do
    "$QUANTIZE" "$src" -o "$TMP/${model}_$type.gguf" --type="$type" --tokenizer="$SHARED/models/tok512.bin" >/dev/null
    build_module "$TMP/${model}_$type.gguf" "${model}_$type"
  done
done
ls "$OUT"
[ "$failures" -eq 0 ]
