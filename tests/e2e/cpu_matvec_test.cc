// The M = 1 matvec kernels of CPU code generation (passes/codegen/CPUMatvecKernel.h) against
// double-precision C++ references: dense f32 weights (linalg.matvec) and f16 weights (a
// generic widening them), and every GGUF block format through the llama importer's own
// generic (its decode body, BlockDecode.h, marked hexir.block_matvec) on random blocks, with
// the reference dequantizing them as ggml's dequantize_row_<type> does (written here from its
// definitions); the prompt's form (M rows of x, M dynamic) against each row's reference.
// Sizes: N prime and below the kernel's 4-row group, K not a multiple of the vector width,
// dynamic rows; one workgroup (4-row groups and the rows left) and the default
// split (a workgroup per few rows: the weights' row offset comes from the tile), on 0 and 3
// worker threads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/half_float.h"
#include "compiler/importers/llama/GgmlBlocks.h"
#include "tests/e2e/harness.h"
#include "tests/e2e/matvec_sources.h"

namespace hexir::e2e {
namespace {

using compiler::llama::GgmlBlockInfo;
using tools::HostTensor;

const char* kRuns[] = {"--cpu-threads=0", "--cpu-threads=3"};
const char* kSplits[] = {"--max-workgroups=1", ""};

// y = W x with W [n][k] f32 (linalg.matvec) or f16 (a generic widening W).
std::string DenseSource(const std::string& name, int64_t n, int64_t k, bool f16) {
  std::string w = MatrixType(n, k, f16 ? "f16" : "f32"), x = "tensor<" + std::to_string(k) + "xf32>",
              y = "tensor<" + Dim(n) + "xf32>";
  std::string s = "func.func @" + name + "(%w: " + w + ", %x: " + x + ") -> " + y + " {\n" +
                  "  %z = arith.constant 0.0 : f32\n" + Output(n, w, y) + "  %f = linalg.fill ins(%z : f32) outs(%e : " +
                  y + ") -> " + y + "\n";
  if (!f16) return s + "  %y = linalg.matvec ins(%w, %x : " + w + ", " + x + ") outs(%f : " + y + ") -> " + y +
                   "\n  return %y : " + y + "\n}\n";
  return s + "  %y = linalg.generic {indexing_maps = [affine_map<(n, k) -> (k)>, affine_map<(n, k) -> (n, k)>, "
             "affine_map<(n, k) -> (n)>], iterator_types = [\"parallel\", \"reduction\"]} ins(%x, %w : " + x + ", " + w +
             ") outs(%f : " + y + ") {\n  ^bb0(%a: f32, %b: f16, %o: f32):\n    %bf = arith.extf %b : f16 to f32\n"
             "    %p = arith.mulf %a, %bf : f32\n    %s = arith.addf %o, %p : f32\n    linalg.yield %s : f32\n  } -> " +
             y + "\n  return %y : " + y + "\n}\n";
}

// y = W x in double, with the tolerance each element allows: 1e-5 of sum |w x|.
void Reference(const std::vector<double>& w, const HostTensor& x, int64_t n, int64_t k, HostTensor* y,
               std::vector<double>* bound) {
  *y = ZerosF32({n});
  bound->assign(n, 0);
  for (int64_t i = 0; i < n; ++i) {
    double acc = 0, mag = 0;
    for (int64_t j = 0; j < k; ++j) acc += w[i * k + j] * F32(x)[j], mag += std::fabs(w[i * k + j] * F32(x)[j]);
    F32(*y)[i] = float(acc);
    (*bound)[i] = 1e-5 * mag + 1e-6;
  }
}

// x as ggml's quantize_row_q8_0 / q8_1 (x86) makes it for the formats it dots with 8-bit
// activations (the kernel's, CPUMatvecInt8Dot.h): per 32 values d = amax / 127, q = the
// nearest integer (ties to even) to x * (127 / amax), stored f16(d) and f16(d * sum q).
bool TakesInt8Activations(const GgmlBlockInfo& format) {
  std::string name = format.name;
  return name == "q8_0" || name == "q4_0" || name == "q4_1" || name == "q5_0";
}
struct Q8Block {
  double scale, sum;
  int q[32];
};
std::vector<Q8Block> QuantizeQ8(const HostTensor& x) {
  std::vector<Q8Block> blocks(x.dims[0] / 32);
  for (size_t b = 0; b < blocks.size(); ++b) {
    const float* v = F32(x) + 32 * b;
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(v[j]));
    const float d = amax / 127.0f, id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += blocks[b].q[j] = int(std::nearbyint(v[j] * id));
    blocks[b].scale = HalfToFloat(FloatToHalf(d));
    blocks[b].sum = HalfToFloat(FloatToHalf(d * float(sum)));
  }
  return blocks;
}

// y = W a in double for those formats, a the quantized x (values scale * q); with a min m
// (q4_1: w = d q + m) the m * sum(a) part takes the block's stored sum, as ggml's dot does.
// Tolerance 1e-5 of sum |w a|.
void QuantizedReference(const GgmlBlockInfo& format, const HostTensor& w, const HostTensor& x, int64_t n, int64_t k,
                        HostTensor* y, std::vector<double>* bound) {
  std::vector<Q8Block> a = QuantizeQ8(x);
  *y = ZerosF32({n});
  bound->assign(n, 0);
  const bool hasMin = std::string(format.name) == "q4_1";
  for (int64_t i = 0; i < n; ++i) {
    double acc = 0, mag = 0;
    for (int64_t b = 0; b < k / 32; ++b) {
      const uint8_t* block = &w.bytes[i * format.RowBytes(k) + b * format.block_bytes];
      double values[32];
      DequantizeBlock(format, block, values);
      const double min = hasMin ? HalfAt(block + 2) : 0;
      for (int j = 0; j < 32; ++j) {
        acc += (values[j] - min) * a[b].scale * a[b].q[j];
        mag += std::fabs(values[j] * a[b].scale * a[b].q[j]);
      }
      acc += min * a[b].sum;
    }
    F32(*y)[i] = float(acc);
    (*bound)[i] = 1e-5 * mag + 1e-6;
  }
}

// The K-quants (q4_k, q5_k, q6_k) on targets with AVX512BW dot with ggml's q8_K activations
// (CPUMatvecInt8Dot.h): per 256 values s = 127 / amax, q = the nearest integer (ties to even)
// to x * s, d = 1 / s (f32).
bool TakesSuperBlockActivations(const GgmlBlockInfo& format, bool avx512) {
  std::string name = format.name;
  return avx512 && (name == "q4_k" || name == "q5_k" || name == "q6_k");
}
bool HostHasAvx512() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
#else
  return false;
#endif
}

// y = W a in double, a the q8_K-quantized x (values d * q), tolerance 1e-5 of sum |w a|.
void SuperBlockReference(const GgmlBlockInfo& format, const HostTensor& w, const HostTensor& x, int64_t n, int64_t k,
                         HostTensor* y, std::vector<double>* bound) {
  std::vector<double> a(k);
  for (int64_t b = 0; b < k / 256; ++b) {
    const float* v = F32(x) + 256 * b;
    float amax = 0;
    for (int j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(v[j]));
    const float s = amax != 0.0f ? 127.0f / amax : 0.0f, d = amax != 0.0f ? 1.0f / s : 0.0f;
    for (int j = 0; j < 256; ++j) a[256 * b + j] = double(d) * std::nearbyint(v[j] * s);
  }
  *y = ZerosF32({n});
  bound->assign(n, 0);
  for (int64_t i = 0; i < n; ++i) {
    double acc = 0, mag = 0;
    for (int64_t b = 0; b < k / 256; ++b) {
      double values[256];
      DequantizeBlock(format, &w.bytes[i * format.RowBytes(k) + b * format.block_bytes], values);
      for (int j = 0; j < 256; ++j) acc += values[j] * a[256 * b + j], mag += std::fabs(values[j] * a[256 * b + j]);
    }
    F32(*y)[i] = float(acc);
    (*bound)[i] = 1e-5 * mag + 1e-6;
  }
}

// The reference of the kernel a target with (`avx512`) or without AVX512BW runs for `format`.
void FormatReference(const GgmlBlockInfo& format, bool avx512, const HostTensor& w, const HostTensor& x, int64_t n,
                     int64_t k, HostTensor* y, std::vector<double>* bound) {
  if (TakesInt8Activations(format)) return QuantizedReference(format, w, x, n, k, y, bound);
  if (TakesSuperBlockActivations(format, avx512)) return SuperBlockReference(format, w, x, n, k, y, bound);
  std::vector<double> values(n * k);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t b = 0; b < k / format.block_elements; ++b)
      DequantizeBlock(format, &w.bytes[i * format.RowBytes(k) + b * format.block_bytes],
                      &values[i * k + b * format.block_elements]);
  Reference(values, x, n, k, y, bound);
}

void RequireWithin(const HostTensor& actual, const HostTensor& expected, const std::vector<double>& bound) {
  REQUIRE(actual.dims == expected.dims);
  for (size_t i = 0; i < bound.size(); ++i) {
    INFO("row " << i << ": " << F32(actual)[i] << " vs " << F32(expected)[i]);
    REQUIRE(std::fabs(double(F32(actual)[i]) - F32(expected)[i]) <= bound[i]);
  }
}

struct Case {
  std::string function;
  int64_t n, k;
  HostTensor w, x, expected;
  std::vector<double> bound;
};

// Compiles `source` once per split and runs each case on 0 and 3 worker threads.
void RunCases(const std::string& source, const std::string& name, const std::vector<Case>& cases) {
  for (const char* split : kSplits) {
    INFO("hexir-compile " << split);
    std::string module = CompileOrDie(source, name + (*split ? "_one" : "_split"), "cpu", split);
    for (const Case& c : cases)
      for (const char* run : kRuns) {
        INFO(c.function << " (N = " << c.n << ", K = " << c.k << ") " << run);
        auto out = RunOrDie(module, c.function, {c.w, c.x}, 1, "cpu", run);
        RequireWithin(out[0], c.expected, c.bound);
      }
  }
}

TEST_CASE("f32 and f16 matvecs at N prime, K no multiple of the vector width and dynamic rows match a double reference") {
  std::string source;
  std::vector<Case> cases;
  unsigned seed = 1;
  // (n, k, f16 weights, dynamic rows)
  for (auto [n, k, f16, dynamic] : {std::tuple<int64_t, int64_t, bool, bool>{37, 19, false, false}, {3, 100, false, false},
                                    {41, 64, false, true}, {37, 19, true, false}, {13, 203, true, false}, {29, 70, true, true}}) {
    Case c;
    c.function = std::string(f16 ? "f16" : "f32") + "_" + std::to_string(n) + "x" + std::to_string(k) + (dynamic ? "_dyn" : "");
    c.n = n, c.k = k;
    source += DenseSource(c.function, dynamic ? -1 : n, k, f16);
    HostTensor w32 = RandomF32({n, k}, seed++);
    std::vector<double> w(n * k);
    if (f16) {
      c.w.element_type = 2;  // f16
      c.w.dims = {n, k};
      c.w.bytes.resize(2 * n * k);
      for (int64_t i = 0; i < n * k; ++i) {
        uint16_t h = FloatToHalf(F32(w32)[i]);
        std::memcpy(&c.w.bytes[2 * i], &h, 2);
        w[i] = HalfToFloat(h);
      }
    } else {
      c.w = w32;
      for (int64_t i = 0; i < n * k; ++i) w[i] = F32(w32)[i];
    }
    c.x = RandomF32({k}, seed++);
    Reference(w, c.x, n, k, &c.expected, &c.bound);
    cases.push_back(std::move(c));
  }
  RunCases(source, "matvec_dense", cases);
}

TEST_CASE("block-format matvecs of every GGUF type match ggml's dequantization in double") {
  std::string source;
  std::vector<Case> cases;
  unsigned seed = 100;
  for (const GgmlBlockInfo& format : compiler::llama::kGgmlBlockInfos) {
    if (format.is_bf16()) continue;
    // A prime row count past a 4-row group, rows below one group, and dynamic rows; K of
    // 3 blocks (1 for the 256-value K-quants, 2 with dynamic rows).
    const int64_t blocks = format.block_elements == 256 ? 1 : 3;
    for (auto [n, k, dynamic] : {std::tuple<int64_t, int64_t, bool>{37, blocks * format.block_elements, false},
                                 {3, blocks * format.block_elements, false},
                                 {11, 2 * format.block_elements, true}}) {
      Case c;
      c.function = std::string(format.name) + "_" + std::to_string(n) + "x" + std::to_string(k) + (dynamic ? "_dyn" : "");
      c.n = n, c.k = k;
      source += BlockMatvecSource(c.function, format, dynamic ? -1 : n, k);
      c.w = RandomBlocks(format, n, k, seed++);
      c.x = RandomF32({k}, seed++);
      FormatReference(format, HostHasAvx512(), c.w, c.x, n, k, &c.expected, &c.bound);
      cases.push_back(std::move(c));
    }
  }
  RunCases(source, "matvec_blocks", cases);
}

TEST_CASE("block-format matmuls of a dynamic count of rows (the prompt's form) equal each row's matvec in double") {
  // Every format, N = 37 (prime), K = 3 blocks (1 for the K-quants), M = 1, 5 and 0 rows of
  // x through one function: each row quantized on its own for the 8-bit-activation formats.
  std::string source;
  struct RowsCase {
    std::string function;
    const GgmlBlockInfo* format;
    int64_t k;
    HostTensor w;
  };
  std::vector<RowsCase> cases;
  const int64_t n = 37;
  unsigned seed = 700;
  for (const GgmlBlockInfo& format : compiler::llama::kGgmlBlockInfos) {
    if (format.is_bf16()) continue;
    const int64_t k = (format.block_elements == 256 ? 1 : 3) * format.block_elements;
    RowsCase c{std::string(format.name) + "_rows", &format, k, RandomBlocks(format, n, k, seed++)};
    source += BlockMatmulRowsSource(c.function, format, n, k);
    cases.push_back(std::move(c));
  }
  for (const char* split : kSplits) {
    INFO("hexir-compile " << split);
    std::string module = CompileOrDie(source, std::string("matmul_block_rows") + (*split ? "_one" : "_split"), "cpu", split);
    for (const RowsCase& c : cases)
      for (int64_t m : {1, 5, 0}) {
        INFO(c.function << " (M = " << m << ")");
        HostTensor x = RandomF32({m, c.k}, seed++, -2, 2);
        HostTensor expected = ZerosF32({m, n});
        std::vector<double> bound;
        for (int64_t r = 0; r < m; ++r) {
          HostTensor row = ZerosF32({c.k}), y;
          std::memcpy(F32(row), F32(x) + r * c.k, 4 * c.k);
          std::vector<double> rowBound;
          FormatReference(*c.format, HostHasAvx512(), c.w, row, n, c.k, &y, &rowBound);
          std::memcpy(F32(expected) + r * n, F32(y), 4 * n);
          bound.insert(bound.end(), rowBound.begin(), rowBound.end());
        }
        for (const char* run : kRuns) {
          INFO(run);
          auto out = RunOrDie(module, c.function, {c.w, x}, 1, "cpu", run);
          RequireWithin(out[0], expected, bound);
        }
      }
  }
}

TEST_CASE("8-bit-activation matvecs (q8_0, q4_0, q4_1, q5_0; the K-quants on AVX-512) equal ggml's quantized dot in double on the host, AVX-512 with and without VNNI, AVX2 and baseline x86-64") {
  // K = 25 blocks (odd: AVX-512 dots four blocks a step where the format has no min, two
  // a step otherwise, then the last alone), 24 (even) and 27 (six steps of four, one of two,
  // one block),
  // 7 and 8 super-blocks for the K-quants, N = 67 (no multiple of the 4-row group); x has an
  // all-zero block (scale 0) and a block where one large value leaves the others 0 or +-1.
  const int64_t n = 67;
  std::string source;
  struct FormatCase {
    const GgmlBlockInfo* format;
    Case c;
  };
  std::vector<FormatCase> cases;
  unsigned seed = 500;
  for (const GgmlBlockInfo& format : compiler::llama::kGgmlBlockInfos) {
    if (!TakesInt8Activations(format) && !TakesSuperBlockActivations(format, true)) continue;
    const int64_t be = format.block_elements;
    for (int64_t blocks : be == 256 ? std::vector<int64_t>{7, 8} : std::vector<int64_t>{25, 24, 27}) {
      const int64_t k = blocks * be;
      Case c;
      c.function = std::string(format.name) + "_int8_" + std::to_string(blocks);
      c.n = n, c.k = k;
      source += BlockMatvecSource(c.function, format, n, k);
      c.w = RandomBlocks(format, n, k, seed++);
      c.x = RandomF32({k}, seed++, -3, 3);
      const int64_t zero = (be == 256 ? 1 : 3) * be, spike = (be == 256 ? 4 : 7) * be;
      for (int64_t j = 0; j < be; ++j) F32(c.x)[zero + j] = 0, F32(c.x)[spike + j] *= 0.01f;
      F32(c.x)[spike + 5] = 250;
      cases.push_back({&format, std::move(c)});
    }
  }
  // The host's kernels (AVX-512 where it has it), AVX2's and AVX-512's with and without VNNI
  // (where the host runs them) and a baseline x86-64 target's, one workgroup and split; the
  // K-quants take q8_K activations where the target has AVX512BW, f32 x elsewhere.
  struct Target {
    const char* name;
    const char* flags;
    bool avx512;
  };
  std::vector<Target> targets = {{"host_one", "--max-workgroups=1", HostHasAvx512()},
                                 {"host_split", "", HostHasAvx512()},
                                 {"x86_64_one", "--cpu=x86-64 --max-workgroups=1", false},
                                 {"x86_64_split", "--cpu=x86-64", false}};
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    targets.push_back({"x86_64_v3_one", "--cpu=x86-64-v3 --max-workgroups=1", false});
  // AVX-512 without VNNI (vpmaddubsw + vpmaddwd) and with VNNI but no VBMI (vpdpbusd; the
  // nibble pairs' byte shuffle without vpermb).
  if (__builtin_cpu_supports("avx512bw"))
    targets.push_back({"skylake_avx512_one", "--cpu=skylake-avx512 --max-workgroups=1", true});
  if (__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni"))
    targets.push_back({"cascadelake_one", "--cpu=cascadelake --max-workgroups=1", true});
#endif
  for (const Target& target : targets) {
    INFO("hexir-compile " << target.flags);
    std::string module = CompileOrDie(source, std::string("matvec_int8_") + target.name, "cpu", target.flags);
    for (FormatCase& fc : cases) {
      Case& c = fc.c;
      INFO(c.function);
      FormatReference(*fc.format, target.avx512, c.w, c.x, n, c.k, &c.expected, &c.bound);
      auto out = RunOrDie(module, c.function, {c.w, c.x}, 1, "cpu", "--cpu-threads=0");
      RequireWithin(out[0], c.expected, c.bound);
    }
  }
}

}  // namespace
}  // namespace hexir::e2e
