// CPU kernel paths at awkward sizes (odd, prime, shorter than a vector, not a multiple of
// any tile) against double-precision C++ references: the dot products along contiguous
// weights (LLM decode's matvec, f32 and f16, attention's q.K^T), [in][out] weights, and
// innermost reductions, each vectorized with reassociated partial sums
// (passes/codegen/CPUReductionOrder.h), on 0, 1 and 3 worker threads.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <string>

#include "hal/element_type.h"
#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;

const char* kThreadCounts[] = {"--cpu-threads=0", "--cpu-threads=1", "--cpu-threads=3"};

// Replaces every "@NAME@" of `text` by its value.
std::string Fill(std::string text, const std::vector<std::pair<std::string, int64_t>>& values) {
  for (const auto& [name, value] : values) {
    std::string key = "@" + name + "@";
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key))
      text.replace(at, key.size(), std::to_string(value));
  }
  return text;
}

// Random f16 values in [-1, 1] and their exact f32 widening (for the reference).
HostTensor RandomF16(std::vector<int64_t> dims, unsigned seed, std::vector<float>* widened) {
  HostTensor t;
  t.element_type = static_cast<int32_t>(hal::ElementType::kF16);
  t.dims = std::move(dims);
  t.bytes.resize(static_cast<size_t>(t.element_count() * 2));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  widened->resize(static_cast<size_t>(t.element_count()));
  for (int64_t i = 0; i < t.element_count(); ++i) {
    _Float16 h = static_cast<_Float16>(dist(rng));
    std::memcpy(t.bytes.data() + 2 * i, &h, 2);
    (*widened)[i] = static_cast<float>(h);
  }
  return t;
}

// y[n] = sum_k w[n * k_count + k] * x[k], in double.
HostTensor RefRowsDotX(const float* w, const float* x, int64_t n_count, int64_t k_count) {
  HostTensor y = ZerosF32({n_count});
  for (int64_t n = 0; n < n_count; ++n) {
    double acc = 0;
    for (int64_t k = 0; k < k_count; ++k) acc += double(w[n * k_count + k]) * x[k];
    F32(y)[n] = float(acc);
  }
  return y;
}

void RunOnThreadCounts(const std::string& module, const std::vector<HostTensor>& inputs,
                       const HostTensor& expected) {
  for (const char* threads : kThreadCounts) {
    INFO(threads);
    auto out = RunOrDie(module, "main", inputs, 1, "cpu", threads);
    RequireClose(out[0], expected, 1e-5, 1e-5);
  }
}

const char* kMatvecF32 = R"mlir(
func.func @main(%w: tensor<@N@x@K@xf32>, %x: tensor<@K@xf32>) -> tensor<@N@xf32> {
  %e = tensor.empty() : tensor<@N@xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<@N@xf32>) -> tensor<@N@xf32>
  %y = linalg.matvec ins(%w, %x : tensor<@N@x@K@xf32>, tensor<@K@xf32>) outs(%f : tensor<@N@xf32>) -> tensor<@N@xf32>
  return %y : tensor<@N@xf32>
}
)mlir";

TEST_CASE("an f32 matvec over [out][in] weights matches a double reference at odd sizes") {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{37, 1001}, {67, 7}, {1, 3}, {130, 64}}) {
    INFO("N = " << n << ", K = " << k);
    std::string name = "matvec_f32_" + std::to_string(n) + "x" + std::to_string(k);
    std::string module = CompileOrDie(Fill(kMatvecF32, {{"N", n}, {"K", k}}), name);
    HostTensor w = RandomF32({n, k}, 11), x = RandomF32({k}, 12);
    RunOnThreadCounts(module, {w, x}, RefRowsDotX(F32(w), F32(x), n, k));
  }
}

// As the llama importer writes f16 weights: a generic widening each element of W.
const char* kMatvecF16 = R"mlir(
func.func @main(%x: tensor<@K@xf32>, %w: tensor<@N@x@K@xf16>) -> tensor<@N@xf32> {
  %e = tensor.empty() : tensor<@N@xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<@N@xf32>) -> tensor<@N@xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(n, k) -> (k)>, affine_map<(n, k) -> (n, k)>, affine_map<(n, k) -> (n)>], iterator_types = ["parallel", "reduction"]}
      ins(%x, %w : tensor<@K@xf32>, tensor<@N@x@K@xf16>) outs(%f : tensor<@N@xf32>) {
    ^bb0(%a: f32, %b: f16, %acc: f32):
      %bf = arith.extf %b : f16 to f32
      %p = arith.mulf %a, %bf : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<@N@xf32>
  return %y : tensor<@N@xf32>
}
)mlir";

TEST_CASE("an f16-weight matvec widened in its body matches a double reference at odd sizes") {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{45, 517}, {3, 9}, {257, 96}}) {
    INFO("N = " << n << ", K = " << k);
    std::string name = "matvec_f16_" + std::to_string(n) + "x" + std::to_string(k);
    std::string module = CompileOrDie(Fill(kMatvecF16, {{"N", n}, {"K", k}}), name);
    std::vector<float> wide;
    HostTensor x = RandomF32({k}, 21), w = RandomF16({n, k}, 22, &wide);
    RunOnThreadCounts(module, {x, w}, RefRowsDotX(wide.data(), F32(x), n, k));
  }
}

// y = x W with W [in][out] (the contiguous dimension is the output's).
const char* kVecmatF16 = R"mlir(
func.func @main(%x: tensor<@K@xf32>, %w: tensor<@K@x@N@xf16>) -> tensor<@N@xf32> {
  %e = tensor.empty() : tensor<@N@xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<@N@xf32>) -> tensor<@N@xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(n, k) -> (k)>, affine_map<(n, k) -> (k, n)>, affine_map<(n, k) -> (n)>], iterator_types = ["parallel", "reduction"]}
      ins(%x, %w : tensor<@K@xf32>, tensor<@K@x@N@xf16>) outs(%f : tensor<@N@xf32>) {
    ^bb0(%a: f32, %b: f16, %acc: f32):
      %bf = arith.extf %b : f16 to f32
      %p = arith.mulf %a, %bf : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
  } -> tensor<@N@xf32>
  return %y : tensor<@N@xf32>
}
)mlir";

TEST_CASE("a vector times f16 [in][out] weights matches a double reference at odd sizes") {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{131, 77}, {5, 1031}}) {
    INFO("N = " << n << ", K = " << k);
    std::string name = "vecmat_f16_" + std::to_string(n) + "x" + std::to_string(k);
    std::string module = CompileOrDie(Fill(kVecmatF16, {{"N", n}, {"K", k}}), name);
    std::vector<float> wide;
    HostTensor x = RandomF32({k}, 31), w = RandomF16({k, n}, 32, &wide);
    std::vector<float> transposed(wide.size());
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < n; ++j) transposed[j * k + i] = wide[i * n + j];
    RunOnThreadCounts(module, {x, w}, RefRowsDotX(transposed.data(), F32(x), n, k));
  }
}

// Attention's scores: s[b, m, n] = sum_d q[b, m, d] * keys[b, n, d].
const char* kScores = R"mlir(
func.func @main(%q: tensor<3x5x67xf32>, %keys: tensor<3x31x67xf32>) -> tensor<3x5x31xf32> {
  %e = tensor.empty() : tensor<3x5x31xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<3x5x31xf32>) -> tensor<3x5x31xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, m, n, d) -> (b, m, d)>, affine_map<(b, m, n, d) -> (b, n, d)>, affine_map<(b, m, n, d) -> (b, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %keys : tensor<3x5x67xf32>, tensor<3x31x67xf32>) outs(%f : tensor<3x5x31xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %t = arith.addf %acc, %p : f32
      linalg.yield %t : f32
  } -> tensor<3x5x31xf32>
  return %s : tensor<3x5x31xf32>
}
)mlir";

TEST_CASE("batched dot products against transposed keys match a double reference") {
  std::string module = CompileOrDie(kScores, "scores");
  HostTensor q = RandomF32({3, 5, 67}, 41), keys = RandomF32({3, 31, 67}, 42);
  HostTensor expected = ZerosF32({3, 5, 31});
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t m = 0; m < 5; ++m) {
      HostTensor row = RefRowsDotX(F32(keys) + b * 31 * 67, F32(q) + (b * 5 + m) * 67, 31, 67);
      std::memcpy(F32(expected) + (b * 5 + m) * 31, F32(row), 31 * 4);
    }
  RunOnThreadCounts(module, {q, keys}, expected);
}

// Row sums of squares (RMSNorm's reduction) over rows longer than any vector, and a max.
const char* kRowReductions = R"mlir(
func.func @main(%x: tensor<19x1003xf32>) -> tensor<19xf32> {
  %e = tensor.empty() : tensor<19xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<19xf32>) -> tensor<19xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<19x1003xf32>) outs(%f : tensor<19xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %sq = arith.mulf %a, %a : f32
      %t = arith.addf %acc, %sq : f32
      linalg.yield %t : f32
  } -> tensor<19xf32>
  return %s : tensor<19xf32>
}
)mlir";

TEST_CASE("row sums of squares of 1003 elements match a double reference") {
  std::string module = CompileOrDie(kRowReductions, "row_sum_squares");
  HostTensor x = RandomF32({19, 1003}, 51);
  HostTensor expected = ZerosF32({19});
  for (int64_t i = 0; i < 19; ++i) {
    double acc = 0;
    for (int64_t j = 0; j < 1003; ++j) acc += double(F32(x)[i * 1003 + j]) * F32(x)[i * 1003 + j];
    F32(expected)[i] = float(acc);
  }
  RunOnThreadCounts(module, {x}, expected);
}

}  // namespace
}  // namespace hexir::e2e
