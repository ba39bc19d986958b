// A decode step's KV-cache writes as the llama importer emits them: a GEMV row (k = W_k x,
// v = W_v x) written into a cache at a run-time position by an in-place insert_slice
// (passes/dispatch/InPlaceUpdates.h), the K row rotated first (pairs (2i, 2i + 1), angle
// pos * freq) and both rounded to the cache's element type. Results against f64 loops: the
// written row, and every other row of both caches unchanged (an update writes only its slot),
// at awkward widths (N = 31, 67, 257, 769 and 256; odd N leaves the last element unpaired),
// K up to 4099, f32 and f16 caches, positions 0, inner and last. On CUDA every kernel of the
// module spreads over threads (the row writes used to run on one thread:
// codegen::IsSlotWriteBack), and the V GEMV writes its row straight into the cache slot (one
// dispatch: passes/dispatch/CacheRowProducers.h); the [cuda] cases compile everywhere and run
// on a GPU.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "base/half_float.h"
#include "hal/element_type.h"
#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

struct Shape {
  int64_t n, k, rows;          // row width, GEMV depth, cache rows
  std::string cache = "f32";  // the caches' element type: f32 or f16
};

std::string T(const std::vector<int64_t>& dims, const std::string& element = "f32") {
  std::string s = "tensor<";
  for (int64_t d : dims) s += std::to_string(d) + "x";
  return s + element + ">";
}

// Rounds an f32 value to the cache element in MLIR (`%name = ...` from `%value`).
std::string Narrow(const std::string& name, const std::string& value, const std::string& cache) {
  return cache == "f32" ? "      " + name + " = arith.addf " + value + ", %zero : f32\n"
                        : "      " + name + " = arith.truncf " + value + " : f32 to " + cache + "\n";
}

// The step: caches made owned by a kernel of the program (scaled by %s, 1 at run time: an
// argument cannot be updated in place), then k and v as matvec generics (the importer's form),
// the K row rotated, both rows rounded and inserted at %pos.
std::string Program(const Shape& s) {
  const std::string n = std::to_string(s.n), row = T({1, s.n}), narrowRow = T({1, s.n}, s.cache),
                    cache = T({s.rows, s.n}, s.cache), vec = T({s.n}), last = std::to_string(s.n - 1);
  const std::string id2 = "affine_map<(i, j) -> (i, j)>";
  std::string p = "func.func @main(%x: " + T({s.k}) + ", %w: " + T({s.n, s.k}) + ", %wv: " + T({s.n, s.k}) +
                  ", %kin: " + cache + ", %vin: " + cache + ", %s: f32, %pos: i64) -> (" + cache + ", " + cache + ") {\n"
                  "  %zero = arith.constant 0.0 : f32\n";
  for (const char* c : {"k", "v"}) {
    const std::string C = c;
    p += "  %e" + C + "c = tensor.empty() : " + cache + "\n";
    p += "  %" + C + "c = linalg.generic {indexing_maps = [" + id2 + ", " + id2 + "], iterator_types = [\"parallel\", \"parallel\"]} "
         "ins(%" + C + "in : " + cache + ") outs(%e" + C + "c : " + cache + ") {\n    ^bb0(%a: " + s.cache + ", %o: " + s.cache + "):\n" +
         (s.cache == "f32" ? "      %y = arith.mulf %a, %s : f32\n      linalg.yield %y : f32\n"
                           : "      %a32 = arith.extf %a : " + s.cache + " to f32\n      %m = arith.mulf %a32, %s : f32\n" +
                                 Narrow("%y", "%m", s.cache) + "      linalg.yield %y : " + s.cache + "\n") +
         "    } -> " + cache + "\n";
    p += "  %e" + C + " = tensor.empty() : " + vec + "\n";
    p += "  %f" + C + " = linalg.fill ins(%zero : f32) outs(%e" + C + " : " + vec + ") -> " + vec + "\n";
    p += "  %" + C + " = linalg.generic {indexing_maps = [affine_map<(n, k) -> (k)>, affine_map<(n, k) -> (n, k)>, "
         "affine_map<(n, k) -> (n)>], iterator_types = [\"parallel\", \"reduction\"]} ins(%x, " +
         (C == "k" ? "%w" : "%wv") + " : " + T({s.k}) + ", " + T({s.n, s.k}) + ") outs(%f" + C + " : " + vec + ") {\n"
         "    ^bb0(%a: f32, %b: f32, %acc: f32):\n      %m = arith.mulf %a, %b : f32\n      %r = arith.addf %acc, %m : f32\n"
         "      linalg.yield %r : f32\n    } -> " + vec + "\n";
    if (C == "k" || s.cache == "f32")
      p += "  %" + C + "row = tensor.expand_shape %" + C + " [[0, 1]] output_shape [1, " + n + "] : " + vec + " into " + row + "\n";
  }
  // K: x_j cos - x_pair sin for even j, x_pair sin + x_j cos for odd j (pair = j xor 1, the
  // last element of an odd row paired with itself); freq = 1 / 100^((j - j % 2) / N).
  p += "  %ekr = tensor.empty() : " + narrowRow + "\n";
  p += "  %kr = linalg.generic {indexing_maps = [" + id2 + ", " + id2 + "], iterator_types = [\"parallel\", \"parallel\"]} "
       "ins(%krow : " + row + ") outs(%ekr : " + narrowRow + ") {\n    ^bb0(%a: f32, %o: " + s.cache + "):\n"
       "      %i = linalg.index 0 : index\n      %j = linalg.index 1 : index\n"
       "      %c0 = arith.constant 0 : index\n      %c1 = arith.constant 1 : index\n      %c2 = arith.constant 2 : index\n"
       "      %cl = arith.constant " + last + " : index\n      %px = arith.xori %j, %c1 : index\n"
       "      %pj = arith.minui %px, %cl : index\n      %b = tensor.extract %krow[%i, %pj] : " + row + "\n"
       "      %par = arith.remui %j, %c2 : index\n      %evn = arith.subi %j, %par : index\n"
       "      %evi = arith.index_cast %evn : index to i64\n      %evf = arith.sitofp %evi : i64 to f32\n"
       "      %nf = arith.constant " + n + ".0 : f32\n      %ratio = arith.divf %evf, %nf : f32\n"
       "      %base = arith.constant 100.0 : f32\n      %pw = math.powf %base, %ratio : f32\n"
       "      %one = arith.constant 1.0 : f32\n      %freq = arith.divf %one, %pw : f32\n"
       "      %posf = arith.sitofp %pos : i64 to f32\n      %ang = arith.mulf %posf, %freq : f32\n"
       "      %cs = math.cos %ang : f32\n      %sn = math.sin %ang : f32\n      %even = arith.cmpi eq, %par, %c0 : index\n"
       "      %t1 = arith.mulf %a, %cs : f32\n      %t2 = arith.mulf %b, %sn : f32\n      %e = arith.subf %t1, %t2 : f32\n"
       "      %d = arith.addf %t2, %t1 : f32\n      %r = arith.select %even, %e, %d : f32\n" +
       Narrow("%rn", "%r", s.cache) + "      linalg.yield %rn : " + s.cache + "\n    } -> " + narrowRow + "\n";
  // V as the importer writes it: rounded as a vector (f16 cache), then reshaped to the row.
  std::string vsource = "%vrow";
  if (s.cache != "f32") {
    const std::string narrowVec = T({s.n}, s.cache), id1 = "affine_map<(n) -> (n)>";
    p += "  %evr = tensor.empty() : " + narrowVec + "\n";
    p += "  %vr = linalg.generic {indexing_maps = [" + id1 + ", " + id1 + "], iterator_types = [\"parallel\"]} "
         "ins(%v : " + vec + ") outs(%evr : " + narrowVec + ") {\n    ^bb0(%a: f32, %o: " + s.cache + "):\n" +
         Narrow("%rn", "%a", s.cache) + "      linalg.yield %rn : " + s.cache + "\n    } -> " + narrowVec + "\n";
    p += "  %vrn = tensor.expand_shape %vr [[0, 1]] output_shape [1, " + n + "] : " + narrowVec + " into " + narrowRow + "\n";
    vsource = "%vrn";
  }
  p += "  %p = arith.index_cast %pos : i64 to index\n";
  p += "  %k2 = tensor.insert_slice %kr into %kc[%p, 0] [1, " + n + "] [1, 1] : " + narrowRow + " into " + cache + "\n";
  p += "  %v2 = tensor.insert_slice " + vsource + " into %vc[%p, 0] [1, " + n + "] [1, 1] : " + narrowRow + " into " + cache + "\n";
  p += "  return %k2, %v2 : " + cache + ", " + cache + "\n}\n";
  return p;
}

// `values` as a tensor of the cache's element type (f16: each rounded once from f64 via f32).
tools::HostTensor CacheTensor(const std::vector<double>& values, int64_t rows, int64_t n, const std::string& cache) {
  tools::HostTensor t;
  t.dims = {rows, n};
  if (cache == "f32") {
    t = ZerosF32({rows, n});
    for (size_t i = 0; i < values.size(); ++i) F32(t)[i] = float(values[i]);
    return t;
  }
  t.element_type = static_cast<int32_t>(hal::ElementType::kF16);
  t.bytes.resize(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t bits = FloatToHalf(float(values[i]));
    std::memcpy(&t.bytes[2 * i], &bits, 2);
  }
  return t;
}

// Random cache contents, already representable in the cache's element type.
std::vector<double> RandomCache(const Shape& s, unsigned seed) {
  tools::HostTensor r = RandomF32({s.rows, s.n}, seed);
  std::vector<double> v(F32(r), F32(r) + s.rows * s.n);
  if (s.cache != "f32")
    for (double& x : v) x = HalfToFloat(FloatToHalf(float(x)));
  return v;
}

// Every kernel of the CUDA module runs more than one thread a block, save those writing one
// element (a position, a flag): hexir-dump's cuda.block_size and cost attributes.
void RequireEveryKernelSpread(const std::string& module) {
  CommandResult r = RunCommand("tools/hexir-dump/hexir-dump --no-code " + module + " 2>&1");
  REQUIRE(r.exit_code == 0);
  size_t kernels = 0;
  for (size_t at = r.output.find("attr cuda.block_size."); at != std::string::npos;
       at = r.output.find("attr cuda.block_size.", at + 1)) {
    ++kernels;
    std::string line = r.output.substr(at, r.output.find('\n', at) - at);
    INFO(line);
    CHECK(line.find("= \"1,1,1\"") == std::string::npos);
  }
  CHECK(kernels >= 4);  // the two cache copies (one kernel), the two GEMVs, the K row, the V row
}

// Dispatch call sites of the module (hexir-dump's disassembly): the two cache scalings, the
// K GEMV, the K row (rotation in its kernel) and the V GEMV writing its row straight into the
// slot (passes/dispatch/CacheRowProducers.h): 5, where a V GEMV of its own would make 6.
void RequireDispatches(const std::string& module, int expected) {
  CommandResult r = RunCommand("tools/hexir-dump/hexir-dump " + module + " 2>&1");
  REQUIRE(r.exit_code == 0);
  int dispatches = 0;
  for (size_t at = r.output.find("'hal.command_buffer.dispatch"); at != std::string::npos;
       at = r.output.find("'hal.command_buffer.dispatch", at + 1))
    ++dispatches;
  CHECK(dispatches == expected);
}

void CheckCacheRows(const std::string& device, const std::vector<Shape>& shapes) {
  std::vector<std::string> modules;
  for (const Shape& s : shapes) {
    modules.push_back(CompileOrDie(Program(s), "cache_row_" + std::to_string(s.n) + "_" + std::to_string(s.k) + "_" +
                                                   std::to_string(s.rows) + "_" + s.cache,
                                   device));
    RequireDispatches(modules.back(), 5);
    if (device == "cuda") RequireEveryKernelSpread(modules.back());
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    auto session = OpenOrDie(modules[i], device);
    tools::HostTensor x = RandomF32({s.k}, 1), wk = RandomF32({s.n, s.k}, 2), wv = RandomF32({s.n, s.k}, 3);
    std::vector<double> kin = RandomCache(s, 4), vin = RandomCache(s, 5);
    // f64 GEMVs.
    std::vector<double> k(s.n), v(s.n);
    for (int64_t r = 0; r < s.n; ++r)
      for (int64_t c = 0; c < s.k; ++c) {
        k[r] += double(F32(x)[c]) * F32(wk)[r * s.k + c];
        v[r] += double(F32(x)[c]) * F32(wv)[r * s.k + c];
      }
    for (int64_t pos : {int64_t(0), s.rows / 2 + 1, s.rows - 1}) {
      INFO("N " << s.n << ", K " << s.k << ", rows " << s.rows << ", " << s.cache << " cache, pos " << pos);
      std::vector<double> kexp = kin, vexp = vin;
      for (int64_t j = 0; j < s.n; ++j) {
        // The angle is the f32 product the program forms (the specification); the rotation exact.
        const float freq = 1.0f / std::pow(100.0f, float(j - j % 2) / float(s.n));
        const double angle = double(float(pos) * freq);
        const double a = k[j], b = k[std::min<int64_t>(j ^ 1, s.n - 1)];
        kexp[pos * s.n + j] = j % 2 == 0 ? a * std::cos(angle) - b * std::sin(angle)
                                         : b * std::sin(angle) + a * std::cos(angle);
        vexp[pos * s.n + j] = v[j];
      }
      auto results = CallOrDie(*session, "main",
                               {Tensor(x), Tensor(wk), Tensor(wv), Tensor(CacheTensor(kin, s.rows, s.n, s.cache)),
                                Tensor(CacheTensor(vin, s.rows, s.n, s.cache)), F32Scalar(1.0), I64Scalar(pos)});
      REQUIRE(results.size() == 2);
      // f32 accumulation over K terms of |x w| <= 1; an f16 cache: one rounding (2^-11) apart.
      const double rtol = s.cache == "f32" ? 1e-4 : 2e-3, atol = 1e-5 * double(s.k);
      RequireClose(results[0].tensor, CacheTensor(kexp, s.rows, s.n, s.cache), rtol, atol);
      RequireClose(results[1].tensor, CacheTensor(vexp, s.rows, s.n, s.cache), rtol, atol);
    }
  }
}

void AwkwardWidths(const std::string& device) {
  CheckCacheRows(device, {
      {67, 4099, 13},
      {257, 129, 5},
      {31, 7, 3},
      {769, 768, 11, "f16"},
      {67, 1031, 7, "f16"},
  });
}

void LlamaWidths(const std::string& device) {
  CheckCacheRows(device, {
      {256, 2048, 512},         // TinyLlama's K/V rows (4 KV heads of 64), f32 cache
      {256, 2048, 512, "f16"},  // and its f16 cache
      {768, 768, 256, "f16"},   // random768's
  });
}

HEXIR_E2E_TEST_ON_DEVICES("cache rows (a GEMV row, rotated for K, rounded, written in place at pos) match f64 loops "
                          "at awkward widths", AwkwardWidths)
HEXIR_E2E_TEST_ON_DEVICES("cache rows match f64 loops at the llama shapes, the other rows unchanged", LlamaWidths)

}  // namespace
}  // namespace hexir::e2e
