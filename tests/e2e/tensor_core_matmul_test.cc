// f16/bf16 (and f32) matmuls accumulating in f32, with fused epilogues, against f64 loops over
// the same rounded inputs. On CUDA they run on the tensor-core kernels (passes/codegen/CUDAMatmul.h):
// for sm_90 (the default chip) aligned rows take the wgmma kernel (128x64, 128x128 and 128x256
// tiles, B [K][N] N-major and [N][K] K-major), the rest the mma.sync kernel; every case also
// runs compiled for sm_80 (mma.sync only; the driver JIT-compiles its PTX). Sizes are odd,
// prime and not multiples of any tile, rows of unaligned length take the plain-load path, M is
// also dynamic (one module called at several M) and B is also stored [N][K] and batched; shapes
// with few output tiles split K across the blocks of a cluster (wgmma).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

#include "base/half_float.h"
#include "hal/element_type.h"
#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;

struct Case {
  std::string type;       // "bf16" or "f16"
  int64_t batch = 0;      // 0: no batch dim
  int64_t m, k, n;
  bool dynamicM = false;
  bool transposedB = false;  // B [N][K]
  // Epilogue: "" (f32 result), "bias_relu_bf16" (+ bias[n], relu, rounded to bf16),
  // "residual" (+ R[m][n], f32).
  std::string epilogue;
  // A's element type when it differs from `type` (B's): "f32" activations by f16/bf16
  // weights, which CUDA-only modules read rounded to B's type (hexir-cast-matmul-activations).
  std::string aType = "";
  const std::string& lhsType() const { return aType.empty() ? type : aType; }
};

std::string Dims(const std::vector<int64_t>& dims, const std::string& element) {
  std::string s = "tensor<";
  for (int64_t d : dims) s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return s + element + ">";
}

std::vector<int64_t> WithBatch(const Case& c, int64_t x, int64_t y) {
  if (c.batch) return {c.batch, x, y};
  return {x, y};
}

std::string Program(const Case& c) {
  const int64_t m = c.dynamicM ? -1 : c.m;
  const std::string a = Dims(WithBatch(c, m, c.k), c.lhsType()),
                    b = Dims(WithBatch(c, c.transposedB ? c.n : c.k, c.transposedB ? c.k : c.n), c.type),
                    acc = Dims(WithBatch(c, m, c.n), "f32");
  std::string p = "func.func @main(%a: " + a + ", %b: " + b;
  if (c.epilogue == "bias_relu_bf16") p += ", %bias: " + Dims({c.n}, "f32");
  if (c.epilogue == "residual") p += ", %r: " + acc;
  const std::string out = c.epilogue == "bias_relu_bf16" ? Dims(WithBatch(c, m, c.n), "bf16") : acc;
  p += ") -> " + out + " {\n  %zero = arith.constant 0.0 : f32\n";
  if (c.dynamicM) {
    p += "  %c0 = arith.constant 0 : index\n  %m = tensor.dim %a, %c0 : " + a + "\n";
    p += "  %e = tensor.empty(%m) : " + acc + "\n";
  } else {
    p += "  %e = tensor.empty() : " + acc + "\n";
  }
  p += "  %f = linalg.fill ins(%zero : f32) outs(%e : " + acc + ") -> " + acc + "\n";
  if (c.transposedB) {  // a matmul-shaped generic reading B[n][k]
    const std::string pre = c.batch ? "bb, " : "";
    p += "  %c = linalg.generic {indexing_maps = [affine_map<(" + pre + "i, j, k) -> (" + pre + "i, k)>, affine_map<(" +
         pre + "i, j, k) -> (" + pre + "j, k)>, affine_map<(" + pre + "i, j, k) -> (" + pre + "i, j)>], iterator_types = [" +
         (c.batch ? "\"parallel\", " : "") + "\"parallel\", \"parallel\", \"reduction\"]} ins(%a, %b : " + a + ", " + b +
         ") outs(%f : " + acc + ") {\n  ^bb0(%x: " + c.lhsType() + ", %y: " + c.type + ", %s: f32):\n" +
         // f32 operands are used as they are (an `x + 0` would make the body no contraction).
         (c.lhsType() == "f32" ? "" : "    %xf = arith.extf %x : " + c.lhsType() + " to f32\n") +
         (c.type == "f32" ? "" : "    %yf = arith.extf %y : " + c.type + " to f32\n") +
         "    %pr = arith.mulf " + (c.lhsType() == "f32" ? "%x" : "%xf") + ", " + (c.type == "f32" ? "%y" : "%yf") +
         " : f32\n" +
         "    %t = arith.addf %s, %pr : f32\n    linalg.yield %t : f32\n  } -> " + acc + "\n";
  } else {
    p += std::string("  %c = linalg.") + (c.batch ? "batch_matmul" : "matmul") + " ins(%a, %b : " + a + ", " + b +
         ") outs(%f : " + acc + ") -> " + acc + "\n";
  }
  const std::string pre = c.batch ? "bb, " : "";
  const std::string id = "affine_map<(" + pre + "i, j) -> (" + pre + "i, j)>";
  const std::string par = c.batch ? "\"parallel\", \"parallel\", \"parallel\"" : "\"parallel\", \"parallel\"";
  if (c.epilogue == "bias_relu_bf16") {
    p += "  %o = tensor.empty() : " + out + "\n";
    p += "  %y = linalg.generic {indexing_maps = [" + id + ", affine_map<(" + pre + "i, j) -> (j)>, " + id +
         "], iterator_types = [" + par + "]} ins(%c, %bias : " + acc + ", " + Dims({c.n}, "f32") + ") outs(%o : " + out +
         ") {\n  ^bb0(%x: f32, %v: f32, %u: bf16):\n    %s = arith.addf %x, %v : f32\n"
         "    %z = arith.maximumf %s, %zero : f32\n    %t = arith.truncf %z : f32 to bf16\n    linalg.yield %t : bf16\n  } -> " +
         out + "\n  return %y : " + out + "\n}\n";
  } else if (c.epilogue == "residual") {
    p += "  %y = linalg.generic {indexing_maps = [" + id + ", " + id + ", " + id + "], iterator_types = [" + par +
         "]} ins(%c, %r : " + acc + ", " + acc + ") outs(%e : " + acc +
         ") {\n  ^bb0(%x: f32, %v: f32, %u: f32):\n    %s = arith.addf %x, %v : f32\n    linalg.yield %s : f32\n  } -> " +
         acc + "\n  return %y : " + acc + "\n}\n";
  } else {
    p += "  return %c : " + acc + "\n}\n";
  }
  return p;
}

// Random values in [-1, 1] rounded to the operand type ("bf16", "f16" or "f32"); `values`
// gets them as floats.
HostTensor RandomLow(const std::string& type, const std::vector<int64_t>& dims, unsigned seed,
                     std::vector<float>& values) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  if (type == "f32") {
    HostTensor f = ZerosF32(dims);
    values.resize(f.bytes.size() / 4);
    for (size_t i = 0; i < values.size(); ++i) F32(f)[i] = values[i] = dist(rng);
    return f;
  }
  HostTensor t;
  t.element_type = static_cast<int32_t>(type == "bf16" ? hal::ElementType::kBF16 : hal::ElementType::kF16);
  t.dims = dims;
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  t.bytes.resize(count * 2);
  values.resize(count);
  for (int64_t i = 0; i < count; ++i) {
    float x = dist(rng);
    uint16_t bits = type == "bf16" ? FloatToBF16(x) : FloatToHalf(x);
    values[i] = type == "bf16" ? BF16ToFloat(bits) : HalfToFloat(bits);
    std::memcpy(&t.bytes[2 * i], &bits, 2);
  }
  return t;
}

HostTensor BF16ToF32Tensor(const HostTensor& t) {
  REQUIRE(t.element_type == static_cast<int32_t>(hal::ElementType::kBF16));
  HostTensor f = ZerosF32(t.dims);
  for (size_t i = 0; i < t.bytes.size() / 2; ++i) {
    uint16_t bits;
    std::memcpy(&bits, &t.bytes[2 * i], 2);
    F32(f)[i] = BF16ToFloat(bits);
  }
  return f;
}

// `tf32`: the products rounded to TF32 (hexir-compile --allow-tf32): each operand keeps 10
// of f32's 23 mantissa bits (round to nearest: relative error <= 2^-11), so element (i, j)
// may differ from the exact sum by (2 * 2^-11 + 2^-22) sum_k |a_ik b_kj| plus f32
// accumulation (K 2^-24 of the same sum); the check allows 2^-10 (1 + K 2^-14) of it.
void Check(const Case& c, const std::string& device, tools::Session& session, int64_t m, bool tf32 = false) {
  INFO(c.type << " batch " << c.batch << " M " << m << " K " << c.k << " N " << c.n
               << (c.transposedB ? " B[N][K]" : " B[K][N]") << " epilogue '" << c.epilogue << "'");
  const int64_t batches = c.batch ? c.batch : 1;
  std::vector<float> av, bv;
  HostTensor a = RandomLow(c.lhsType(), WithBatch(c, m, c.k), 11 + m, av);
  // f32 A by f16/bf16 B on CUDA: the tensor cores read A rounded to B's type.
  if (c.lhsType() != c.type && device == "cuda")
    for (float& x : av) x = c.type == "bf16" ? BF16ToFloat(FloatToBF16(x)) : HalfToFloat(FloatToHalf(x));
  HostTensor b = RandomLow(c.type, WithBatch(c, c.transposedB ? c.n : c.k, c.transposedB ? c.k : c.n), 12, bv);
  std::vector<tools::HostValue> inputs = {Tensor(a), Tensor(b)};
  HostTensor extra;
  if (c.epilogue == "bias_relu_bf16") extra = RandomF32({c.n}, 13);
  if (c.epilogue == "residual") extra = RandomF32(WithBatch(c, m, c.n), 14);
  if (!c.epilogue.empty()) inputs.push_back(Tensor(extra));
  HostTensor expected = ZerosF32(WithBatch(c, m, c.n));
  std::vector<double> magnitude(batches * m * c.n);  // sum_k |a_ik b_kj|
  for (int64_t bb = 0; bb < batches; ++bb)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = 0, abs = 0;
        for (int64_t k = 0; k < c.k; ++k) {
          double x = av[(bb * m + i) * c.k + k];
          double y = c.transposedB ? bv[(bb * c.n + j) * c.k + k] : bv[(bb * c.k + k) * c.n + j];
          sum += x * y;
          abs += std::fabs(x * y);
        }
        const int64_t at = (bb * m + i) * c.n + j;
        magnitude[at] = abs;
        if (c.epilogue == "bias_relu_bf16") sum = std::max(0.0, sum + F32(extra)[j]);
        if (c.epilogue == "residual") sum += F32(extra)[at];
        F32(expected)[at] = float(sum);
      }
  auto results = CallOrDie(session, "main", inputs);
  REQUIRE(results.size() == 1);
  if (tf32) {
    REQUIRE(c.epilogue != "bias_relu_bf16");
    const HostTensor& got = results[0].tensor;
    REQUIRE(got.dims == expected.dims);
    const double bound = std::ldexp(1.0, -10) * (1 + c.k * std::ldexp(1.0, -14));
    for (size_t e = 0; e < magnitude.size(); ++e) {
      INFO("element " << e << ": " << F32(got)[e] << " vs " << F32(expected)[e] << ", sum |ab| " << magnitude[e]);
      REQUIRE(std::fabs(double(F32(got)[e]) - F32(expected)[e]) <= bound * magnitude[e] + 1e-6);
    }
  } else if (c.epilogue == "bias_relu_bf16")  // rounded to bf16: 8 significant bits
    RequireClose(BF16ToF32Tensor(results[0].tensor), expected, 1.0 / 128, 1e-3);
  else  // f32 accumulation over K <= 1096 terms of magnitude <= 1
    RequireClose(results[0].tensor, expected, 1e-4, 2e-4);
}

// Each case compiled for the default chip, and on CUDA also for sm_80 (the mma.sync kernel
// where sm_90 picks wgmma); every module checked at each of its M.
// `tf32`: every module compiled with --allow-tf32 and checked with the TF32 bound.
void CheckCases(const std::string& device, const std::string& name, const std::vector<Case>& cases,
                const std::vector<std::vector<int64_t>>& dynamicMs, bool tf32 = false) {
  struct Variant {
    std::string suffix, flags;
  };
  const std::string tf32Flag = tf32 ? " --allow-tf32" : "";
  std::vector<Variant> variants = {{"", tf32Flag}};
  if (device == "cuda") variants.push_back({"_sm80", "--cuda-chip=sm_80" + tf32Flag});
  std::vector<std::pair<size_t, std::string>> modules;
  for (const Variant& v : variants)
    for (size_t i = 0; i < cases.size(); ++i)
      modules.emplace_back(i, CompileOrDie(Program(cases[i]), name + v.suffix + "_" + std::to_string(i),
                                           device, v.flags));
  for (const auto& [i, module] : modules) {
    INFO("module " << module);
    auto session = OpenOrDie(module, device);
    if (cases[i].dynamicM) {
      for (int64_t m : dynamicMs[i]) Check(cases[i], device, *session, m, tf32);
    } else {
      Check(cases[i], device, *session, cases[i].m, tf32);
    }
  }
}

void OddSizes(const std::string& device) {
  CheckCases(device, "tc_matmul_odd",
             {
                 // Aligned rows (cp.async), M and N not multiples of a tile, bias + relu -> bf16.
                 {"bf16", 0, 197, 136, 264, false, false, "bias_relu_bf16"},
                 // Prime M, K, N (plain loads; every edge partial), f16.
                 {"f16", 0, 131, 97, 89, false, false, ""},
                 // Batched, B [N][K], odd M.
                 {"bf16", 3, 70, 64, 72, false, true, ""},
                 // Enough tiles for 128x64 tiles, 16 k tiles (every pipeline stage reused).
                 {"bf16", 0, 640, 512, 1536, false, false, ""},
                 // wgmma 128x256 tiles (10 x 14 = 140), B [K][N] N-major, K = 4 * 64 + 8
                 // (a last k tile of one chunk), M and N past a tile edge, a residual.
                 {"bf16", 0, 1200, 264, 3400, false, false, "residual"},
                 // wgmma 128x128 tiles (9 x 24), B [N][K] K-major, f16, K = 3 * 64 + 8.
                 {"f16", 0, 1100, 200, 3000, false, true, ""},
             },
             {{}, {}, {}, {}, {}, {}});
}

// Prefill-shaped: too few output tiles to fill the SMs, so on sm_90 the wgmma kernel splits K
// over a cluster of blocks whose f32 partial tiles are summed through distributed shared memory
// (CUDAMatmul.h). Each case picks 128x64 tiles; the k tiles do not divide evenly among the blocks.
void SplitK(const std::string& device) {
  CheckCases(device, "tc_matmul_split_k",
             {
                 // 9 tiles x 8 blocks, 18 k tiles (2 or 3 a block, the last one chunk short
                 // of 64), M and N past a tile edge, bias + relu -> bf16.
                 {"bf16", 0, 100, 1096, 520, false, false, "bias_relu_bf16"},
                 // 8 tiles x 4 blocks, 13 k tiles, B [N][K], f16, a second tile row of one
                 // row, a residual.
                 {"f16", 0, 129, 776, 200, false, true, "residual"},
                 // Batched: 2 x 3 tiles x 4 blocks, 10 k tiles.
                 {"bf16", 2, 64, 640, 136, false, false, ""},
             },
             {{}, {}, {}});
}

// f32 operands: the register-blocked SIMT kernel on CUDA (CUDAMatmul.h), 128x128 tiles:
// 16-byte loads where rows are aligned (K and N multiples of 4), scalar loads otherwise,
// B [N][K] and batched, dynamic M. A dynamic M also gets an M = 1 executable
// (hexir-specialize-dispatches), which on CUDA is the [K][N] column-tile GEMV: at K = 260
// its tiles are one warp each (33 of them), and at M = 17 one SIMT block walks both
// column tiles.
void F32Operands(const std::string& device) {
  CheckCases(device, "simt_matmul",
             {
                 // Aligned rows, M and N past a tile edge, K = 17 k tiles of 8, bias + relu -> bf16.
                 {"f32", 0, 197, 136, 264, false, false, "bias_relu_bf16"},
                 // Prime M, K, N: scalar loads, every edge partial.
                 {"f32", 0, 131, 97, 89, false, false, ""},
                 // Batched, B [N][K], a residual.
                 {"f32", 3, 70, 64, 140, false, true, "residual"},
                 // Dynamic M, B [N][K].
                 {"f32", 0, 0, 260, 130, true, true, ""},
                 // Dynamic M, B [K][N] aligned.
                 {"f32", 0, 0, 260, 132, true, false, ""},
             },
             {{}, {}, {}, {17, 300}, {1, 17, 300}});
}

// f32 operands with --allow-tf32: on CUDA the SIMT kernel's stages feed TF32 mma.sync
// (CUDAMatmul.h); against f64 loops with the TF32 bound at prime sizes (scalar loads, every
// fragment edge partial), aligned batched [N][K] with a residual, K long enough for the
// rounding to show (1031 terms), and dynamic M with aligned [K][N] B (M = 1: the GEMV
// executable, exact f32; M = 17: one block walks both column tiles).
void Tf32Operands(const std::string& device) {
  CheckCases(device, "tf32_matmul",
             {
                 {"f32", 0, 131, 97, 89, false, false, ""},
                 {"f32", 3, 70, 64, 140, false, true, "residual"},
                 {"f32", 0, 257, 1031, 301, false, false, ""},
                 {"f32", 0, 0, 260, 132, true, false, ""},
             },
             {{}, {}, {}, {1, 17, 300}}, /*tf32=*/true);
}

void DynamicRows(const std::string& device) {
  CheckCases(device, "tc_matmul_dynamic",
             {
                 // One module (128x128 tiles; wgmma on sm_90), M from 17 (one partial tile row) to 1000; B [N][K]
                 // (the llama layout) plus a residual; and [K][N] f16 with prime K.
                 {"bf16", 0, 0, 256, 320, true, true, "residual"},
                 {"f16", 0, 0, 251, 136, true, false, ""},
                 // wgmma (aligned rows): M from one partial warpgroup to several tile rows.
                 {"f16", 0, 0, 192, 200, true, false, ""},
             },
             {{17, 300, 1000}, {33, 129}, {5, 64, 129, 700}});
}

// f32 activations by f16/bf16 weights (a prompt's prefill projections): on CUDA the
// activations are rounded to the weights' type first and the tensor-core kernel runs
// (hexir-cast-matmul-activations; the reference rounds them too, so an f32 path would miss
// it by ~2^-12 sum |ab|, above the tolerance); the CPU keeps f32. M dynamic (1: a one-token
// prompt, still rounded; 17, 300), B [N][K] (the llama layout) with a residual, [K][N] bf16
// with prime K, and a static M of 40 through a named matmul.
void MixedOperands(const std::string& device) {
  CheckCases(device, "mixed_matmul",
             {
                 {"f16", 0, 0, 256, 320, true, true, "residual", "f32"},
                 {"bf16", 0, 0, 251, 136, true, false, "", "f32"},
                 {"f16", 0, 40, 96, 72, false, false, "", "f32"},
             },
             {{1, 17, 300}, {33, 129}, {}});
}

HEXIR_E2E_TEST_ON_DEVICES("f16 and bf16 matmuls match f64 loops at odd, prime and batched sizes with epilogues", OddSizes)
HEXIR_E2E_TEST_ON_DEVICES("f32 activations by f16 and bf16 weights match f64 loops over the activations as each "
                          "device reads them", MixedOperands)
HEXIR_E2E_TEST_ON_DEVICES("f16 and bf16 matmuls with dynamic M match f64 loops at every M", DynamicRows)
HEXIR_E2E_TEST_ON_DEVICES("f16 and bf16 matmuls with K split across blocks match f64 loops", SplitK)
HEXIR_E2E_TEST_ON_DEVICES("f32 matmuls match f64 loops at odd, prime, batched and dynamic sizes", F32Operands)
HEXIR_E2E_TEST_ON_DEVICES("f32 matmuls with --allow-tf32 match f64 loops within the TF32 rounding bound",
                          Tf32Operands)

}  // namespace
}  // namespace hexir::e2e
