// Row chains (hexir-group-row-chains; passes/codegen/CPURowChains.h, CUDARowChains.h): a row
// softmax, a layer norm and an RMSNorm written as generics over the same rows are one kernel
// on both targets; on CUDA one block of threads per row (each reduction a block reduction,
// each elementwise pass strided over the row). Checked against f64 references at awkward
// sizes: a prime row length over the block's strides (4099), rows of three dims, the shortest
// row CUDA groups (32), a long row (16384: 1024 threads of 16 elements), rows of 33, 768, 2047
// and 3001; and the dispatch counts: one a call where CUDA groups, the four generics' kernels
// for rows shorter than a warp (31) on CUDA and with --cuda-row-chains=0 (the same results).
// Every CUDA module is compiled where no GPU is too (its kernels must each run more than one
// thread).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "hal/device.h"
#include "hal/stats.h"
#include "tests/e2e/harness.h"
#include "tools/common/invocation.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;

std::string Join(const std::vector<int64_t>& dims) {
  std::string s;
  for (int64_t d : dims) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

// Maps over rows (the leading dims) and the row axis (the last).
std::string Maps(size_t rank) {
  std::string dims, rows;
  for (size_t i = 0; i < rank; ++i) {
    dims += (i ? ", d" : "d") + std::to_string(i);
    if (i + 1 < rank) rows += (i ? ", d" : "d") + std::to_string(i);
  }
  return "#id = affine_map<(" + dims + ") -> (" + dims + ")>\n#row = affine_map<(" + dims + ") -> (" + rows +
         ")>\n#col = affine_map<(" + dims + ") -> (d" + std::to_string(rank - 1) + ")>\n";
}

std::string Iterators(size_t rank, const char* last) {
  std::string s;
  for (size_t i = 0; i + 1 < rank; ++i) s += "\"parallel\", ";
  return s + "\"" + last + "\"";
}

// max, exp(x - max), sum, divide: the four generics of a softmax along the last dim.
std::string Softmax(const std::vector<int64_t>& shape) {
  const std::string t = "tensor<" + Join(shape) + "xf32>";
  const std::string r = "tensor<" + Join({shape.begin(), shape.end() - 1}) + "xf32>";
  const std::string red = Iterators(shape.size(), "reduction"), par = Iterators(shape.size(), "parallel");
  return Maps(shape.size()) + "func.func @main(%x: " + t + ") -> " + t + " {\n"
         "  %ninf = arith.constant 0xFF800000 : f32\n"
         "  %zero = arith.constant 0.0 : f32\n"
         "  %er = tensor.empty() : " + r + "\n"
         "  %e = tensor.empty() : " + t + "\n"
         "  %mi = linalg.fill ins(%ninf : f32) outs(%er : " + r + ") -> " + r + "\n"
         "  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = [" + red + "]} "
         "ins(%x : " + t + ") outs(%mi : " + r + ") {\n"
         "  ^bb0(%v: f32, %m: f32):\n"
         "    %o = arith.maximumf %v, %m : f32\n"
         "    linalg.yield %o : f32\n"
         "  } -> " + r + "\n"
         "  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = [" + par + "]} "
         "ins(%x, %max : " + t + ", " + r + ") outs(%e : " + t + ") {\n"
         "  ^bb0(%v: f32, %m: f32, %u: f32):\n"
         "    %d = arith.subf %v, %m : f32\n"
         "    %p = math.exp %d : f32\n"
         "    linalg.yield %p : f32\n"
         "  } -> " + t + "\n"
         "  %si = linalg.fill ins(%zero : f32) outs(%er : " + r + ") -> " + r + "\n"
         "  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = [" + red + "]} "
         "ins(%ex : " + t + ") outs(%si : " + r + ") {\n"
         "  ^bb0(%v: f32, %s: f32):\n"
         "    %o = arith.addf %v, %s : f32\n"
         "    linalg.yield %o : f32\n"
         "  } -> " + r + "\n"
         "  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = [" + par + "]} "
         "ins(%ex, %sum : " + t + ", " + r + ") outs(%e : " + t + ") {\n"
         "  ^bb0(%v: f32, %s: f32, %u: f32):\n"
         "    %d = arith.divf %v, %s : f32\n"
         "    linalg.yield %d : f32\n"
         "  } -> " + t + "\n"
         "  return %y : " + t + "\n}\n";
}

// Layer norm (rms = false: mean, variance of the centred values, (x - mean) / sqrt(var + eps)
// * g + b) or RMSNorm (rms: x / sqrt(mean(x^2) + eps) * g) of [rows, n].
std::string Norm(int64_t rows, int64_t n, bool rms) {
  const std::string t = "tensor<" + std::to_string(rows) + "x" + std::to_string(n) + "xf32>";
  const std::string r = "tensor<" + std::to_string(rows) + "xf32>", v = "tensor<" + std::to_string(n) + "xf32>";
  const std::string red = Iterators(2, "reduction"), par = Iterators(2, "parallel");
  std::string s = Maps(2) + "func.func @main(%x: " + t + ", %g: " + v + (rms ? "" : ", %b: " + v) + ") -> " + t +
                  " {\n"
                  "  %zero = arith.constant 0.0 : f32\n"
                  "  %n = arith.constant " + std::to_string(n) + ".0 : f32\n"
                  "  %eps = arith.constant 1.0e-5 : f32\n"
                  "  %er = tensor.empty() : " + r + "\n"
                  "  %e = tensor.empty() : " + t + "\n"
                  "  %z = linalg.fill ins(%zero : f32) outs(%er : " + r + ") -> " + r + "\n";
  if (rms)
    return s + "  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = [" + red + "]} "
               "ins(%x : " + t + ") outs(%z : " + r + ") {\n"
               "  ^bb0(%a: f32, %acc: f32):\n"
               "    %q = arith.mulf %a, %a : f32\n"
               "    %o = arith.addf %q, %acc : f32\n"
               "    linalg.yield %o : f32\n"
               "  } -> " + r + "\n"
               "  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = [" + par + "]} "
               "ins(%x, %ss, %g : " + t + ", " + r + ", " + v + ") outs(%e : " + t + ") {\n"
               "  ^bb0(%a: f32, %sq: f32, %gg: f32, %u: f32):\n"
               "    %m = arith.divf %sq, %n : f32\n"
               "    %me = arith.addf %m, %eps : f32\n"
               "    %rs = math.rsqrt %me : f32\n"
               "    %xs = arith.mulf %a, %rs : f32\n"
               "    %o = arith.mulf %xs, %gg : f32\n"
               "    linalg.yield %o : f32\n"
               "  } -> " + t + "\n"
               "  return %y : " + t + "\n}\n";
  return s + "  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = [" + red + "]} "
             "ins(%x : " + t + ") outs(%z : " + r + ") {\n"
             "  ^bb0(%a: f32, %acc: f32):\n"
             "    %o = arith.addf %a, %acc : f32\n"
             "    linalg.yield %o : f32\n"
             "  } -> " + r + "\n"
             "  %var = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = [" + red + "]} "
             "ins(%x, %sum : " + t + ", " + r + ") outs(%z : " + r + ") {\n"
             "  ^bb0(%a: f32, %s: f32, %acc: f32):\n"
             "    %m = arith.divf %s, %n : f32\n"
             "    %d = arith.subf %a, %m : f32\n"
             "    %q = arith.mulf %d, %d : f32\n"
             "    %o = arith.addf %q, %acc : f32\n"
             "    linalg.yield %o : f32\n"
             "  } -> " + r + "\n"
             "  %y = linalg.generic {indexing_maps = [#id, #row, #row, #col, #col, #id], iterator_types = [" + par +
             "]} ins(%x, %sum, %var, %g, %b : " + t + ", " + r + ", " + r + ", " + v + ", " + v + ") outs(%e : " + t +
             ") {\n"
             "  ^bb0(%a: f32, %s: f32, %w: f32, %gg: f32, %bb: f32, %u: f32):\n"
             "    %m = arith.divf %s, %n : f32\n"
             "    %vv = arith.divf %w, %n : f32\n"
             "    %ve = arith.addf %vv, %eps : f32\n"
             "    %rs = math.rsqrt %ve : f32\n"
             "    %d = arith.subf %a, %m : f32\n"
             "    %t = arith.mulf %d, %rs : f32\n"
             "    %o1 = arith.mulf %t, %gg : f32\n"
             "    %o = arith.addf %o1, %bb : f32\n"
             "    linalg.yield %o : f32\n"
             "  } -> " + t + "\n"
             "  return %y : " + t + "\n}\n";
}

int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Calls `module` once on `device` and returns its result and the dispatches the call ran.
HostTensor CallCounting(const std::string& module, const std::string& device, const std::vector<HostTensor>& inputs,
                        uint64_t& dispatches) {
  auto session = OpenOrDie(module, device);
  std::vector<tools::HostValue> args;
  for (const HostTensor& t : inputs) args.push_back(Tensor(t));
  hal::DeviceStats before = session->device().stats();
  std::vector<tools::HostValue> out = CallOrDie(*session, "main", args);
  dispatches = session->device().stats().dispatches_executed - before.dispatches_executed;
  REQUIRE(out.size() == 1);
  return out[0].tensor;
}

void SoftmaxMatchesF64(const std::string& device) {
  struct Case {
    std::vector<int64_t> shape;
    uint64_t cuda_dispatches;  // 1 where CUDA groups the chain
  };
  const std::vector<Case> cases = {{{37, 4099}, 1}, {{3, 5, 1000}, 1}, {{2, 32}, 1}, {{64, 16384}, 1}, {{100, 31}, 4}};
  std::vector<std::string> modules;
  for (const Case& c : cases) {
    modules.push_back(CompileOrDie(Softmax(c.shape), "row_softmax_" + Join(c.shape), device));
    if (device == "cuda") RequireNoOneThreadKernel(modules.back(), c.cuda_dispatches);
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<int64_t>& shape = cases[i].shape;
    INFO("softmax " << Join(shape));
    HostTensor x = RandomF32(shape, 11 + i, -8, 8), expected = ZerosF32(shape);
    const int64_t n = shape.back(), rows = Elements(shape) / n;
    for (int64_t row = 0; row < rows; ++row) {
      const float* in = F32(x) + row * n;
      double max = -INFINITY, sum = 0;
      for (int64_t j = 0; j < n; ++j) max = std::max<double>(max, in[j]);
      for (int64_t j = 0; j < n; ++j) sum += std::exp(in[j] - max);
      for (int64_t j = 0; j < n; ++j) F32(expected)[row * n + j] = static_cast<float>(std::exp(in[j] - max) / sum);
    }
    uint64_t dispatches = 0;
    HostTensor y = CallCounting(modules[i], device, {x}, dispatches);
    if (device == "cuda") CHECK(dispatches == cases[i].cuda_dispatches);
    RequireClose(y, expected, 2e-5, 1e-7);
  }
  // --cuda-row-chains=0: the four generics' kernels again, the same results.
  if (device != "cuda") return;
  const std::vector<int64_t> shape = cases[0].shape;
  std::string unchained = CompileOrDie(Softmax(shape), "row_softmax_unchained", device, "--cuda-row-chains=0");
  RequireNoOneThreadKernel(unchained, 4);
  HostTensor x = RandomF32(shape, 11, -8, 8);
  uint64_t chained_dispatches = 0, unchained_dispatches = 0;
  HostTensor chained = CallCounting(modules[0], device, {x}, chained_dispatches);
  HostTensor separate = CallCounting(unchained, device, {x}, unchained_dispatches);
  CHECK(unchained_dispatches == 4u);
  RequireClose(separate, chained, 2e-5, 1e-7);
}
HEXIR_E2E_TEST_ON_DEVICES("a row softmax is one kernel, a block per row on CUDA, and matches f64", SoftmaxMatchesF64)

void NormsMatchF64(const std::string& device) {
  struct Case {
    int64_t rows, n;
    bool rms;
  };
  const std::vector<Case> cases = {{7, 768, false}, {1000, 33, false}, {9, 2047, true}, {5, 3001, true}};
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    INFO((c.rms ? "rmsnorm " : "layernorm ") << c.rows << "x" << c.n);
    std::string module = CompileOrDie(Norm(c.rows, c.n, c.rms),
                                      std::string(c.rms ? "row_rmsnorm_" : "row_layernorm_") + Join({c.rows, c.n}), device);
    if (device == "cuda") RequireNoOneThreadKernel(module, 1);
    // Offset from zero so that the mean matters; g and b per column.
    HostTensor x = RandomF32({c.rows, c.n}, 21 + i, -2.3f, 3.7f), g = RandomF32({c.n}, 31 + i, 0.5f, 1.5f),
               b = RandomF32({c.n}, 41 + i), expected = ZerosF32({c.rows, c.n});
    for (int64_t row = 0; row < c.rows; ++row) {
      const float* in = F32(x) + row * c.n;
      double mean = 0, var = 0;
      for (int64_t j = 0; j < c.n; ++j) mean += in[j];
      mean = c.rms ? 0 : mean / c.n;
      for (int64_t j = 0; j < c.n; ++j) var += (in[j] - mean) * (in[j] - mean);
      const double inv = 1 / std::sqrt(var / c.n + 1e-5);
      for (int64_t j = 0; j < c.n; ++j)
        F32(expected)[row * c.n + j] = static_cast<float>((in[j] - mean) * inv * F32(g)[j] + (c.rms ? 0 : F32(b)[j]));
    }
    std::vector<HostTensor> inputs = {x, g};
    if (!c.rms) inputs.push_back(b);
    uint64_t dispatches = 0;
    HostTensor y = CallCounting(module, device, inputs, dispatches);
    if (device == "cuda") CHECK(dispatches == 1u);
    RequireClose(y, expected, 1e-4, 1e-4);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("layer norms and RMSNorms are one kernel, a block per row on CUDA, and match f64", NormsMatchF64)

}  // namespace
}  // namespace hexir::e2e
