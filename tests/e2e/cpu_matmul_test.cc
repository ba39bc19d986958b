// The packed, register-blocked f32 matmul of CPU kernels (passes/codegen/CPUMatmulMicroKernel.h)
// against double-precision C++ references at sizes that are no multiple of any tile: fewer
// rows than a register tile, columns inside one vector, a depth crossing the packed panel's,
// more rows than one cache block, dynamic dims, and a fused bias + ReLU epilogue, each on
// 0, 1 and 3 worker threads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <tuple>

#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;

const char* kThreadCounts[] = {"--cpu-threads=0", "--cpu-threads=1", "--cpu-threads=3"};

std::string Dim(int64_t d) { return d < 0 ? "?" : std::to_string(d); }

// C[M][N] = A[M][K] B[K][N] (+ bias[N], then max(., 0) with `epilogue`); dims < 0 are dynamic.
std::string MatmulSource(int64_t m, int64_t n, int64_t k, bool epilogue) {
  std::string a = "tensor<" + Dim(m) + "x" + Dim(k) + "xf32>";
  std::string b = "tensor<" + Dim(k) + "x" + Dim(n) + "xf32>";
  std::string c = "tensor<" + Dim(m) + "x" + Dim(n) + "xf32>";
  std::string s = "func.func @main(%a: " + a + ", %b: " + b +
                  (epilogue ? ", %bias: tensor<" + Dim(n) + "xf32>" : std::string()) + ") -> " + c +
                  " {\n  %z = arith.constant 0.0 : f32\n";
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

void Check(int64_t m, int64_t n, int64_t k, bool dynamic, bool epilogue) {
  INFO("M = " << m << ", N = " << n << ", K = " << k << (dynamic ? " (dynamic)" : "")
              << (epilogue ? " + bias + relu" : ""));
  std::string name = "matmul_" + std::to_string(m) + "x" + std::to_string(n) + "x" +
                     std::to_string(k) + (dynamic ? "_dyn" : "") + (epilogue ? "_relu" : "");
  std::string module =
      CompileOrDie(MatmulSource(dynamic ? -1 : m, dynamic ? -1 : n, k, epilogue), name);
  HostTensor a = RandomF32({m, k}, 7), b = RandomF32({k, n}, 8), bias = RandomF32({n}, 9);
  HostTensor expected = Reference(a, b, epilogue ? &bias : nullptr, m, n, k);
  std::vector<HostTensor> inputs = {a, b};
  if (epilogue) inputs.push_back(bias);
  for (const char* threads : kThreadCounts) {
    INFO(threads);
    auto out = RunOrDie(module, "main", inputs, 1, "cpu", threads);
    RequireClose(out[0], expected, 1e-5, 1e-4);
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
    Check(m, n, k, /*dynamic=*/false, /*epilogue=*/false);
  }
}

TEST_CASE("f32 matmuls with dynamic rows and columns match a double reference") {
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{45, 29, 300}, {5, 8, 1},
                         {70, 16, 3}, {1, 33, 7}}) {
    Check(m, n, k, /*dynamic=*/true, /*epilogue=*/false);
  }
}

TEST_CASE("an f32 matmul with a fused bias and ReLU epilogue matches a double reference") {
  Check(37, 50, 41, /*dynamic=*/false, /*epilogue=*/true);
  Check(131, 23, 19, /*dynamic=*/true, /*epilogue=*/true);
}

}  // namespace
}  // namespace hexir::e2e
