// A norm too wide to recompute in its projections is one CUDA kernel (hexir-group-small-projections'
// max-norm-extent, CUDA-only modules, `hexir-compile --norm-pair-extent`, default 16384: here
// 16384; passes/dispatch/fusion/README.md): RMSNorm's sum of squares and its scaling run as one block (passes/codegen/CUDABlockLevels.cpp: the block-wide
// sum through shared memory, a barrier, the scaling by every thread), then the projection
//   y = W (x * g / sqrt(mean(x^2) + eps))
// reads it: 2 CUDA dispatches where there were 3. Checked against an f64 reference at awkward
// sizes: odd and prime widths, widths not a multiple of the block's 256 threads, f32 and f16
// norm weights, and a width over the limit (16384) that stays 3 dispatches. Every module is
// compiled before the device is opened, so the [cuda] cases check code generation (no kernel
// on one thread) also where they skip for want of a GPU. Also with the norm's input written
// by the kernel before it (a GEMV + residual: on sm_90 a programmatic edge into the norm), over
// three calls. The same grouping makes the llama importer's one-stage greedy argmax (a
// vocabulary up to 2048) one kernel: checked for ties.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
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

constexpr double kEps = 1e-5;

struct Shape {
  int rows, k;
  bool f16;  // the norm weight g in f16 (widened in the scaling's body)
};

constexpr char kMaps[] =
    "#id = affine_map<(d) -> (d)>\n"
    "#all = affine_map<(d) -> ()>\n"
    "#nk = affine_map<(n, k) -> (n, k)>\n"
    "#k = affine_map<(n, k) -> (k)>\n"
    "#n = affine_map<(n, k) -> (n)>\n";

// %out = W (g %<input> / sqrt(mean(%<input>^2) + eps)), W: %w (rows x k).
std::string NormThenGemvBody(const Shape& s, const std::string& input) {
  std::string n = std::to_string(s.rows), k = std::to_string(s.k), t = s.f16 ? "f16" : "f32";
  std::string vk = "tensor<" + k + "xf32>", vn = "tensor<" + n + "xf32>", x = "%" + input;
  return "  %zero = arith.constant 0.0 : f32\n"
         "  %e0 = tensor.empty() : tensor<f32>\n"
         "  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>\n"
         "  %ss = linalg.generic {indexing_maps = [#id, #all], iterator_types = [\"reduction\"]} "
         "ins(" + x + " : " + vk + ") outs(%z0 : tensor<f32>) {\n"
         "  ^bb0(%a: f32, %acc: f32):\n"
         "    %m = arith.mulf %a, %a : f32\n"
         "    %s = arith.addf %acc, %m : f32\n"
         "    linalg.yield %s : f32\n"
         "  } -> tensor<f32>\n"
         "  %e1 = tensor.empty() : " + vk + "\n"
         "  %xn = linalg.generic {indexing_maps = [#id, #all, #id, #id], iterator_types = [\"parallel\"]} "
         "ins(" + x + ", %ss, %g : " + vk + ", tensor<f32>, tensor<" + k + "x" + t + ">) outs(%e1 : " + vk + ") {\n"
         "  ^bb0(%a: f32, %sum: f32, %gw: " + t + ", %o: f32):\n" +
         (s.f16 ? "    %gf = arith.extf %gw : f16 to f32\n" : "") +
         "    %d = arith.constant " + std::to_string(s.k) + ".0 : f32\n"
         "    %eps = arith.constant 1.0e-05 : f32\n"
         "    %mean = arith.divf %sum, %d : f32\n"
         "    %me = arith.addf %mean, %eps : f32\n"
         "    %inv = math.rsqrt %me : f32\n"
         "    %xs = arith.mulf %a, %inv : f32\n"
         "    %y = arith.mulf " + (s.f16 ? "%gf" : "%gw") + ", %xs : f32\n"
         "    linalg.yield %y : f32\n"
         "  } -> " + vk + "\n"
         "  %e2 = tensor.empty() : " + vn + "\n"
         "  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : " + vn + ") -> " + vn + "\n"
         "  %out = linalg.generic {indexing_maps = [#nk, #k, #n], iterator_types = [\"parallel\", \"reduction\"]} "
         "ins(%w, %xn : tensor<" + n + "x" + k + "xf32>, " + vk + ") outs(%z2 : " + vn + ") {\n"
         "  ^bb0(%a: f32, %b: f32, %acc: f32):\n"
         "    %m = arith.mulf %a, %b : f32\n"
         "    %s = arith.addf %acc, %m : f32\n"
         "    linalg.yield %s : f32\n"
         "  } -> " + vn + "\n";
}

std::string NormThenGemv(const Shape& s) {
  std::string n = std::to_string(s.rows), k = std::to_string(s.k), t = s.f16 ? "f16" : "f32";
  std::string vk = "tensor<" + k + "xf32>", vn = "tensor<" + n + "xf32>";
  return std::string(kMaps) + "func.func @main(%x: " + vk + ", %g: tensor<" + k + "x" + t + ">, %w: tensor<" + n +
         "x" + k + "xf32>) -> " + vn + " {\n" + NormThenGemvBody(s, "x") + "  return %out : " + vn + "\n}\n";
}

// The norm's input written by the kernel before it, as in a decode layer (the residual stream
// after w2 + residual): h = r + W0 v (an m-long GEMV with the residual add fused, its own
// kernel; h is also returned), then the norm pair of h and the projection. On sm_90 the norm
// pair's kernel may launch through a programmatic edge while the GEMV still runs (an 8 MB W0
// keeps it running), so every read of h must come after its griddepcontrol.wait. Session 23
// measured a norm-pair variant (unrolled strides, the sum's loads in the entry block) that gave
// wrong decode ids in TinyLlama and random768 while the tests above, whose x is an argument,
// passed (passes/dispatch/fusion/README.md).
std::string ResidualThenNormThenGemv(const Shape& s, int m) {
  std::string n = std::to_string(s.rows), k = std::to_string(s.k), t = s.f16 ? "f16" : "f32", mm = std::to_string(m);
  std::string vk = "tensor<" + k + "xf32>", vn = "tensor<" + n + "xf32>";
  return std::string(kMaps) + "func.func @main(%r: " + vk + ", %w0: tensor<" + k + "x" + mm + "xf32>, %v: tensor<" +
         mm + "xf32>, %g: tensor<" + k + "x" + t + ">, %w: tensor<" + n + "x" + k + "xf32>) -> (" + vk + ", " + vn +
         ") {\n"
         "  %pz = arith.constant 0.0 : f32\n"
         "  %pe = tensor.empty() : " + vk + "\n"
         "  %pf = linalg.fill ins(%pz : f32) outs(%pe : " + vk + ") -> " + vk + "\n"
         "  %mv = linalg.generic {indexing_maps = [#nk, #k, #n], iterator_types = [\"parallel\", \"reduction\"]} "
         "ins(%w0, %v : tensor<" + k + "x" + mm + "xf32>, tensor<" + mm + "xf32>) outs(%pf : " + vk + ") {\n"
         "  ^bb0(%a: f32, %b: f32, %acc: f32):\n"
         "    %p = arith.mulf %a, %b : f32\n"
         "    %q = arith.addf %acc, %p : f32\n"
         "    linalg.yield %q : f32\n"
         "  } -> " + vk + "\n"
         "  %he = tensor.empty() : " + vk + "\n"
         "  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = [\"parallel\"]} "
         "ins(%r, %mv : " + vk + ", " + vk + ") outs(%he : " + vk + ") {\n"
         "  ^bb0(%a: f32, %b: f32, %o: f32):\n"
         "    %q = arith.addf %a, %b : f32\n"
         "    linalg.yield %q : f32\n"
         "  } -> " + vk + "\n" +
         NormThenGemvBody(s, "h") + "  return %h, %out : " + vk + ", " + vn + "\n}\n";
}

void NormThenGemvMatchesF64(const std::string& target) {
  // 2047: odd, a tail after 7 full block strides; 2048 f16: TinyLlama's dim; 769 f16: just
  // over 3 strides; 4099: prime, 5 rows (the scaling joins its projection instead: 2 kernels
  // either way); 16383: the limit's last odd width; 16411: over the limit (16384), 3 kernels;
  // 768 f16: random768's dim, 3 whole strides of 256 threads; 700: 2 strides and a partial
  // one; 3001: 2 strides of 1024 threads and a partial one.
  const std::vector<Shape> shapes = {{37, 2047, false}, {64, 2048, true}, {33, 769, true},
                                     {5, 4099, false},  {19, 16383, true}, {17, 16411, false},
                                     {11, 768, true},   {7, 700, false},   {9, 3001, true}};
  std::vector<std::string> modules;
  for (const Shape& s : shapes) {
    std::string name = "norm_pair_" + std::to_string(s.rows) + "x" + std::to_string(s.k) + (s.f16 ? "_f16" : "_f32");
    modules.push_back(CompileOrDie(NormThenGemv(s), name, target, "--norm-pair-extent=16384"));
    if (target == "cuda") RequireNoOneThreadKernel(modules.back(), s.k <= 16384 ? 2 : 3);
  }
  // The default extent (16384) pairs random768's and TinyLlama's norms; 1024 leaves a
  // 2047-wide one as two kernels.
  if (target == "cuda") {
    RequireNoOneThreadKernel(CompileOrDie(NormThenGemv(shapes[2]), "norm_pair_default_769", target, ""), 2);
    RequireNoOneThreadKernel(CompileOrDie(NormThenGemv(shapes[0]), "norm_pair_default_2047", target, ""), 2);
    RequireNoOneThreadKernel(CompileOrDie(NormThenGemv(shapes[0]), "norm_pair_1024_2047", target, "--norm-pair-extent=1024"), 3);
  }
  for (size_t c = 0; c < shapes.size(); ++c) {
    const Shape& s = shapes[c];
    INFO(s.rows << " x " << s.k << (s.f16 ? " f16" : " f32"));
    std::vector<double> g;
    HostTensor x = RandomF32({s.k}, 61 + c), gw = DyadicTensor({s.k}, 71 + c, s.f16, g), w = RandomF32({s.rows, s.k}, 81 + c);
    double ss = 0;
    for (int k = 0; k < s.k; ++k) ss += static_cast<double>(F32(x)[k]) * F32(x)[k];
    double inv = 1.0 / std::sqrt(ss / s.k + kEps);
    HostTensor expected = ZerosF32({s.rows});
    for (int n = 0; n < s.rows; ++n) {
      double y = 0;
      for (int k = 0; k < s.k; ++k) y += F32(w)[static_cast<size_t>(n) * s.k + k] * (F32(x)[k] * inv * g[k]);
      F32(expected)[n] = static_cast<float>(y);
    }
    auto session = OpenOrDie(modules[c], target);
    std::vector<tools::HostValue> args = {Tensor(x), Tensor(gw), Tensor(w)};
    hal::DeviceStats before = session->device().stats();
    std::vector<tools::HostValue> out = CallOrDie(*session, "main", args);
    uint64_t dispatches = session->device().stats().dispatches_executed - before.dispatches_executed;
    if (target == "cuda") CHECK(dispatches == (s.k <= 16384 ? 2u : 3u));
    REQUIRE(out.size() == 1);
    RequireClose(out[0].tensor, expected, 2e-4, 2e-4);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("a wide RMSNorm is one CUDA kernel before its projection and matches f64", NormThenGemvMatchesF64)

void ResidualThenNormMatchesF64(const std::string& target) {
  // TinyLlama's and random768's norms (f16 weights), an odd f32 one; W0 of 1024 columns.
  const std::vector<Shape> shapes = {{64, 2048, true}, {11, 768, true}, {37, 2047, false}};
  const int m = 1024;
  std::vector<std::string> modules;
  for (const Shape& s : shapes) {
    std::string name = "residual_norm_" + std::to_string(s.rows) + "x" + std::to_string(s.k) + (s.f16 ? "_f16" : "_f32");
    modules.push_back(CompileOrDie(ResidualThenNormThenGemv(s, m), name, target, ""));
    if (target == "cuda") RequireNoOneThreadKernel(modules.back(), 3);  // GEMV + residual, the norm, the GEMV
  }
  for (size_t c = 0; c < shapes.size(); ++c) {
    const Shape& s = shapes[c];
    INFO(s.rows << " x " << s.k << (s.f16 ? " f16" : " f32"));
    std::vector<double> g;
    HostTensor r = RandomF32({s.k}, 31 + c), w0 = RandomF32({s.k, m}, 41 + c, -0.05f, 0.05f), v = RandomF32({m}, 51 + c);
    HostTensor gw = DyadicTensor({s.k}, 71 + c, s.f16, g), w = RandomF32({s.rows, s.k}, 81 + c);
    std::vector<double> h(s.k);
    double ss = 0;
    for (int k = 0; k < s.k; ++k) {
      double acc = F32(r)[k];
      for (int j = 0; j < m; ++j) acc += static_cast<double>(F32(w0)[static_cast<size_t>(k) * m + j]) * F32(v)[j];
      h[k] = acc;
      ss += acc * acc;
    }
    double inv = 1.0 / std::sqrt(ss / s.k + kEps);
    HostTensor want_h = ZerosF32({s.k}), expected = ZerosF32({s.rows});
    for (int k = 0; k < s.k; ++k) F32(want_h)[k] = static_cast<float>(h[k]);
    for (int n = 0; n < s.rows; ++n) {
      double y = 0;
      for (int k = 0; k < s.k; ++k) y += F32(w)[static_cast<size_t>(n) * s.k + k] * (h[k] * inv * g[k]);
      F32(expected)[n] = static_cast<float>(y);
    }
    auto session = OpenOrDie(modules[c], target);
    std::vector<tools::HostValue> args = {Tensor(r), Tensor(w0), Tensor(v), Tensor(gw), Tensor(w)};
    for (int call = 0; call < 3; ++call) {  // the first call records; later ones replay
      INFO("call " << call);
      std::vector<tools::HostValue> out = CallOrDie(*session, "main", args);
      REQUIRE(out.size() == 2);
      RequireClose(out[0].tensor, want_h, 1e-4, 1e-4);
      RequireClose(out[1].tensor, expected, 2e-4, 2e-4);
    }
  }
}
HEXIR_E2E_TEST_ON_DEVICES("a wide RMSNorm whose input the kernel before it writes matches f64", ResidualThenNormMatchesF64)

// The llama importer's greedy argmax of a vocabulary of at most 2048 (compiler/importers/llama
// EmitModule.cc ArgmaxOf, one stage): each logit becomes the key (order-preserving bits << 32)
// | (2^32 - 1 - v), the keys' maximum is one value and its decode reads it: one CUDA kernel
// (one block: a block-wide i64 max, a barrier, the decode), the first index among ties.
std::string ArgmaxOneStage(int v) {
  const std::string t = "tensor<" + std::to_string(v) + "xf32>";
  return "func.func @main(%l: " + t + ") -> tensor<i64> {\n"
         "  %min = arith.constant -9223372036854775808 : i64\n"
         "  %e = tensor.empty() : tensor<i64>\n"
         "  %m0 = linalg.fill ins(%min : i64) outs(%e : tensor<i64>) -> tensor<i64>\n"
         "  %best = linalg.generic {indexing_maps = [affine_map<(c) -> (c)>, affine_map<(c) -> ()>], "
         "iterator_types = [\"reduction\"]} ins(%l : " + t + ") outs(%m0 : tensor<i64>) {\n"
         "  ^bb0(%x: f32, %acc: i64):\n"
         "    %c = linalg.index 0 : index\n"
         "    %bits = arith.bitcast %x : f32 to i32\n"
         "    %zero = arith.constant 0 : i32\n"
         "    %neg = arith.cmpi slt, %bits, %zero : i32\n"
         "    %mask = arith.constant 2147483647 : i32\n"
         "    %flip = arith.xori %bits, %mask : i32\n"
         "    %ord = arith.select %neg, %flip, %bits : i32\n"
         "    %ord64 = arith.extsi %ord : i32 to i64\n"
         "    %sh = arith.constant 32 : i64\n"
         "    %hi = arith.shli %ord64, %sh : i64\n"
         "    %vi = arith.index_cast %c : index to i64\n"
         "    %top = arith.constant 4294967295 : i64\n"
         "    %lo = arith.subi %top, %vi : i64\n"
         "    %key = arith.ori %hi, %lo : i64\n"
         "    %m = arith.maxsi %acc, %key : i64\n"
         "    linalg.yield %m : i64\n"
         "  } -> tensor<i64>\n"
         "  %de = tensor.empty() : tensor<i64>\n"
         "  %id = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>], "
         "iterator_types = []} ins(%best : tensor<i64>) outs(%de : tensor<i64>) {\n"
         "  ^bb0(%k: i64, %unused: i64):\n"
         "    %top = arith.constant 4294967295 : i64\n"
         "    %lo = arith.andi %k, %top : i64\n"
         "    %v = arith.subi %top, %lo : i64\n"
         "    linalg.yield %v : i64\n"
         "  } -> tensor<i64>\n"
         "  return %id : tensor<i64>\n"
         "}\n";
}

void ArgmaxOneStageFirstAmongTies(const std::string& target) {
  // stories260K's 512; 1000 (not a multiple of the block); 2047 (odd, the largest one-stage
  // vocabulary but one); the maximum tied at two indices, once among all-negative logits.
  struct Case {
    int v, first, second;
    bool negative;
  };
  const std::vector<Case> cases = {{512, 300, 301, false}, {1000, 999, 998, false}, {2047, 17, 2046, true},
                                   {1000, 0, 500, true}};
  std::vector<std::string> modules;
  for (const Case& c : cases) {
    modules.push_back(CompileOrDie(ArgmaxOneStage(c.v), "argmax_" + std::to_string(c.v), target, ""));
    if (target == "cuda") RequireNoOneThreadKernel(modules.back(), 1);
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    INFO("vocabulary " << c.v << ", maximum at " << c.first << " and " << c.second);
    HostTensor l = RandomF32({c.v}, 91 + i, c.negative ? -9.0f : -1.0f, c.negative ? -2.0f : 1.0f);
    float top = c.negative ? -1.5f : 1.5f;
    F32(l)[c.first] = F32(l)[c.second] = top;
    auto session = OpenOrDie(modules[i], target);
    std::vector<tools::HostValue> args = {Tensor(l)};
    hal::DeviceStats before = session->device().stats();
    std::vector<tools::HostValue> out = CallOrDie(*session, "main", args);
    if (target == "cuda") CHECK(session->device().stats().dispatches_executed - before.dispatches_executed == 1u);
    REQUIRE(out.size() == 1);
    REQUIRE(out[0].tensor.bytes.size() == sizeof(int64_t));
    int64_t id = 0;
    std::memcpy(&id, out[0].tensor.bytes.data(), sizeof(id));
    CHECK(id == std::min(c.first, c.second));
  }
}
HEXIR_E2E_TEST_ON_DEVICES("a greedy argmax of up to 2048 logits is one CUDA kernel and takes the first index among ties",
                          ArgmaxOneStageFirstAmongTies)

TEST_CASE("--norm-pair-extent below -1 or not a number is refused by name") {
  if (access(HexirCompile().c_str(), X_OK) != 0) {  // the GPU machine's bundle has no compiler
    std::printf("HEXIR_SKIPPED: --norm-pair-extent refusal: no %s here\n", HexirCompile().c_str());
    return;
  }
  std::string source = TempFile("refused.mlir");
  WriteFile(source, NormThenGemv({3, 300, false}));
  CommandResult r = RunCommand(HexirCompile() + " " + source + " --target=cuda --norm-pair-extent=-2 -o " +
                               TempFile("refused.vmfb") + " 2>&1");
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("--norm-pair-extent: -2 is not an integer >= 0 (0: off)") != std::string::npos);
  r = RunCommand(HexirCompile() + " " + source + " --target=cuda --norm-pair-extent=lots -o " +
                 TempFile("refused.vmfb") + " 2>&1");
  CHECK(r.exit_code != 0);
  CHECK(r.output.find("norm-pair-extent") != std::string::npos);
}

}  // namespace
}  // namespace hexir::e2e
