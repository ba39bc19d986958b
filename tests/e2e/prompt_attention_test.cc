// A prompt's attention as the llama importer emits it for the prefill (M prompt rows at
// positions 0..M-1, scores over the whole cache, a causal softmax s <= m, the weighted V sum;
// generics marked `hexir.dispatch_group = "prompt_attention.N"`), against f64 loops: odd head
// sizes, prime cache lengths, GQA ratios 1, 3, 8 and 17 (a ragged head tile), f32, f16 and
// bf16 caches, and several prompt lengths M of one module (M is dynamic), from one row to the
// whole cache. On CUDA the group is one kernel (passes/codegen/CUDADecodeAttention.h: query
// slots of several rows and heads per block, blocks striding over the row tiles); other
// targets dissolve the group (passes/dispatch/DissolveDispatchGroups.cpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

struct Shape {
  int64_t kv_heads, group, head_dim, cache_len;
  std::string cache = "f32";  // the caches' element type: f32, f16 or bf16
  int64_t dim() const { return kv_heads * group * head_dim; }
  int64_t kv() const { return kv_heads * head_dim; }
};

std::string T(const std::vector<int64_t>& dims, const std::string& element = "f32") {
  std::string s = "tensor<";
  for (int64_t d : dims) s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return s + element + ">";
}

// The importer's prompt attention (compiler/importers/llama/EmitModule.cc PromptAttention).
std::string Program(const Shape& s) {
  const int64_t A = s.kv_heads, G = s.group, HD = s.head_dim, S = s.cache_len;
  const std::string qt = T({-1, s.dim()}), q4 = T({-1, A, G, HD}), ct = T({S, s.kv()}, s.cache),
                    c3 = T({S, A, HD}, s.cache), st = T({-1, A, G, S}), mt = T({-1, A, G});
  char scale[64];
  std::snprintf(scale, sizeof(scale), "%.9e", double(std::sqrt(float(HD))));
  const std::string mark = "hexir.dispatch_group = \"prompt_attention.0\"";
  // A cache element widened to f32 (as the importer's Ext does), named `cv`.
  const std::string widen = s.cache == "f32" ? "" : "      %c = arith.extf %kv : " + s.cache + " to f32\n";
  const std::string cv = s.cache == "f32" ? "%kv" : "%c";
  // `result` = the sum over the last of `loops` of lhs x the cache element (K or V, at (s, a,
  // d), widened to f32): the scores q K and the weighted sum P V, generics of the group.
  auto Contraction = [&](const std::string& result, const std::string& loops, const std::string& lhsMap,
                         const std::string& outMap, const std::string& lhs, const std::string& lhsType,
                         const std::string& cache, const std::string& init, const std::string& outType) {
    return "  " + result + " = linalg.generic {indexing_maps = [affine_map<" + loops + " -> " + lhsMap +
           ">, affine_map<" + loops + " -> (s, a, d)>, affine_map<" + loops + " -> " + outMap +
           ">], iterator_types = [\"parallel\", \"parallel\", \"parallel\", \"parallel\", \"reduction\"], " +
           mark + "} ins(" + lhs + ", " + cache + " : " + lhsType + ", " + c3 + ") outs(" + init + " : " + outType +
           ") {\n    ^bb0(%x: f32, %kv: " + s.cache + ", %acc: f32):\n" + widen + "      %p = arith.mulf %x, " + cv +
           " : f32\n      %r = arith.addf %acc, %p : f32\n      linalg.yield %r : f32\n    } -> " + outType + "\n";
  };
  auto causal = [](const std::string& out) {
    return "      %mi = linalg.index 0 : index\n      %si = linalg.index 3 : index\n"
           "      %" + out + " = arith.cmpi ule, %si, %mi : index\n";
  };
  std::string p;
  p += "func.func @main(%q: " + qt + ", %kc: " + ct + ", %vc: " + ct + ") -> " + qt + " {\n";
  p += "  %c0 = arith.constant 0 : index\n  %m = tensor.dim %q, %c0 : " + qt + "\n";
  p += "  %q4 = tensor.expand_shape %q [[0], [1, 2, 3]] output_shape [%m, " + std::to_string(A) + ", " +
       std::to_string(G) + ", " + std::to_string(HD) + "] : " + qt + " into " + q4 + "\n";
  for (const char* c : {"k", "v"})
    p += std::string("  %") + c + "3 = tensor.expand_shape %" + c + "c [[0], [1, 2]] output_shape [" +
         std::to_string(S) + ", " + std::to_string(A) + ", " + std::to_string(HD) + "] : " + ct + " into " + c3 + "\n";
  p += "  %z = arith.constant 0.0 : f32\n  %e0 = tensor.empty(%m) : " + st + "\n";
  p += "  %f0 = linalg.fill ins(%z : f32) outs(%e0 : " + st + ") -> " + st + "\n";
  p += Contraction("%sc", "(m, a, g, s, d)", "(m, a, g, d)", "(m, a, g, s)", "%q4", q4, "%k3", "%f0", st);
  const std::string id = "affine_map<(m, a, g, s) -> (m, a, g, s)>", row = "affine_map<(m, a, g, s) -> (m, a, g)>",
                    red = "iterator_types = [\"parallel\", \"parallel\", \"parallel\", \"reduction\"], " + mark,
                    par = "iterator_types = [\"parallel\", \"parallel\", \"parallel\", \"parallel\"], " + mark;
  p += "  %lo = arith.constant -3.0e+38 : f32\n  %e1 = tensor.empty(%m) : " + mt + "\n";
  p += "  %f1 = linalg.fill ins(%lo : f32) outs(%e1 : " + mt + ") -> " + mt + "\n";
  p += "  %mx = linalg.generic {indexing_maps = [" + id + ", " + row + "], " + red + "} ins(%sc : " + st +
       ") outs(%f1 : " + mt + ") {\n    ^bb0(%x: f32, %acc: f32):\n" + causal("v") + "      %k = arith.constant " +
       scale + " : f32\n      %y = arith.divf %x, %k : f32\n      %mm = arith.maximumf %acc, %y : f32\n"
       "      %r = arith.select %v, %mm, %acc : f32\n      linalg.yield %r : f32\n    } -> " + mt + "\n";
  p += "  %e2 = tensor.empty(%m) : " + st + "\n";
  p += "  %ex = linalg.generic {indexing_maps = [" + id + ", " + row + ", " + id + "], " + par + "} ins(%sc, %mx : " +
       st + ", " + mt + ") outs(%e2 : " + st + ") {\n    ^bb0(%x: f32, %mv: f32, %o: f32):\n" + causal("v") +
       "      %k = arith.constant " + scale + " : f32\n      %y = arith.divf %x, %k : f32\n"
       "      %d = arith.subf %y, %mv : f32\n      %e = math.exp %d : f32\n      %zz = arith.constant 0.0 : f32\n"
       "      %r = arith.select %v, %e, %zz : f32\n      linalg.yield %r : f32\n    } -> " + st + "\n";
  p += "  %e3 = tensor.empty(%m) : " + mt + "\n  %f3 = linalg.fill ins(%z : f32) outs(%e3 : " + mt + ") -> " + mt + "\n";
  p += "  %sm = linalg.generic {indexing_maps = [" + id + ", " + row + "], " + red + "} ins(%ex : " + st +
       ") outs(%f3 : " + mt + ") {\n    ^bb0(%x: f32, %acc: f32):\n      %r = arith.addf %acc, %x : f32\n"
       "      linalg.yield %r : f32\n    } -> " + mt + "\n";
  p += "  %e4 = tensor.empty(%m) : " + st + "\n";
  p += "  %pr = linalg.generic {indexing_maps = [" + id + ", " + row + ", " + id + "], " + par + "} ins(%ex, %sm : " +
       st + ", " + mt + ") outs(%e4 : " + st + ") {\n    ^bb0(%x: f32, %l: f32, %o: f32):\n"
       "      %r = arith.divf %x, %l : f32\n      linalg.yield %r : f32\n    } -> " + st + "\n";
  p += "  %e5 = tensor.empty(%m) : " + q4 + "\n  %f5 = linalg.fill ins(%z : f32) outs(%e5 : " + q4 + ") -> " + q4 + "\n";
  p += Contraction("%o4", "(m, a, g, d, s)", "(m, a, g, s)", "(m, a, g, d)", "%pr", st, "%v3", "%f5", q4);
  p += "  %att = tensor.collapse_shape %o4 [[0], [1, 2, 3]] : " + q4 + " into " + qt + "\n";
  p += "  return %att : " + qt + "\n}\n";
  return p;
}

// f64 reference: row m, query head (a, g) over the cache rows s <= m.
tools::HostTensor Reference(const Shape& s, int64_t rows, const tools::HostTensor& q, const tools::HostTensor& kc,
                            const tools::HostTensor& vc) {
  tools::HostTensor out = ZerosF32({rows, s.dim()});
  const float *Q = F32(q), *K = F32(kc), *V = F32(vc);
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t a = 0; a < s.kv_heads; ++a)
      for (int64_t g = 0; g < s.group; ++g) {
        const int64_t h = m * s.dim() + (a * s.group + g) * s.head_dim;
        std::vector<double> p(m + 1);
        double mx = -1e300, l = 0;
        for (int64_t t = 0; t <= m; ++t) {
          double dot = 0;
          for (int64_t d = 0; d < s.head_dim; ++d) dot += double(Q[h + d]) * K[t * s.kv() + a * s.head_dim + d];
          p[t] = dot / std::sqrt(double(s.head_dim));
          mx = std::max(mx, p[t]);
        }
        for (double& x : p) l += x = std::exp(x - mx);
        for (int64_t d = 0; d < s.head_dim; ++d) {
          double o = 0;
          for (int64_t t = 0; t <= m; ++t) o += p[t] / l * V[t * s.kv() + a * s.head_dim + d];
          F32(out)[h + d] = float(o);
        }
      }
  return out;
}

struct Case {
  Shape shape;
  std::vector<int64_t> prompts;  // prompt lengths M run through one module
};

// Every module is compiled before the first runs (HEXIR_SAVE_MODULES_DIR / HEXIR_PRECOMPILED_DIR).
void CheckAttention(const std::string& device, const std::vector<Case>& cases) {
  std::vector<std::string> modules;
  for (const Case& c : cases) {
    const Shape& s = c.shape;
    modules.push_back(CompileOrDie(Program(s), "prompt_attention_" + std::to_string(s.kv_heads) + "_" +
                                                   std::to_string(s.group) + "_" + std::to_string(s.head_dim) + "_" +
                                                   std::to_string(s.cache_len) + "_" + s.cache,
                                   device));
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const Shape& s = cases[i].shape;
    auto session = OpenOrDie(modules[i], device);
    tools::HostTensor kc = RandomF32({s.cache_len, s.kv()}, 8), vc = RandomF32({s.cache_len, s.kv()}, 9);
    tools::HostTensor kn = Narrowed(kc, s.cache), vn = Narrowed(vc, s.cache);
    for (int64_t rows : cases[i].prompts) {
      INFO("shape " << s.kv_heads << "x" << s.group << "x" << s.head_dim << ", cache " << s.cache_len << " "
                    << s.cache << ", prompt " << rows);
      // Scores spread over a few units so the softmax is neither flat nor one-hot.
      tools::HostTensor q = RandomF32({rows, s.dim()}, 7 + rows, -2, 2);
      auto results = CallOrDie(*session, "main", {Tensor(q), Tensor(kn), Tensor(vn)});
      REQUIRE(results.size() == 1);
      RequireClose(results[0].tensor, Reference(s, rows, q, kc, vc), 1e-4, 1e-5);
    }
  }
}

void OddShapes(const std::string& device) {
  CheckAttention(device, {
      // Head size 7 (scalar loads), 3 heads a KV head (CUDA: 5 rows a block), prime cache 61.
      {{2, 3, 7, 61}, {1, 2, 5, 6, 17, 61}},
      // Head size 12, 17 query heads a KV head (two head tiles of 9, the last ragged).
      {{2, 17, 12, 97, "bf16"}, {1, 5, 96}},
  });
}

void LlamaShapes(const std::string& device) {
  CheckAttention(device, {
      // TinyLlama's (4 KV heads of 8, head size 64, f16 cache; CUDA: 2 rows a block).
      {{4, 8, 64, 512, "f16"}, {1, 7, 130, 512}},
      // random768's (12 heads, no grouping: 16 rows a block), prompts across windows of 64.
      {{12, 1, 64, 256}, {1, 33, 64, 65, 256}},
      // Head size 128 (one row a block of 8 heads), bf16.
      {{2, 8, 128, 300, "bf16"}, {1, 150, 299}},
  });
}

HEXIR_E2E_TEST_ON_DEVICES("prompt attention matches causal f64 loops at odd head sizes, ragged head tiles and "
                          "prime caches", OddShapes)
HEXIR_E2E_TEST_ON_DEVICES("prompt attention matches causal f64 loops at llama shapes, f16 and bf16 caches, "
                          "prompts of 1 row to the whole cache", LlamaShapes)

}  // namespace
}  // namespace hexir::e2e
