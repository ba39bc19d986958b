// End-to-end on every device: hexir-compile a model for the device's target, hexir-run it,
// compare with C++ loops. Each case runs as "[cpu]" and "[cuda]" (skipped without a GPU).
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;

HostTensor RefMatmul(const HostTensor& a, const HostTensor& b) {
  int64_t m = a.dims[0], k = a.dims[1], n = b.dims[1];
  HostTensor c = ZerosF32({m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += double(F32(a)[i * k + p]) * F32(b)[p * n + j];
      F32(c)[i * n + j] = float(acc);
    }
  return c;
}

const char* kMatmul = R"mlir(
func.func @main(%a: tensor<13x37xf32>, %b: tensor<37x21xf32>) -> tensor<13x21xf32> {
  %e = tensor.empty() : tensor<13x21xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<13x21xf32>) -> tensor<13x21xf32>
  %m = linalg.matmul ins(%a, %b : tensor<13x37xf32>, tensor<37x21xf32>) outs(%f : tensor<13x21xf32>) -> tensor<13x21xf32>
  return %m : tensor<13x21xf32>
}
)mlir";

void MatmulOddSizes(const std::string& device) {
  std::string module = CompileOrDie(kMatmul, "matmul", device);
  HostTensor a = RandomF32({13, 37}, 1), b = RandomF32({37, 21}, 2);
  if (device == "cpu") {
    for (const char* threads : {"--cpu-threads=0", "--cpu-threads=1", "--cpu-threads=3"}) {
      INFO(threads);
      auto out = RunOrDie(module, "main", {a, b}, 1, device, threads);
      RequireClose(out[0], RefMatmul(a, b), 1e-4, 1e-5);
    }
  } else {
    auto out = RunOrDie(module, "main", {a, b}, 1, device);
    RequireClose(out[0], RefMatmul(a, b), 1e-4, 1e-5);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("matmul with odd sizes matches a reference loop", MatmulOddSizes)

const char* kMatmulBiasRelu = R"mlir(
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %bias: tensor<16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x16xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i,j)->(i,j)>, affine_map<(i,j)->(j)>, affine_map<(i,j)->(i,j)>], iterator_types = ["parallel","parallel"]} ins(%m, %bias : tensor<4x16xf32>, tensor<16xf32>) outs(%e : tensor<4x16xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %s = arith.addf %x, %y : f32
      %c0 = arith.constant 0.0 : f32
      %t = arith.maximumf %s, %c0 : f32
      linalg.yield %t : f32
  } -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
)mlir";

void MatmulBiasRelu(const std::string& device) {
  std::string module = CompileOrDie(kMatmulBiasRelu, "mbr", device);
  HostTensor a = RandomF32({4, 8}, 3), b = RandomF32({8, 16}, 4), bias = RandomF32({16}, 5);
  HostTensor expected = RefMatmul(a, b);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 16; ++j) {
      float& v = F32(expected)[i * 16 + j];
      v = std::max(v + F32(bias)[j], 0.0f);
    }
  auto out = RunOrDie(module, "main", {a, b, bias}, 1, device);
  RequireClose(out[0], expected, 1e-5, 1e-6);
}
HEXIR_E2E_TEST_ON_DEVICES("matmul + bias + relu matches a reference loop", MatmulBiasRelu)

const char* kElementwiseChain = R"mlir(
#id = affine_map<(i, j) -> (i, j)>
func.func @chain(%a: tensor<3x100xf32>, %b: tensor<3x100xf32>) -> (tensor<3x100xf32>, tensor<3x100xf32>) {
  %e = tensor.empty() : tensor<3x100xf32>
  %mul = linalg.mul ins(%a, %b : tensor<3x100xf32>, tensor<3x100xf32>) outs(%e : tensor<3x100xf32>) -> tensor<3x100xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%mul, %a : tensor<3x100xf32>, tensor<3x100xf32>) outs(%e : tensor<3x100xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %ex = math.exp %x : f32
      %t = math.tanh %y : f32
      %s = arith.subf %ex, %t : f32
      %h = arith.constant 0.5 : f32
      %p = arith.mulf %s, %h : f32
      linalg.yield %p : f32
  } -> tensor<3x100xf32>
  return %r, %mul : tensor<3x100xf32>, tensor<3x100xf32>
}
)mlir";

void ElementwiseChain(const std::string& device) {
  std::string module = CompileOrDie(kElementwiseChain, "chain", device);
  HostTensor a = RandomF32({3, 100}, 6, -2, 2), b = RandomF32({3, 100}, 7, -2, 2);
  HostTensor r = ZerosF32({3, 100}), mul = ZerosF32({3, 100});
  for (int64_t i = 0; i < 300; ++i) {
    F32(mul)[i] = F32(a)[i] * F32(b)[i];
    F32(r)[i] = (std::exp(F32(mul)[i]) - std::tanh(F32(a)[i])) * 0.5f;
  }
  auto out = RunOrDie(module, "chain", {a, b}, 2, device);
  RequireClose(out[0], r, 1e-5, 1e-6);
  RequireClose(out[1], mul, 0, 0);
}
HEXIR_E2E_TEST_ON_DEVICES("an elementwise chain with math functions and two results", ElementwiseChain)

const char* kReduceTranspose = R"mlir(
func.func @main(%a: tensor<6x50xf32>, %w: tensor<5x6xf32>) -> (tensor<6xf32>, tensor<50x6xf32>, tensor<5x50xf32>) {
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<6xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<6xf32>) -> tensor<6xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(i,j)->(i,j)>, affine_map<(i,j)->(i)>], iterator_types = ["parallel","reduction"]} ins(%a : tensor<6x50xf32>) outs(%f1 : tensor<6xf32>) {
    ^bb0(%x: f32, %acc: f32):
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
  } -> tensor<6xf32>
  %e2 = tensor.empty() : tensor<50x6xf32>
  %t = linalg.transpose ins(%a : tensor<6x50xf32>) outs(%e2 : tensor<50x6xf32>) permutation = [1, 0]
  %e3 = tensor.empty() : tensor<5x50xf32>
  %f3 = linalg.fill ins(%z : f32) outs(%e3 : tensor<5x50xf32>) -> tensor<5x50xf32>
  %mm = linalg.matmul ins(%w, %a : tensor<5x6xf32>, tensor<6x50xf32>) outs(%f3 : tensor<5x50xf32>) -> tensor<5x50xf32>
  return %sum, %t, %mm : tensor<6xf32>, tensor<50x6xf32>, tensor<5x50xf32>
}
)mlir";

void ReduceTranspose(const std::string& device) {
  std::string module = CompileOrDie(kReduceTranspose, "reduce", device);
  HostTensor a = RandomF32({6, 50}, 8), w = RandomF32({5, 6}, 9);
  HostTensor sum = ZerosF32({6}), t = ZerosF32({50, 6});
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 50; ++j) {
      F32(sum)[i] += F32(a)[i * 50 + j];
      F32(t)[j * 6 + i] = F32(a)[i * 50 + j];
    }
  auto out = RunOrDie(module, "main", {a, w}, 3, device);
  RequireClose(out[0], sum, 1e-5, 1e-5);
  RequireClose(out[1], t, 0, 0);
  RequireClose(out[2], RefMatmul(w, a), 1e-5, 1e-5);
}
HEXIR_E2E_TEST_ON_DEVICES("a row reduction, a transpose and a second use of the same input", ReduceTranspose)

const char* kConstantsAndChain = R"mlir(
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %w = arith.constant dense<[[1.0, -1.0], [0.5, 2.0], [-3.0, 0.25]]> : tensor<3x2xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x2xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x2xf32>) -> tensor<2x2xf32>
  %m = linalg.matmul ins(%x, %w : tensor<2x3xf32>, tensor<3x2xf32>) outs(%f : tensor<2x2xf32>) -> tensor<2x2xf32>
  %m2 = linalg.matmul ins(%m, %m : tensor<2x2xf32>, tensor<2x2xf32>) outs(%f : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %m2 : tensor<2x2xf32>
}
)mlir";

void ConstantsAndPrintedResult(const std::string& device) {
  std::string module = CompileOrDie(kConstantsAndChain, "const", device);
  RequireDevice(device);
  CommandResult r = RunCommand(HexirRun() + " --module=" + module + " --device=" + device +
                               " --function=main '--input=2x3xf32=1 2 3 4 5 6'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // x*w = [[1*1+2*0.5-3*3, -1+4+0.75], [4+2.5-9*... ]] computed below by hand-checked loops.
  float x[6] = {1, 2, 3, 4, 5, 6}, w[6] = {1, -1, 0.5, 2, -3, 0.25}, m[4] = {}, m2[4] = {};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) m[i * 2 + j] += x[i * 3 + k] * w[k * 2 + j];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 2; ++k) m2[i * 2 + j] += m[i * 2 + k] * m[k * 2 + j];
  std::string expected = "2x2xf32=";
  for (int i = 0; i < 4; ++i) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%s%g", i ? " " : "", m2[i]);
    expected += buf;
  }
  REQUIRE(r.output == expected + "\n");
}
HEXIR_E2E_TEST_ON_DEVICES("constant weights and chained dispatches through the printed-result path", ConstantsAndPrintedResult)

}  // namespace
}  // namespace hexir::e2e
