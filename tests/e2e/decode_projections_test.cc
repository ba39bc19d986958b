// A llama decode layer's attention inputs, as the llama importer writes them
// (compiler/importers): the q, k and v projections of one normalized row x, the rotary
// embedding of k (pairs (2j, 2j + 1) of a head, angle pos * base^(-2j / head_dim), the pair
// element read through tensor.extract at i xor 1) written into row `pos` of the K cache, and
// v written into row `pos` of the V cache (in place: @layer is private and its caches are
// donated by @main). Checked against an f64 reference at awkward sizes: odd model dims, GQA
// 32/4 and 5/1 heads, head_dim 6 and 64, f32 and f16 weights, positions 0 and at the cache's
// last row; every cache row but `pos` must come back unchanged. On CUDA also with
// `hexir-compile --sibling-projections` (hexir-merge-sibling-projections: q, k and v + its
// cache row one kernel, blocks partitioned over their rows, W warps a row for all of them),
// which records 2 dispatches fewer where the rows are long enough for a warp each (dim >= 64),
// with W chosen (1 at dims 64 and 77, 2 at 768 and 2047, 4 at 1030 with f16 weights, 8 with
// f32) and forced to 1 and 4 (`--cuda-sibling-warps-per-row`).
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

struct Shape {
  int dim, heads, kv_heads, head_dim, cache, pos;
  bool f16;
  int q() const { return heads * head_dim; }
  int kv() const { return kv_heads * head_dim; }
};

std::string Str(int v) { return std::to_string(v); }

// %y = W %xn (rows x dim), f32 accumulation, f16 weights widened in the body.
std::string Gemv(const std::string& y, const std::string& w, int rows, const Shape& s) {
  std::string n = Str(rows), k = Str(s.dim), t = s.f16 ? "f16" : "f32";
  return "    %e_" + y + " = tensor.empty() : tensor<" + n + "xf32>\n"
         "    %z_" + y + " = linalg.fill ins(%zero : f32) outs(%e_" + y + " : tensor<" + n + "xf32>) -> tensor<" + n + "xf32>\n"
         "    %" + y + " = linalg.generic {indexing_maps = [#k, #nk, #n], iterator_types = [\"parallel\", \"reduction\"]} "
         "ins(%x, " + w + " : tensor<" + k + "xf32>, tensor<" + n + "x" + k + "x" + t + ">) outs(%z_" + y + " : tensor<" + n + "xf32>) {\n"
         "    ^bb0(%a: f32, %b: " + t + ", %acc: f32):\n" +
         (s.f16 ? "      %bf = arith.extf %b : f16 to f32\n" : "") +
         "      %m = arith.mulf %a, " + (s.f16 ? "%bf" : "%b") + " : f32\n"
         "      %r = arith.addf %acc, %m : f32\n"
         "      linalg.yield %r : f32\n"
         "    } -> tensor<" + n + "xf32>\n";
}

std::string Layer(const Shape& s) {
  std::string d = Str(s.dim), q = Str(s.q()), kv = Str(s.kv()), c = Str(s.cache), hd = Str(s.head_dim);
  std::string t = s.f16 ? "f16" : "f32";
  std::string cache = "tensor<" + c + "x" + kv + "xf32>";
  std::string wq = "tensor<" + q + "x" + d + "x" + t + ">", wkv = "tensor<" + kv + "x" + d + "x" + t + ">";
  std::string row = "tensor<1x" + kv + "xf32>";
  return "#k = affine_map<(n, k) -> (k)>\n"
         "#nk = affine_map<(n, k) -> (n, k)>\n"
         "#n = affine_map<(n, k) -> (n)>\n"
         "#id2 = affine_map<(d0, d1) -> (d0, d1)>\n"
         "func.func private @layer(%x: tensor<" + d + "xf32>, %kc: " + cache + ", %vc: " + cache + ", %pos: i64, "
         "%wq: " + wq + ", %wk: " + wkv + ", %wv: " + wkv + ") -> (tensor<" + q + "xf32>, " + cache + ", " + cache + ") {\n"
         "    %zero = arith.constant 0.0 : f32\n" +
         Gemv("q", "%wq", s.q(), s) + Gemv("k", "%wk", s.kv(), s) + Gemv("v", "%wv", s.kv(), s) +
         "    %krow = tensor.expand_shape %k [[0, 1]] output_shape [1, " + kv + "] : tensor<" + kv + "xf32> into " + row + "\n"
         "    %er = tensor.empty() : " + row + "\n"
         "    %rot = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = [\"parallel\", \"parallel\"]} "
         "ins(%krow : " + row + ") outs(%er : " + row + ") {\n"
         "    ^bb0(%a: f32, %o: f32):\n"
         "      %i0 = linalg.index 0 : index\n"
         "      %i1 = linalg.index 1 : index\n"
         "      %c0 = arith.constant 0 : index\n"
         "      %c1 = arith.constant 1 : index\n"
         "      %c2 = arith.constant 2 : index\n"
         "      %chd = arith.constant " + hd + " : index\n"
         "      %j = arith.remui %i1, %chd : index\n"
         "      %odd = arith.remui %i1, %c2 : index\n"
         "      %pair = arith.subi %j, %odd : index\n"
         "      %pi = arith.index_cast %pair : index to i64\n"
         "      %pf = arith.sitofp %pi : i64 to f32\n"
         "      %hdf = arith.constant " + hd + ".0 : f32\n"
         "      %ex = arith.divf %pf, %hdf : f32\n"
         "      %base = arith.constant 10000.0 : f32\n"
         "      %pw = math.powf %base, %ex : f32\n"
         "      %one = arith.constant 1.0 : f32\n"
         "      %freq = arith.divf %one, %pw : f32\n"
         "      %posf = arith.sitofp %pos : i64 to f32\n"
         "      %ang = arith.mulf %posf, %freq : f32\n"
         "      %cs = math.cos %ang : f32\n"
         "      %sn = math.sin %ang : f32\n"
         "      %pidx = arith.xori %i1, %c1 : index\n"
         "      %b = tensor.extract %krow[%i0, %pidx] : " + row + "\n"
         "      %even = arith.cmpi eq, %odd, %c0 : index\n"
         "      %ac = arith.mulf %a, %cs : f32\n"
         "      %bs = arith.mulf %b, %sn : f32\n"
         "      %re = arith.subf %ac, %bs : f32\n"
         "      %ro = arith.addf %bs, %ac : f32\n"
         "      %r = arith.select %even, %re, %ro : f32\n"
         "      linalg.yield %r : f32\n"
         "    } -> " + row + "\n"
         "    %p = arith.index_cast %pos : i64 to index\n"
         "    %kc2 = tensor.insert_slice %rot into %kc[%p, 0] [1, " + kv + "] [1, 1] : " + row + " into " + cache + "\n"
         "    %vrow = tensor.expand_shape %v [[0, 1]] output_shape [1, " + kv + "] : tensor<" + kv + "xf32> into " + row + "\n"
         "    %vc2 = tensor.insert_slice %vrow into %vc[%p, 0] [1, " + kv + "] [1, 1] : " + row + " into " + cache + "\n"
         "    return %q, %kc2, %vc2 : tensor<" + q + "xf32>, " + cache + ", " + cache + "\n"
         "}\n"
         // The caches are copied into buffers @main owns, which it donates to @layer.
         "func.func @main(%x: tensor<" + d + "xf32>, %kc: " + cache + ", %vc: " + cache + ", %pos: i64, "
         "%wq: " + wq + ", %wk: " + wkv + ", %wv: " + wkv + ") -> (tensor<" + q + "xf32>, " + cache + ", " + cache + ") {\n"
         "    %ek = tensor.empty() : " + cache + "\n"
         "    %kc0 = linalg.copy ins(%kc : " + cache + ") outs(%ek : " + cache + ") -> " + cache + "\n"
         "    %ev = tensor.empty() : " + cache + "\n"
         "    %vc0 = linalg.copy ins(%vc : " + cache + ") outs(%ev : " + cache + ") -> " + cache + "\n"
         "    %q, %k2, %v2 = func.call @layer(%x, %kc0, %vc0, %pos, %wq, %wk, %wv) : (tensor<" + d + "xf32>, " + cache + ", " +
         cache + ", i64, " + wq + ", " + wkv + ", " + wkv + ") -> (tensor<" + q + "xf32>, " + cache + ", " + cache + ")\n"
         "    return %q, %k2, %v2 : tensor<" + q + "xf32>, " + cache + ", " + cache + "\n"
         "}\n";
}

std::string Name(const Shape& s) {
  return "decode_projections_" + Str(s.dim) + "_" + Str(s.heads) + "_" + Str(s.kv_heads) + "x" + Str(s.head_dim) + "_c" +
         Str(s.cache) + "_p" + Str(s.pos) + (s.f16 ? "_f16" : "_f32");
}

void DecodeProjectionsMatchF64(const std::string& target) {
  // dim 77 and 45: odd K (tails after the 16-byte steps); 32/4 heads of 6: GQA, 192 q rows
  // and 24 k/v rows; 5/1 heads: one KV head; 2047 x (2048 + 256 + 256), head_dim 64:
  // TinyLlama's projections with an odd K; 768 x 3 x 768: random768's; 1030 x (320 + 64 +
  // 64): few rows, several warps each; 64: the shortest row a warp reduces; positions 0 and
  // the cache's last row.
  const std::vector<Shape> shapes = {{77, 32, 4, 6, 9, 0, false},    {77, 32, 4, 6, 9, 8, true},
                                     {45, 5, 1, 6, 33, 32, false},   {45, 5, 1, 6, 33, 17, true},
                                     {2047, 32, 4, 64, 40, 39, true}, {768, 12, 12, 64, 20, 19, true},
                                     {1030, 5, 1, 64, 12, 5, true},   {1030, 5, 1, 64, 12, 11, false},
                                     {64, 4, 2, 16, 8, 3, false}};
  std::vector<std::string> flags = {""};
  if (target == "cuda")
    flags = {"", "--sibling-projections", "--sibling-projections --cuda-sibling-warps-per-row=1",
             "--sibling-projections --cuda-sibling-warps-per-row=4"};
  std::vector<std::string> modules;  // shape-major, then flags
  for (const Shape& s : shapes)
    for (const std::string& f : flags) modules.push_back(CompileOrDie(Layer(s), Name(s), target, f));
  std::vector<uint64_t> counts(modules.size());
  for (size_t m = 0; m < modules.size(); ++m) {
    const Shape& s = shapes[m / flags.size()];
    const std::string& f = flags[m % flags.size()];
    INFO(Name(s) << " " << f);
    std::vector<double> wq, wk, wv, kc_values, vc_values;
    const size_t c = m / flags.size();
    HostTensor x = RandomF32({s.dim}, static_cast<unsigned>(61 + c));
    HostTensor tq = DyadicTensor({s.q(), s.dim}, static_cast<unsigned>(71 + c), s.f16, wq);
    HostTensor tk = DyadicTensor({s.kv(), s.dim}, static_cast<unsigned>(81 + c), s.f16, wk);
    HostTensor tv = DyadicTensor({s.kv(), s.dim}, static_cast<unsigned>(91 + c), s.f16, wv);
    HostTensor kc = DyadicTensor({s.cache, s.kv()}, static_cast<unsigned>(101 + c), false, kc_values);
    HostTensor vc = DyadicTensor({s.cache, s.kv()}, static_cast<unsigned>(111 + c), false, vc_values);
    auto dot = [&](const std::vector<double>& w, int row) {
      double acc = 0;
      for (int k = 0; k < s.dim; ++k) acc += w[static_cast<size_t>(row) * s.dim + k] * F32(x)[k];
      return acc;
    };
    HostTensor want_q = ZerosF32({s.q()});
    for (int n = 0; n < s.q(); ++n) F32(want_q)[n] = static_cast<float>(dot(wq, n));
    HostTensor want_k = kc, want_v = vc;  // every row but pos unchanged
    for (int i = 0; i < s.kv(); ++i) {
      int j = i % s.head_dim, pair = j - j % 2;
      double angle = s.pos / std::pow(10000.0, static_cast<double>(pair) / s.head_dim);
      double a = dot(wk, i), b = dot(wk, i ^ 1);
      double rotated = i % 2 == 0 ? a * std::cos(angle) - b * std::sin(angle) : b * std::sin(angle) + a * std::cos(angle);
      F32(want_k)[static_cast<size_t>(s.pos) * s.kv() + i] = static_cast<float>(rotated);
      F32(want_v)[static_cast<size_t>(s.pos) * s.kv() + i] = static_cast<float>(dot(wv, i));
    }
    auto session = OpenOrDie(modules[m], target);
    std::vector<tools::HostValue> args = {Tensor(x),          Tensor(kc), Tensor(vc), I64Scalar(s.pos),
                                          Tensor(tq),         Tensor(tk), Tensor(tv)};
    hal::DeviceStats before = session->device().stats();
    std::vector<tools::HostValue> out = CallOrDie(*session, "main", args);
    counts[m] = session->device().stats().dispatches_executed - before.dispatches_executed;
    std::printf("%s [%s] %s: %llu dispatches\n", Name(s).c_str(), target.c_str(), f.c_str(),
                static_cast<unsigned long long>(counts[m]));
    // The caches' two copies, q, k, the K row (rotary) and v + the V row; merged: q, k and
    // v + the V row one.
    const size_t unmerged = m - m % flags.size();
    if (m != unmerged) CHECK(counts[m] == (s.dim >= 64 ? counts[unmerged] - 2 : counts[unmerged]));
    REQUIRE(out.size() == 3);
    RequireClose(out[0].tensor, want_q, 1e-4, 1e-4);
    RequireClose(out[1].tensor, want_k, 2e-4, 2e-4);
    RequireClose(out[2].tensor, want_v, 1e-4, 1e-4);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("a decode layer's q/k/v projections, k rotary and cache rows match f64",
                          DecodeProjectionsMatchF64)

}  // namespace
}  // namespace hexir::e2e
