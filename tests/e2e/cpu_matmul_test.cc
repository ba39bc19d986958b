// The packed, register-blocked f32 matmul of CPU kernels (passes/codegen/CPUMatmulMicroKernel.h)
// against double-precision C++ references at sizes that are no multiple of any tile: fewer
// rows than a register tile, columns inside one vector, a depth crossing the packed panel's,
// more rows than one cache block, dynamic dims, and a fused bias + ReLU epilogue, each on
// 0, 1, 2 and 3 worker threads (bit-equal results across them). Matmuls large enough to be split, and those with a constant B,
// read B prepacked by a dispatch of its own (codegen/CPUMatmulMicroKernel.cpp; the constant's packed
// at load) on a grid of rows x columns: prime sizes, dynamic rows, an epilogue, constant B.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>

#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;

// Inline (0), one worker, two workers, three workers (uneven shares of a power-of-two grid).
const char* kThreadCounts[] = {"--cpu-threads=0", "--cpu-threads=1", "--cpu-threads=2",
                               "--cpu-threads=3"};

std::string Dim(int64_t d) { return d < 0 ? "?" : std::to_string(d); }

// A dense f32 constant holding `t` ([k][n]), printed exactly (%.9g).
std::string DenseConstant(const HostTensor& t, int64_t k, int64_t n) {
  std::string s = "dense<[";
  char buf[32];
  for (int64_t i = 0; i < k; ++i) {
    s += i ? ", [" : "[";
    for (int64_t j = 0; j < n; ++j) {
      std::snprintf(buf, sizeof(buf), "%s%.9g", j ? ", " : "", double(F32(t)[i * n + j]));
      s += buf;
    }
    s += "]";
  }
  return s + "]>";
}

// C[M][N] = A[M][K] B[K][N] (+ bias[N], then max(., 0) with `epilogue`); dims < 0 are dynamic;
// with `constantB` B is that constant instead of an argument.
std::string MatmulSource(int64_t m, int64_t n, int64_t k, bool epilogue,
                         const HostTensor* constantB = nullptr) {
  std::string a = "tensor<" + Dim(m) + "x" + Dim(k) + "xf32>";
  std::string b = "tensor<" + Dim(k) + "x" + Dim(n) + "xf32>";
  std::string c = "tensor<" + Dim(m) + "x" + Dim(n) + "xf32>";
  std::string s = "func.func @main(%a: " + a + (constantB ? std::string() : ", %b: " + b) +
                  (epilogue ? ", %bias: tensor<" + Dim(n) + "xf32>" : std::string()) + ") -> " + c +
                  " {\n  %z = arith.constant 0.0 : f32\n";
  if (constantB) s += "  %b = arith.constant " + DenseConstant(*constantB, k, n) + " : " + b + "\n";
  std::string sizes;
  if (m < 0 || n < 0) {
    s += "  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n";
    s += "  %m = tensor.dim %a, %c0 : " + a + "\n  %n = tensor.dim %b, %c1 : " + b + "\n";
    sizes = std::string(m < 0 ? "%m" : "") + (m < 0 && n < 0 ? ", " : "") + (n < 0 ? "%n" : "");
  }
  s += "  %e = tensor.empty(" + sizes + ") : " + c + "\n";
  s += "  %f = linalg.fill ins(%z : f32) outs(%e : " + c + ") -> " + c + "\n";
  s += "  %c = linalg.matmul ins(%a, %b : " + a + ", " + b + ") outs(%f : " + c + ") -> " + c + "\n";
  if (!epilogue) return s + "  return %c : " + c + "\n}\n";
  s += "  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, "
       "affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = "
       "[\"parallel\", \"parallel\"]} ins(%c, %bias : " + c + ", tensor<" + Dim(n) +
       "xf32>) outs(%e : " + c + ") {\n"
       "  ^bb0(%v: f32, %w: f32, %o: f32):\n"
       "    %s = arith.addf %v, %w : f32\n    %r = arith.maximumf %s, %z : f32\n"
       "    linalg.yield %r : f32\n  } -> " + c + "\n";
  return s + "  return %y : " + c + "\n}\n";
}

HostTensor Reference(const HostTensor& a, const HostTensor& b, const HostTensor* bias, int64_t m,
                     int64_t n, int64_t k) {
  HostTensor c = ZerosF32({m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t l = 0; l < k; ++l) acc += double(F32(a)[i * k + l]) * F32(b)[l * n + j];
      if (bias) acc = std::max(acc + F32(*bias)[j], 0.0);
      F32(c)[i * n + j] = float(acc);
    }
  return c;
}

enum class Dims { kStatic, kDynamic, kDynamicRows };

void Check(int64_t m, int64_t n, int64_t k, Dims dims, bool epilogue, bool constantB = false) {
  const bool dynamic = dims != Dims::kStatic;
  INFO("M = " << m << ", N = " << n << ", K = " << k
              << (dims == Dims::kDynamic ? " (dynamic)" : dims == Dims::kDynamicRows ? " (dynamic M)" : "")
              << (epilogue ? " + bias + relu" : "") << (constantB ? ", constant B" : ""));
  std::string name = "matmul_" + std::to_string(m) + "x" + std::to_string(n) + "x" +
                     std::to_string(k) + (dims == Dims::kDynamic ? "_dyn" : dynamic ? "_dynm" : "") +
                     (epilogue ? "_relu" : "") + (constantB ? "_constb" : "");
  HostTensor a = RandomF32({m, k}, 7), b = RandomF32({k, n}, 8), bias = RandomF32({n}, 9);
  std::string module = CompileOrDie(
      MatmulSource(dynamic ? -1 : m, dims == Dims::kDynamic ? -1 : n, k, epilogue,
                   constantB ? &b : nullptr),
      name);
  HostTensor expected = Reference(a, b, epilogue ? &bias : nullptr, m, n, k);
  std::vector<HostTensor> inputs = {a};
  if (!constantB) inputs.push_back(b);
  if (epilogue) inputs.push_back(bias);
  // Each output is summed by one workgroup in the same order whatever thread runs it, so
  // every thread count gives the inline run's bits.
  HostTensor inlineResult;
  for (const char* threads : kThreadCounts) {
    INFO(threads);
    auto out = RunOrDie(module, "main", inputs, 1, "cpu", threads);
    RequireClose(out[0], expected, 1e-5, 1e-4);
    if (inlineResult.bytes.empty())
      inlineResult = out[0];
    else
      REQUIRE(out[0].bytes == inlineResult.bytes);
  }
}

TEST_CASE("f32 matmuls at sizes that are no multiple of any tile match a double reference") {
  // (rows, columns, depth): one short register tile; N inside one vector; K past the packed
  // panel's depth with every remainder of rows; exact tiles; one workgroup of more rows
  // than a cache block; many workgroups with N past a panel by one; N past one packed
  // block of B (256 columns on AVX2) into a partial panel of its second block.
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{4, 1, 1}, {7, 13, 5},
                         {37, 67, 600}, {64, 16, 256}, {600, 3, 5}, {257, 17, 131},
                         {45, 301, 270}}) {
    Check(m, n, k, Dims::kStatic, /*epilogue=*/false);
  }
}

TEST_CASE("f32 matmuls with dynamic rows and columns match a double reference") {
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{45, 29, 300}, {5, 8, 1},
                         {70, 16, 3}, {1, 33, 7}}) {
    Check(m, n, k, Dims::kDynamic, /*epilogue=*/false);
  }
}

TEST_CASE("an f32 matmul with a fused bias and ReLU epilogue matches a double reference") {
  Check(37, 50, 41, Dims::kStatic, /*epilogue=*/true);
  Check(131, 23, 19, Dims::kDynamic, /*epilogue=*/true);
}

TEST_CASE("f32 matmuls on a prepacked B split over rows and columns match a double reference") {
  // Prime M, N and K past the split threshold (2 x 2^20 multiply-adds): a grid of row x
  // column workgroups, the last column tile a partial panel; N past one packed block (256
  // columns on AVX2); the fused epilogue as the grid's root; K past the panel depth.
  Check(131, 257, 127, Dims::kStatic, /*epilogue=*/false);
  Check(61, 1031, 67, Dims::kStatic, /*epilogue=*/false);
  Check(257, 97, 131, Dims::kStatic, /*epilogue=*/true);
  // Dynamic M over a static B of at least 2^15 elements: B packed per call, rows split; M
  // below one register tile.
  Check(300, 257, 263, Dims::kDynamicRows, /*epilogue=*/false);
  Check(7, 509, 131, Dims::kDynamicRows, /*epilogue=*/false);
}

TEST_CASE("f32 matmuls split over a grid at awkward sizes give equal results on 1 and 2 workers") {
  // Grids whose tiles end inside a register tile (M = 14k + 1..13 rows per workgroup, the
  // AVX-512 register tile being 14 x 32) and inside a panel of B (N = 32k + 1..31), K past
  // two cache blocks of depth with a remainder: each checked against the double reference
  // and bit-equal across 0, 1, 2 and 3 workers (Check above).
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{263, 161, 421}, {150, 513, 389},
                         {517, 67, 97}}) {
    Check(m, n, k, Dims::kStatic, /*epilogue=*/false);
  }
  Check(211, 193, 199, Dims::kDynamicRows, /*epilogue=*/true);
}

TEST_CASE("f32 matmuls on a constant B, packed once at load, match a double reference") {
  Check(13, 43, 61, Dims::kStatic, /*epilogue=*/false, /*constantB=*/true);
  Check(127, 131, 137, Dims::kStatic, /*epilogue=*/true, /*constantB=*/true);
  Check(45, 29, 53, Dims::kDynamicRows, /*epilogue=*/false, /*constantB=*/true);
}

}  // namespace
}  // namespace hexir::e2e
