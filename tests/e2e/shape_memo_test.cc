// Shape work once per set of dims (passes/vm/MemoizeShapeWork.cpp): a function's shape
// arithmetic and shape checks run on a call whose argument dims differ from the last
// successful computation's, and are loaded otherwise. Calls in one context with rows that
// change, repeat and come back give the f64 reference's results every time; a call that
// fails a shape check is refused with its message and leaves the stored shapes of the last
// good dims usable (the next call with them computes nothing and is right).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>

#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;
using tools::HostValue;

// y = tanh(... tanh(tanh(x W0) W1) ... W5) + r: x [M x 16], widths 16 -> 24 -> 12 -> 20 -> 8 ->
// 28 -> 8, r [M' x 8] (M' must equal M: a check of the residual add); weights constants.
// Six layers: enough shape work that the compiler memoizes it (checked below).
constexpr int kWidths[] = {16, 24, 12, 20, 8, 28, 8};
constexpr int kLayers = 6;

double Weight(int layer, int k, int n) { return 0.01 * ((k * 7 + n * 3 + layer * 5) % 23) - 0.11; }

std::string MlpSource() {
  std::string s =
      "#id = affine_map<(i, j) -> (i, j)>\n"
      "func.func @main(%x: tensor<?x16xf32>, %r: tensor<?x8xf32>) -> tensor<?x8xf32> {\n"
      "  %c0 = arith.constant 0 : index\n"
      "  %m = tensor.dim %x, %c0 : tensor<?x16xf32>\n"
      "  %z = arith.constant 0.0 : f32\n";
  std::string prev = "%x";
  for (int l = 0; l < kLayers; ++l) {
    const std::string L = std::to_string(l), k = std::to_string(kWidths[l]), n = std::to_string(kWidths[l + 1]);
    std::string w;
    for (int i = 0; i < kWidths[l]; ++i)
      for (int j = 0; j < kWidths[l + 1]; ++j) w += (w.empty() ? "" : ", ") + std::to_string(Weight(l, i, j));
    const std::string flat = std::to_string(kWidths[l] * kWidths[l + 1]);
    s += "  %wf" + L + " = arith.constant dense<[" + w + "]> : tensor<" + flat + "xf32>\n";
    s += "  %w" + L + " = tensor.expand_shape %wf" + L + " [[0, 1]] output_shape [" + k + ", " + n +
         "] : tensor<" + flat + "xf32> into tensor<" + k + "x" + n + "xf32>\n";
    s += "  %e" + L + " = tensor.empty(%m) : tensor<?x" + n + "xf32>\n";
    s += "  %f" + L + " = linalg.fill ins(%z : f32) outs(%e" + L + " : tensor<?x" + n + "xf32>) -> tensor<?x" + n + "xf32>\n";
    s += "  %p" + L + " = linalg.matmul ins(" + prev + ", %w" + L + " : tensor<?x" + k + "xf32>, tensor<" + k + "x" +
         n + "xf32>) outs(%f" + L + " : tensor<?x" + n + "xf32>) -> tensor<?x" + n + "xf32>\n";
    s += "  %g" + L + " = tensor.empty(%m) : tensor<?x" + n + "xf32>\n";
    s += "  %t" + L +
         " = linalg.generic {indexing_maps = [#id, #id], iterator_types = [\"parallel\", \"parallel\"]} ins(%p" + L +
         " : tensor<?x" + n + "xf32>) outs(%g" + L + " : tensor<?x" + n + "xf32>) {\n"
         "  ^bb0(%a: f32, %o: f32):\n"
         "    %u = math.tanh %a : f32\n"
         "    linalg.yield %u : f32\n"
         "  } -> tensor<?x" + n + "xf32>\n";
    prev = "%t" + L;
  }
  s += "  %ey = tensor.empty(%m) : tensor<?x8xf32>\n"
       "  %y = linalg.add ins(" + prev + ", %r : tensor<?x8xf32>, tensor<?x8xf32>) outs(%ey : tensor<?x8xf32>) -> tensor<?x8xf32>\n"
       "  return %y : tensor<?x8xf32>\n"
       "}\n";
  return s;
}

HostTensor Reference(const HostTensor& x, const HostTensor& r, int64_t rows) {
  std::vector<double> a(F32(x), F32(x) + rows * kWidths[0]);
  for (int l = 0; l < kLayers; ++l) {
    const int K = kWidths[l], N = kWidths[l + 1];
    std::vector<double> b(rows * N);
    for (int64_t i = 0; i < rows; ++i)
      for (int j = 0; j < N; ++j) {
        double acc = 0;
        for (int k = 0; k < K; ++k) acc += a[i * K + k] * Weight(l, k, j);
        b[i * N + j] = std::tanh(acc);
      }
    a = std::move(b);
  }
  HostTensor y = ZerosF32({rows, 8});
  for (int64_t i = 0; i < rows * 8; ++i) F32(y)[i] = float(a[i] + double(F32(r)[i]));
  return y;
}

void ChangingRows(const std::string& device) {
  std::string module = CompileOrDie(MlpSource(), "shape_memo_mlp", device);
  // The module memoizes (value globals hold the stored shapes), or this test checks nothing
  // (not where modules come precompiled: no compiler on the GPU machine).
  if (!std::getenv("HEXIR_PRECOMPILED_DIR")) {
    std::string source = TempFile("shape_memo_mlp.mlir");
    WriteFile(source, MlpSource());
    CommandResult vm = RunCommand(HexirCompile() + " --target=" + device + " --emit-vm-mlir -o - " + source);
    REQUIRE(vm.exit_code == 0);
    REQUIRE_THAT(vm.output, Catch::Contains("hexir_vm.value_globals"));
    REQUIRE_THAT(vm.output, Catch::Contains("hexir_vm.global.load.i64"));
  }

  auto session = OpenOrDie(module, device);
  auto fn = session->LookupFunction("main");
  REQUIRE(fn.ok());
  auto call = [&](int64_t rows, int64_t residual_rows, unsigned seed, uint64_t* instructions) {
    HostTensor x = RandomF32({rows, 16}, seed), r = RandomF32({residual_rows, 8}, seed + 100);
    std::vector<HostValue> results;
    const uint64_t before = session->context().stats().instructions;
    Status st = session->Call(*fn, {Tensor(x), Tensor(r)}, &results);
    if (instructions) *instructions = session->context().stats().instructions - before;
    if (st.ok()) {
      REQUIRE(results.size() == 1);
      RequireClose(results[0].tensor, Reference(x, r, rows), 1e-5, 1e-5);
    }
    return st;
  };
  // Rows 3, 3, 5, 5, 3, 3: the calls after a change of rows compute the shapes (and record a
  // new command buffer), the repeats load them: fewer instructions, equal among repeats.
  const int64_t rows[] = {3, 3, 5, 5, 3, 3};
  uint64_t count[6];
  for (int i = 0; i < 6; ++i) {
    Status st = call(rows[i], rows[i], 10 + i, &count[i]);
    INFO("call " << i << ": " << st.ToString());
    REQUIRE(st.ok());
  }
  INFO("VM instructions per call: " << count[0] << " " << count[1] << " " << count[2] << " " << count[3]
                                    << " " << count[4] << " " << count[5]);
  REQUIRE(count[1] < count[0]);
  REQUIRE(count[2] > count[1]);
  REQUIRE(count[3] == count[1]);
  REQUIRE(count[4] > count[3]);
  REQUIRE(count[5] == count[1]);

  // A residual of 4 rows against 3: refused naming both; the shapes stored for 3 rows stay, so
  // the next call with 3 rows computes none of them (a repeat's count) and is right.
  Status bad = call(3, 4, 40, nullptr);
  REQUIRE_FALSE(bad.ok());
  REQUIRE_THAT(bad.ToString(), Catch::Contains("dimension 0 of operand 1 is 4, expected 3"));
  uint64_t after_failure = 0;
  REQUIRE(call(3, 3, 41, &after_failure).ok());
  REQUIRE(after_failure == count[1]);
  // And a refused call with other rows than the stored ones leaves them too.
  REQUIRE_FALSE(call(7, 2, 42, nullptr).ok());
  REQUIRE(call(3, 3, 43, &after_failure).ok());
  REQUIRE(after_failure == count[1]);
  // One row (a batch-1 specialization, where the compiler makes one) and back.
  REQUIRE(call(1, 1, 44, nullptr).ok());
  REQUIRE(call(1, 1, 45, nullptr).ok());
  REQUIRE(call(3, 3, 46, nullptr).ok());
}
HEXIR_E2E_TEST_ON_DEVICES("shape work runs again only when the dims change; a refused call keeps the stored shapes",
                          ChangingRows)

}  // namespace
}  // namespace hexir::e2e
