#!/usr/bin/env bash
# Runs the runtime, VM, HAL and end-to-end tests under AddressSanitizer + UndefinedBehavior-
# Sanitizer (bazel --config=asan, see .bazelrc: the code that loads and runs modules and the
# importers are instrumented, the MLIR-heavy compiler is not) and ends with "N passed, N failed, N skipped".
# A sanitizer report fails its test (halt_on_error; leaks included). Exit status 0 only when
# nothing failed.
#   bash tools/sanitize.sh [--quick] [bazel flags...]
# Always: the unit tests of base, vm, hal, runtime, tools/common and the importers' file
# parsers (compiler/importers: llama2.c, GGUF, safetensors, ONNX), and tests/fuzz (the seed
# corpus and 20000 mutations through the harness, the libFuzzer targets' runs). --quick adds
# the hostile-input e2e tests; without it every e2e test. CI (.ci/run) runs --quick after
# tools/test.sh. Measured on the 2-core machine (2026-12-02): cold 66.5 min at load 20-40
# (809 actions, 204 cache hits: the compiler's objects are the plain build's); warm, in a
# fresh clone of a cached commit, 5 min 11 s (53 of 57 tests cached). A change to a header of
# //vm or //hal:core reruns ~110-140 instrumented compiles (close to the cold cost).
set -uo pipefail
cd "$(dirname "$0")/.."
export HEXIR_SHARED_DIR="${HEXIR_SHARED_DIR:-$(cd .. && pwd)/shared}"

targets=(//base/... //vm/... //hal/... //runtime/... //tools/common/... //tests/fuzz/...
         //compiler/importers/...)
if [ "${1:-}" == "--quick" ]; then
  shift
  targets+=(//tests/e2e:hostile_tool_inputs_test //tests/e2e:module_corruption_test
            //tests/e2e:kernel_checks_test //tests/e2e:shape_checks_test //tests/e2e:deadline_test
            //tests/e2e:generate_limits_test)
else
  targets+=(//tests/e2e/...)
fi

exec bash tools/summarized_test.sh --config=asan --keep_going "$@" -- "${targets[@]}"
