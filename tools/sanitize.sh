#!/usr/bin/env bash
# Runs the runtime, VM, HAL and end-to-end tests under AddressSanitizer + UndefinedBehavior-
# Sanitizer (bazel --config=asan, see .bazelrc: the code that loads and runs modules is
# instrumented, the compiler is not) and ends with "N passed, N failed, N skipped".
# A sanitizer report fails its test (halt_on_error; leaks included). Exit status 0 only when
# nothing failed.
#   bash tools/sanitize.sh [--quick] [bazel flags...]
# Always: the unit tests of base, vm, hal, runtime and tools/common, and tests/fuzz (the seed
# corpus and 20000 mutations through the harness, the libFuzzer targets' runs). --quick adds
# the hostile-input e2e tests; without it every e2e test. CI (.ci/run) does not run it yet:
# from a cold cache --quick took over 77 minutes on the loaded 2-core build machine (293 of
# 301 actions, 1 of 56 tests; the compiler objects of that commit were cold too); the warm
# cost, now that the outputs are the same in every clone (.bazelrc: no -g), is not measured.
set -uo pipefail
cd "$(dirname "$0")/.."
export HEXIR_SHARED_DIR="${HEXIR_SHARED_DIR:-$(cd .. && pwd)/shared}"

targets=(//base/... //vm/... //hal/... //runtime/... //tools/common/... //tests/fuzz/...)
if [ "${1:-}" == "--quick" ]; then
  shift
  targets+=(//tests/e2e:hostile_tool_inputs_test //tests/e2e:module_corruption_test
            //tests/e2e:kernel_checks_test //tests/e2e:shape_checks_test //tests/e2e:deadline_test
            //tests/e2e:generate_limits_test)
else
  targets+=(//tests/e2e/...)
fi

exec bash tools/summarized_test.sh --config=asan --keep_going "$@" -- "${targets[@]}"
