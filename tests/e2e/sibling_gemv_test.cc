// Sibling reductions in one kernel (hexir-form-dispatch-regions' fuse-sibling-reductions,
// CUDA-only modules; passes/codegen/CUDAWholeReductions.h): a llama FFN's gate
//   g = silu(W1 x) * (W3 x)
// is one CUDA dispatch, a warp per row computing both dots (several warps a row when rows are
// few, a thread per row when K is short), where the CPU keeps two (W1 x; W3 x + SiLU * mul).
// Checked against an f64 reference at awkward sizes: odd and prime row counts, K not a multiple
// of a warp's 16-byte steps, f32 and f16 weights. Every module is compiled before the device is
// opened, so the [cuda] cases check code generation (one kernel, not on one thread, two
// butterflies where a warp reduces) also where they skip for want of a GPU.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "hal/device.h"
#include "hal/stats.h"
#include "tests/e2e/harness.h"
#include "tools/common/invocation.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;


struct Shape {
  int rows, k;
  bool f16;
};

// y = W x as a generic (f16 weights widened to f32 in the body, f32 accumulation).
std::string Gemv(const std::string& y, const std::string& w, const Shape& s) {
  std::string n = std::to_string(s.rows), k = std::to_string(s.k), t = s.f16 ? "f16" : "f32";
  return "  %" + y + " = linalg.generic {indexing_maps = [#nk, #k, #n], iterator_types = [\"parallel\", \"reduction\"]} "
         "ins(" + w + ", %x : tensor<" + n + "x" + k + "x" + t + ">, tensor<" + k + "xf32>) outs(%z : tensor<" + n +
         "xf32>) {\n"
         "  ^bb0(%a: " + t + ", %b: f32, %acc: f32):\n" +
         (s.f16 ? "    %af = arith.extf %a : f16 to f32\n" : "") +
         "    %m = arith.mulf " + (s.f16 ? "%af" : "%a") + ", %b : f32\n"
         "    %s = arith.addf %acc, %m : f32\n"
         "    linalg.yield %s : f32\n"
         "  } -> tensor<" + n + "xf32>\n";
}

std::string Gate(const Shape& s) {
  std::string n = std::to_string(s.rows), k = std::to_string(s.k), t = s.f16 ? "f16" : "f32";
  std::string w = "tensor<" + n + "x" + k + "x" + t + ">";
  return "#nk = affine_map<(n, k) -> (n, k)>\n"
         "#k = affine_map<(n, k) -> (k)>\n"
         "#n = affine_map<(n, k) -> (n)>\n"
         "#id = affine_map<(d) -> (d)>\n"
         "func.func @main(%x: tensor<" + k + "xf32>, %w1: " + w + ", %w3: " + w + ") -> tensor<" + n + "xf32> {\n"
         "  %zero = arith.constant 0.0 : f32\n"
         "  %e = tensor.empty() : tensor<" + n + "xf32>\n"
         "  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<" + n + "xf32>) -> tensor<" + n + "xf32>\n" +
         Gemv("h1", "%w1", s) + Gemv("h3", "%w3", s) +
         "  %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = [\"parallel\"]} "
         "ins(%h1, %h3 : tensor<" + n + "xf32>, tensor<" + n + "xf32>) outs(%e : tensor<" + n + "xf32>) {\n"
         "  ^bb0(%a: f32, %b: f32, %o: f32):\n"
         "    %na = arith.negf %a : f32\n"
         "    %ex = math.exp %na : f32\n"
         "    %one = arith.constant 1.0 : f32\n"
         "    %d = arith.addf %one, %ex : f32\n"
         "    %sg = arith.divf %a, %d : f32\n"
         "    %r = arith.mulf %sg, %b : f32\n"
         "    linalg.yield %r : f32\n"
         "  } -> tensor<" + n + "xf32>\n"
         "  return %g : tensor<" + n + "xf32>\n"
         "}\n";
}

// The kernels of the CUDA module at `module`: how many, and that none runs on one thread; with
// `warp`, that its PTX holds two xor butterflies (5 shuffles each), one per dot.
void RequireOneSiblingKernel(const std::string& module, bool warp) {
  CommandResult r = RunCommand("tools/hexir-dump/hexir-dump " + module + " 2>&1");
  REQUIRE(r.exit_code == 0);
  size_t kernels = 0, shuffles = 0;
  for (size_t at = r.output.find("attr cuda.block_size."); at != std::string::npos;
       at = r.output.find("attr cuda.block_size.", at + 1)) {
    ++kernels;
    std::string line = r.output.substr(at, r.output.find('\n', at) - at);
    INFO(line);
    CHECK(line.find("= \"1,1,1\"") == std::string::npos);
  }
  for (size_t at = r.output.find("shfl.sync.bfly"); at != std::string::npos; at = r.output.find("shfl.sync.bfly", at + 1))
    ++shuffles;
  CHECK(kernels == 1);
  if (warp) CHECK(shuffles >= 10);
}

void SiblingGemvsMatchF64(const std::string& target) {
  // 173 x 2047: a warp a row, K odd (a tail after the 16-byte steps); 257 x 1000 f16: 1000 is
  // not a multiple of a warp's 256 f16 step; 31 x 4400: few rows, several warps a row (their
  // partials meet in shared memory); 64 x 2048 f16: TinyLlama's K; 37 x 48: K below a warp's
  // minimum, a thread a row.
  const std::vector<Shape> shapes = {{173, 2047, false}, {257, 1000, true}, {31, 4400, false},
                                     {64, 2048, true},   {37, 48, false}};
  std::vector<std::string> modules;
  for (const Shape& s : shapes) {
    std::string name = "sibling_gemv_" + std::to_string(s.rows) + "x" + std::to_string(s.k) + (s.f16 ? "_f16" : "_f32");
    modules.push_back(CompileOrDie(Gate(s), name, target, ""));
    if (target == "cuda") RequireOneSiblingKernel(modules.back(), s.k >= 64);
  }
  for (size_t c = 0; c < shapes.size(); ++c) {
    const Shape& s = shapes[c];
    INFO(s.rows << " x " << s.k << (s.f16 ? " f16" : " f32"));
    std::vector<double> w1, w3;
    HostTensor x = RandomF32({s.k}, 31 + c), a = DyadicTensor({s.rows, s.k}, 41 + c, s.f16, w1), b = DyadicTensor({s.rows, s.k}, 51 + c, s.f16, w3);
    HostTensor expected = ZerosF32({s.rows});
    for (int n = 0; n < s.rows; ++n) {
      double h1 = 0, h3 = 0;
      for (int k = 0; k < s.k; ++k) {
        h1 += w1[static_cast<size_t>(n) * s.k + k] * F32(x)[k];
        h3 += w3[static_cast<size_t>(n) * s.k + k] * F32(x)[k];
      }
      F32(expected)[n] = static_cast<float>(h1 / (1.0 + std::exp(-h1)) * h3);
    }
    auto session = OpenOrDie(modules[c], target);
    std::vector<tools::HostValue> args = {Tensor(x), Tensor(a), Tensor(b)};
    hal::DeviceStats before = session->device().stats();
    std::vector<tools::HostValue> out = CallOrDie(*session, "main", args);
    // CUDA: one kernel; the CPU keeps W1 x apart (its row kernels take one reduction each).
    CHECK(session->device().stats().dispatches_executed - before.dispatches_executed == (target == "cuda" ? 1u : 2u));
    REQUIRE(out.size() == 1);
    RequireClose(out[0].tensor, expected, 1e-4, 1e-4);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("two GEMVs read by one SiLU * mul are one CUDA kernel and match f64", SiblingGemvsMatchF64)

}  // namespace
}  // namespace hexir::e2e
