// Decode attention as the llama importer emits it (scores, softmax, weighted V sum over the
// n = pos + 1 filled cache rows, generics marked `hexir.dispatch_group = "decode_attention.N"`)
// compiles to one dispatch; on CUDA that dispatch is the flash-decoding kernel
// (passes/codegen/CUDADecodeAttention.h: clusters of split blocks merged through distributed
// shared memory). Results against f64 loops at awkward shapes (odd head sizes, prime cache
// lengths, a split holding no rows) and at several positions of one module (n is dynamic);
// also with f16 and bf16 caches (hexir-import --kv-cache), against f64 loops over the
// rounded cache values; and past one block's limits (more than 16 query heads per KV head,
// a cache whose scores do not fit shared memory at once). With the rotary embedding of q as
// the group's first generic (as the importer emits it): computed inside the same dispatch
// (CUDA: as the kernel loads q), against f64 rotations of the raw q. On one CPU workgroup the
// group is vector loops over contiguous cache rows (passes/codegen/CPUDecodeAttention.h).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

struct Shape {
  int64_t kv_heads, group, head_dim, cache_len;
  std::string cache = "f32";  // the caches' element type: f32, f16 or bf16
  bool rope = false;          // q arrives before its rotary embedding (a generic of the group)
  int64_t dim() const { return kv_heads * group * head_dim; }
  int64_t kv() const { return kv_heads * head_dim; }
};

std::string T(const std::vector<int64_t>& dims, const std::string& element = "f32") {
  std::string s = "tensor<";
  for (int64_t d : dims) s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return s + element + ">";
}

constexpr float kTheta = 10000.0f;

// %q3 = the rotary embedding of %qr (type q3, [KVH][G][HD]) at %pos, on interleaved pairs
// (2i, 2i + 1) of each head, as the importer writes it (llama2.c's float order).
std::string RopeGeneric(const std::string& q3, int64_t head_dim, const std::string& mark) {
  const std::string id = "affine_map<(a, g, d) -> (a, g, d)>";
  return "  %er = tensor.empty() : " + q3 + "\n  %q3 = linalg.generic {indexing_maps = [" + id + ", " + id +
         "], iterator_types = [\"parallel\", \"parallel\", \"parallel\"], " + mark + "} ins(%qr : " + q3 +
         ") outs(%er : " + q3 + ") {\n    ^bb0(%x: f32, %o: f32):\n"
         "      %a = linalg.index 0 : index\n      %g = linalg.index 1 : index\n      %d = linalg.index 2 : index\n"
         "      %c0 = arith.constant 0 : index\n      %c1 = arith.constant 1 : index\n"
         "      %c2 = arith.constant 2 : index\n      %pd = arith.xori %d, %c1 : index\n"
         "      %y = tensor.extract %qr[%a, %g, %pd] : " + q3 + "\n"
         "      %par = arith.remui %d, %c2 : index\n      %hev = arith.subi %d, %par : index\n"
         "      %hevi = arith.index_cast %hev : index to i64\n      %hevf = arith.sitofp %hevi : i64 to f32\n"
         "      %hd = arith.constant " + std::to_string(head_dim) + ".0 : f32\n"
         "      %ratio = arith.divf %hevf, %hd : f32\n      %theta = arith.constant 10000.0 : f32\n"
         "      %pw = math.powf %theta, %ratio : f32\n      %one = arith.constant 1.0 : f32\n"
         "      %freq = arith.divf %one, %pw : f32\n      %posf = arith.sitofp %pos : i64 to f32\n"
         "      %ang = arith.mulf %posf, %freq : f32\n      %cs = math.cos %ang : f32\n      %sn = math.sin %ang : f32\n"
         "      %even = arith.cmpi eq, %par, %c0 : index\n      %t1 = arith.mulf %x, %cs : f32\n"
         "      %t2 = arith.mulf %y, %sn : f32\n      %ev = arith.subf %t1, %t2 : f32\n"
         "      %od = arith.addf %t2, %t1 : f32\n      %r = arith.select %even, %ev, %od : f32\n"
         "      linalg.yield %r : f32\n    } -> " + q3 + "\n";
}

// The importer's decode attention (compiler/importers/llama/EmitModule.cc DecodeAttention).
std::string Program(const Shape& s) {
  const std::string q3 = T({s.kv_heads, s.group, s.head_dim}), st = T({s.kv_heads, s.group, -1}),
                    mt = T({s.kv_heads, s.group}), ct = T({s.cache_len, s.kv()}, s.cache);
  char scale[64];
  std::snprintf(scale, sizeof(scale), "%.9e", double(std::sqrt(float(s.head_dim))));
  const std::string hd = std::to_string(s.head_dim), mark = "hexir.dispatch_group = \"decode_attention.0\"";
  auto gather = [&](const std::string& cache, int a, int d, int sd) {
    return "      %a = linalg.index " + std::to_string(a) + " : index\n      %d = linalg.index " +
           std::to_string(d) + " : index\n      %s = linalg.index " + std::to_string(sd) +
           " : index\n      %hd = arith.constant " + hd + " : index\n      %ah = arith.muli %a, %hd : index\n" +
           "      %col = arith.addi %ah, %d : index\n" +
           (s.cache == "f32" ? "      %c = tensor.extract " + cache + "[%s, %col] : " + ct + "\n"
                             : "      %cn = tensor.extract " + cache + "[%s, %col] : " + ct +
                                   "\n      %c = arith.extf %cn : " + s.cache + " to f32\n");
  };
  std::string p;
  p += "func.func @main(%q: " + T({s.dim()}) + ", %kc: " + ct + ", %vc: " + ct + ", %pos: i64) -> " + T({s.dim()}) + " {\n";
  p += std::string("  ") + (s.rope ? "%qr" : "%q3") + " = tensor.expand_shape %q [[0, 1, 2]] output_shape [" +
       std::to_string(s.kv_heads) + ", " + std::to_string(s.group) + ", " + hd + "] : " + T({s.dim()}) + " into " +
       q3 + "\n";
  if (s.rope) p += RopeGeneric(q3, s.head_dim, mark);
  p += "  %one = arith.constant 1 : i64\n  %n64 = arith.addi %pos, %one : i64\n"
       "  %n = arith.index_cast %n64 : i64 to index\n";
  p += "  %e0 = tensor.empty(%n) : " + st + "\n  %z = arith.constant 0.0 : f32\n";
  p += "  %f0 = linalg.fill ins(%z : f32) outs(%e0 : " + st + ") -> " + st + "\n";
  p += "  %sc = linalg.generic {indexing_maps = [affine_map<(a, g, s, d) -> (a, g, d)>, affine_map<(a, g, s, d) -> (a, g, s)>], "
       "iterator_types = [\"parallel\", \"parallel\", \"parallel\", \"reduction\"], " + mark + "} ins(%q3 : " + q3 +
       ") outs(%f0 : " + st + ") {\n    ^bb0(%x: f32, %acc: f32):\n" + gather("%kc", 0, 3, 2) +
       "      %m = arith.mulf %x, %c : f32\n      %r = arith.addf %acc, %m : f32\n      linalg.yield %r : f32\n    } -> " + st + "\n";
  const std::string id = "affine_map<(a, g, s) -> (a, g, s)>", row = "affine_map<(a, g, s) -> (a, g)>",
                    red = "iterator_types = [\"parallel\", \"parallel\", \"reduction\"], " + mark,
                    par = "iterator_types = [\"parallel\", \"parallel\", \"parallel\"], " + mark;
  p += "  %e1 = tensor.empty() : " + mt + "\n  %lo = arith.constant -3.0e+38 : f32\n";
  p += "  %f1 = linalg.fill ins(%lo : f32) outs(%e1 : " + mt + ") -> " + mt + "\n";
  p += "  %mx = linalg.generic {indexing_maps = [" + id + ", " + row + "], " + red + "} ins(%sc : " + st + ") outs(%f1 : " + mt +
       ") {\n    ^bb0(%x: f32, %acc: f32):\n      %k = arith.constant " + scale +
       " : f32\n      %y = arith.divf %x, %k : f32\n      %r = arith.maximumf %acc, %y : f32\n      linalg.yield %r : f32\n    } -> " + mt + "\n";
  p += "  %e2 = tensor.empty(%n) : " + st + "\n";
  p += "  %ex = linalg.generic {indexing_maps = [" + id + ", " + row + ", " + id + "], " + par + "} ins(%sc, %mx : " + st + ", " + mt +
       ") outs(%e2 : " + st + ") {\n    ^bb0(%x: f32, %m: f32, %o: f32):\n      %k = arith.constant " + scale +
       " : f32\n      %y = arith.divf %x, %k : f32\n      %d = arith.subf %y, %m : f32\n      %e = math.exp %d : f32\n"
       "      linalg.yield %e : f32\n    } -> " + st + "\n";
  p += "  %e3 = tensor.empty() : " + mt + "\n  %f3 = linalg.fill ins(%z : f32) outs(%e3 : " + mt + ") -> " + mt + "\n";
  p += "  %sm = linalg.generic {indexing_maps = [" + id + ", " + row + "], " + red + "} ins(%ex : " + st + ") outs(%f3 : " + mt +
       ") {\n    ^bb0(%x: f32, %acc: f32):\n      %r = arith.addf %acc, %x : f32\n      linalg.yield %r : f32\n    } -> " + mt + "\n";
  p += "  %e4 = tensor.empty(%n) : " + st + "\n";
  p += "  %pr = linalg.generic {indexing_maps = [" + id + ", " + row + ", " + id + "], " + par + "} ins(%ex, %sm : " + st + ", " + mt +
       ") outs(%e4 : " + st + ") {\n    ^bb0(%x: f32, %l: f32, %o: f32):\n      %r = arith.divf %x, %l : f32\n"
       "      linalg.yield %r : f32\n    } -> " + st + "\n";
  p += "  %e5 = tensor.empty() : " + q3 + "\n  %f5 = linalg.fill ins(%z : f32) outs(%e5 : " + q3 + ") -> " + q3 + "\n";
  p += "  %o3 = linalg.generic {indexing_maps = [affine_map<(a, g, d, s) -> (a, g, s)>, affine_map<(a, g, d, s) -> (a, g, d)>], "
       "iterator_types = [\"parallel\", \"parallel\", \"parallel\", \"reduction\"], " + mark + "} ins(%pr : " + st +
       ") outs(%f5 : " + q3 + ") {\n    ^bb0(%x: f32, %acc: f32):\n" + gather("%vc", 0, 2, 3) +
       "      %m = arith.mulf %x, %c : f32\n      %r = arith.addf %acc, %m : f32\n      linalg.yield %r : f32\n    } -> " + q3 + "\n";
  p += "  %att = tensor.collapse_shape %o3 [[0, 1, 2]] : " + q3 + " into " + T({s.dim()}) + "\n";
  p += "  return %att : " + T({s.dim()}) + "\n}\n";
  return p;
}

// q rotated in f64 by the angles pos * theta^(-2i / HD) of its pairs (2i, 2i + 1) within each
// head. The angle is the f32 product llama2.c forms (pos * freq, freq = 1 / theta^(2i / HD)
// in f32): that product is the specification, the rotation is exact.
std::vector<double> Rotated(const Shape& s, const float* q, int64_t pos) {
  std::vector<double> r(s.dim());
  for (int64_t h = 0; h < s.kv_heads * s.group; ++h)
    for (int64_t i = 0; i < s.head_dim; i += 2) {
      const float freq = 1.0f / std::pow(kTheta, float(i) / float(s.head_dim));
      const double angle = double(float(pos) * freq), x0 = q[h * s.head_dim + i], x1 = q[h * s.head_dim + i + 1];
      r[h * s.head_dim + i] = x0 * std::cos(angle) - x1 * std::sin(angle);
      r[h * s.head_dim + i + 1] = x0 * std::sin(angle) + x1 * std::cos(angle);
    }
  return r;
}

// f64 reference: query head (a, g) over the rows s <= pos.
tools::HostTensor Reference(const Shape& s, const tools::HostTensor& q, const tools::HostTensor& kc,
                            const tools::HostTensor& vc, int64_t pos) {
  tools::HostTensor out = ZerosF32({s.dim()});
  const float *K = F32(kc), *V = F32(vc);
  std::vector<double> Q(F32(q), F32(q) + s.dim());
  if (s.rope) Q = Rotated(s, F32(q), pos);
  for (int64_t a = 0; a < s.kv_heads; ++a)
    for (int64_t g = 0; g < s.group; ++g) {
      const int64_t h = a * s.group + g;
      std::vector<double> p(pos + 1);
      double m = -1e300, l = 0;
      for (int64_t t = 0; t <= pos; ++t) {
        double dot = 0;
        for (int64_t d = 0; d < s.head_dim; ++d)
          dot += Q[h * s.head_dim + d] * K[t * s.kv() + a * s.head_dim + d];
        p[t] = dot / std::sqrt(double(s.head_dim));
        m = std::max(m, p[t]);
      }
      for (double& x : p) l += x = std::exp(x - m);
      for (int64_t d = 0; d < s.head_dim; ++d) {
        double o = 0;
        for (int64_t t = 0; t <= pos; ++t) o += p[t] / l * V[t * s.kv() + a * s.head_dim + d];
        F32(out)[h * s.head_dim + d] = float(o);
      }
    }
  return out;
}

struct Case {
  Shape shape;
  std::vector<int64_t> positions;
};

// Every module is compiled before the first runs (a machine without the device, or without
// the compiler, then saves or finds all of them: HEXIR_SAVE_MODULES_DIR / HEXIR_PRECOMPILED_DIR).
void CheckAttention(const std::string& device, const std::vector<Case>& cases, const std::string& flags = "") {
  std::vector<std::string> modules;
  for (const Case& c : cases) {
    const Shape& s = c.shape;
    modules.push_back(CompileOrDie(Program(s), "attention_" + std::to_string(s.kv_heads) + "_" +
                                                   std::to_string(s.group) + "_" + std::to_string(s.head_dim) +
                                                   "_" + std::to_string(s.cache_len) + "_" + s.cache +
                                                   (s.rope ? "_rope" : "") + (flags.empty() ? "" : "_flags"),
                                   device, flags));
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const Shape& s = cases[i].shape;
    auto session = OpenOrDie(modules[i], device);
    // Scores spread over a few units so the softmax is neither flat nor one-hot.
    tools::HostTensor q = RandomF32({s.dim()}, 7, -2, 2), kc = RandomF32({s.cache_len, s.kv()}, 8),
                      vc = RandomF32({s.cache_len, s.kv()}, 9);
    // A narrow cache: the module's inputs are the rounded values, and so are the reference's.
    tools::HostTensor kn = Narrowed(kc, s.cache), vn = Narrowed(vc, s.cache);
    for (int64_t pos : cases[i].positions) {
      INFO("shape " << s.kv_heads << "x" << s.group << "x" << s.head_dim << ", cache " << s.cache_len
                    << ", pos " << pos);
      auto results = CallOrDie(*session, "main", {Tensor(q), Tensor(kn), Tensor(vn), I64Scalar(pos)});
      REQUIRE(results.size() == 1);
      // With the rotation: an ulp of the f32 angle (up to 2^-15 rad at pos 511) between the
      // kernel's powf/cos and the reference's moves q by ~1e-4 of itself.
      if (s.rope)
        RequireClose(results[0].tensor, Reference(s, q, kc, vc, pos), 1e-3, 1e-4);
      else
        RequireClose(results[0].tensor, Reference(s, q, kc, vc, pos), 1e-4, 1e-5);
    }
  }
}

void OddShapes(const std::string& device) {
  CheckAttention(device, {
      // Head size 7 (scalar loads), cache 61 (2 splits on CUDA, the second empty at pos < 31).
      {{2, 3, 7, 61}, {0, 1, 30, 31, 60}},
      // Head size 12 (16-byte loads), 5 query heads per KV head, prime cache 37.
      {{3, 5, 12, 37}, {0, 18, 19, 36}},
  });
}

void LlamaShapes(const std::string& device) {
  CheckAttention(device, {
      // TinyLlama's attention (4 KV heads of 8 query heads, head size 64, cache 512: 8 splits).
      {{4, 8, 64, 512}, {0, 7, 64, 300, 511}},
      // random768's (12 heads, no grouping, cache 256), and a prime cache with 16 query heads.
      {{12, 1, 64, 256}, {5, 255}},
      {{1, 16, 32, 211}, {210, 99}},
  });
}

// f16 and bf16 caches: the kernel widens each element as it loads it (8-byte K loads when the
// head size is a multiple of 4, scalar loads otherwise); several splits and one.
void NarrowCaches(const std::string& device) {
  CheckAttention(device, {
      {{2, 3, 7, 61, "f16"}, {0, 31, 60}},
      {{4, 8, 64, 512, "f16"}, {0, 300, 511}},
      {{3, 5, 12, 37, "bf16"}, {0, 19, 36}},
      {{12, 1, 64, 256, "bf16"}, {5, 255}},
  });
}

// Past one block's limits (CUDA: 16 query heads scored together, 48 KiB of shared memory): 32
// query heads per KV head (two head tiles of 16), 17 (tiles of 9, the last one ragged), and a
// cache of 12000 rows whose 8 splits hold 1500 rows each, scored in windows of 64 rows (online
// softmax).
void LargeGroupsAndLongCaches(const std::string& device) {
  CheckAttention(device, {
      {{2, 32, 64, 300}, {0, 150, 299}},
      {{3, 17, 8, 97}, {0, 50, 96}},
      {{1, 16, 16, 12000}, {730, 5000, 11999}},
      {{2, 17, 12, 6007, "bf16"}, {6006}},
  });
}

// The kernel's windows (CUDA: at most 64 rows staged in shared memory at once) and splits
// at their boundaries: 1, 3, 12 and 32 KV heads, GQA groups 1, 4 and 8; positions 0, 1,
// 63/64/65 (n = 64 fills 8 splits of 8 rows exactly), a split's last row and the next
// (cache 1000: n = 125 and 126 over 8 splits), several windows per split (2048 rows: 256
// rows a split, 4 windows), the whole cache; head sizes 64 and 128 (16-byte loads of f32
// and of f16/bf16), 6 (scalar loads) and 12 with f16 (8-byte loads).
void WindowsAndSplits(const std::string& device) {
  CheckAttention(device, {
      {{1, 1, 64, 512}, {0, 1, 63, 64, 65, 511}},
      {{3, 4, 64, 1000, "f16"}, {0, 124, 125, 126, 999}},
      {{4, 8, 64, 2048, "f16"}, {1, 511, 1023, 2047}},
      {{32, 1, 64, 512}, {1, 63, 511}},
      {{12, 1, 64, 256, "f16"}, {0, 128, 255}},
      {{2, 8, 128, 300, "bf16"}, {0, 150, 299}},
      {{3, 1, 6, 97}, {0, 47, 96}},
      {{3, 4, 12, 130, "f16"}, {0, 64, 129}},
  });
}

// The rotary embedding of q in the group (the importer's form): GQA ratios 1, 4 and 8 (one
// head tile), odd positions, caches that are no multiple of the split count (509: 8 splits
// of 64 with a short last one; 100: 2 splits), f32, f16 and bf16 caches.
void RotaryQ(const std::string& device) {
  Shape tiny{4, 8, 64, 509, "f16", true}, four{2, 4, 16, 100, "f32", true}, one{8, 1, 32, 77, "bf16", true},
      wide{1, 8, 64, 300, "f32", true};
  CheckAttention(device, {
      {tiny, {0, 1, 63, 255, 508}},
      {four, {3, 37, 99}},
      {one, {0, 45, 76}},
      {wide, {151, 299}},
  });
}

// One CPU workgroup (--max-workgroups=1): the whole group is one kernel, lowered to vector
// loops over contiguous cache rows (by default the same loops, a KV head a workgroup)
// (passes/codegen/CPUDecodeAttention.h). Head sizes 48, 64, 80 (16-lane vectors), 12 (4
// lanes) and 7 (1 lane); GQA 4:1 and 1:1; positions 1, 7, 255 (n = 2, 8, 256: the whole
// cache); f32 and f16 caches, with and without q's rotary embedding. bf16 caches and 17 query
// heads per KV head keep the loop lowering (checked too).
void OneWorkgroup(const std::string& device) {
  const std::string flags = "--max-workgroups=1";
  CheckAttention(device, {
      {{2, 4, 48, 256}, {0, 1, 7, 255}},
      {{3, 1, 80, 256, "f16"}, {1, 7, 255}},
      {{2, 4, 80, 256, "f16", true}, {1, 7, 255}},
      {{4, 1, 64, 256, "f32", true}, {1, 7, 255}},
      {{12, 1, 64, 256, "f16"}, {0, 200}},
      {{2, 3, 7, 61}, {0, 1, 60}},
      {{3, 5, 12, 37, "f16", true}, {0, 19, 36}},
      {{3, 5, 12, 37, "bf16"}, {0, 36}},
      {{1, 17, 8, 97}, {0, 96}},
  }, flags);
}

// The CPU vector loops with the KV heads split over workgroups (--max-workgroups=4: the
// largest divisor of the head count within 4 and within the work bound, 2 x heads x group x
// head size x cache rows / 32768): 6 heads as 3 workgroups of 2 with q's rotary embedding
// restricted to each workgroup's heads, 8 as 4 of 2 over an f16 cache, 5 (prime) in one.
void SplitHeads(const std::string& device) {
  CheckAttention(device, {
      {{6, 2, 16, 512, "f32", true}, {0, 37, 511}},
      {{8, 4, 64, 256, "f16", true}, {1, 255}},
      {{5, 1, 32, 64}, {0, 63}},
  }, "--max-workgroups=4");
}

HEXIR_E2E_TEST_ON_DEVICES("decode attention matches f64 loops at odd head sizes and prime cache lengths", OddShapes)
HEXIR_E2E_TEST_ON_DEVICES("decode attention with its KV heads split over CPU workgroups matches f64 loops and "
                          "rotations", SplitHeads)
HEXIR_E2E_TEST_ON_DEVICES("decode attention on one workgroup (CPU vector loops) matches f64 loops at head sizes "
                          "48/64/80, GQA 4:1 and 1:1, f32 and f16 caches", OneWorkgroup)
HEXIR_E2E_TEST_ON_DEVICES("decode attention with q's rotary embedding in its kernel matches f64 rotations and loops",
                          RotaryQ)
HEXIR_E2E_TEST_ON_DEVICES("decode attention matches f64 loops with more than 16 query heads per KV head and "
                          "scores past 48 KiB", LargeGroupsAndLongCaches)
HEXIR_E2E_TEST_ON_DEVICES("decode attention over f16 and bf16 caches matches f64 loops over the rounded values",
                          NarrowCaches)
HEXIR_E2E_TEST_ON_DEVICES("decode attention matches f64 loops at llama shapes and every split filled", LlamaShapes)
HEXIR_E2E_TEST_ON_DEVICES("decode attention matches f64 loops at window and split boundaries, 1 to 32 KV heads, "
                          "GQA 1, 4 and 8", WindowsAndSplits)

}  // namespace
}  // namespace hexir::e2e
