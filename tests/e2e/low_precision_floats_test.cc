// bf16 and f16 arithmetic in compiled kernels, checked bit for bit against C++ references
// computed in f32 and rounded to nearest even, at the awkward values: ties, subnormals, NaN,
// infinities and finite values that round to infinity. Values cross the tool boundary as i16
// bit patterns (bf16 has no NumPy dtype) and are bitcast inside the kernels.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "hal/element_type.h"
#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;

// --- References, written independently of the compiler (f32 -> bf16 by hand; f16 by the C++
// compiler's own _Float16 conversion). ---

float FloatFromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
uint32_t BitsOfFloat(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

// Round to nearest even; NaN stays NaN (quiet) with its sign.
uint16_t RoundToBF16(float f) {
  uint32_t bits = BitsOfFloat(f);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  uint32_t lsb = (bits >> 16) & 1;
  return static_cast<uint16_t>((bits + 0x7fff + lsb) >> 16);
}
float WidenBF16(uint16_t h) { return FloatFromBits(static_cast<uint32_t>(h) << 16); }

uint16_t RoundToF16(float f) {
  _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}
float WidenF16(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<float>(h);
}

bool IsNaNBF16(uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0; }
bool IsNaNF16(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }

HostTensor BitsTensor(const std::vector<uint16_t>& bits) {
  HostTensor t;
  t.element_type = static_cast<int32_t>(hal::ElementType::kI16);
  t.dims = {static_cast<int64_t>(bits.size())};
  t.bytes.resize(bits.size() * 2);
  std::memcpy(t.bytes.data(), bits.data(), t.bytes.size());
  return t;
}
HostTensor F32Tensor(const std::vector<float>& values) {
  HostTensor t = ZerosF32({static_cast<int64_t>(values.size())});
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}
std::vector<uint16_t> Bits(const HostTensor& t) {
  REQUIRE(t.element_type == static_cast<int32_t>(hal::ElementType::kI16));
  std::vector<uint16_t> bits(t.bytes.size() / 2);
  std::memcpy(bits.data(), t.bytes.data(), t.bytes.size());
  return bits;
}

// Results equal the reference bit for bit, except that any NaN matches any NaN.
void RequireSameBits(const std::vector<uint16_t>& actual, const std::vector<uint16_t>& expected,
                     bool (*is_nan)(uint16_t), const std::vector<float>& inputs) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element " << i << " from f32 bits 0x" << std::hex << BitsOfFloat(inputs[i])
                    << ": got 0x" << actual[i] << ", want 0x" << expected[i]);
    if (is_nan(expected[i]))
      CHECK(is_nan(actual[i]));
    else
      CHECK(actual[i] == expected[i]);
  }
}

// f32 values whose rounding is awkward in both formats.
std::vector<float> AwkwardF32Values() {
  std::vector<uint32_t> bits = {
      0x3f808000,  // 1 + 2^-8: bf16 tie, rounds down to even (1.0)
      0x3f818000,  // 1 + 3*2^-8: bf16 tie, rounds up to even
      0x3f808001,  // just above a tie: rounds up
      0x3f807fff,  // just below a tie: rounds down
      0x00008000,  // f32 subnormal, bf16 tie between 0 and the smallest subnormal: 0
      0x00018000,  // subnormal tie rounding up to even (bf16 0x0002)
      0x807fffff,  // largest negative subnormal: rounds up into the normals (-2^-126)
      0x7f7f7fff,  // just below the tie under FLT_MAX: stays finite in bf16
      0x7f7f8000,  // tie above bf16's largest finite: rounds to +inf
      0x7f7fffff,  // FLT_MAX: +inf in both formats
      0xff7fffff,  // -FLT_MAX: -inf
      0x7f800000,  // +inf
      0xff800000,  // -inf
      0x7fc00000,  // quiet NaN
      0x7f800001,  // signalling NaN: must stay NaN, not become inf by truncation
      0xffc12345,  // negative NaN with payload
      0x80000000,  // -0
      0x477ff000,  // 65520: f16 tie above its largest finite 65504: +inf
      0x477fefff,  // just below: 65504
      0x33000000,  // 2^-25: f16 tie between 0 and its smallest subnormal: 0
      0x33c00000,  // 3*2^-25: f16 subnormal tie rounding up to 2^-23
      0x33000001,  // just above 2^-25: rounds up to 2^-24
      0x3f801000,  // 1 + 2^-11: f16 tie, rounds down to 1.0
      0x3f803000,  // 1 + 3*2^-11: f16 tie, rounds up
  };
  std::vector<float> values;
  for (uint32_t b : bits) values.push_back(FloatFromBits(b));
  return values;
}

TEST_CASE("the references round ties to even, overflow to inf and keep NaN") {
  std::vector<float> v = AwkwardF32Values();
  CHECK(RoundToBF16(v[0]) == 0x3f80);
  CHECK(RoundToBF16(v[1]) == 0x3f82);
  CHECK(RoundToBF16(v[5]) == 0x0002);
  CHECK(RoundToBF16(v[8]) == 0x7f80);
  CHECK(IsNaNBF16(RoundToBF16(v[14])));
  CHECK(RoundToF16(v[17]) == 0x7c00);
  CHECK(RoundToF16(v[18]) == 0x7bff);
  CHECK(RoundToF16(v[19]) == 0x0000);
  CHECK(RoundToF16(v[20]) == 0x0002);
  CHECK(RoundToF16(v[22]) == 0x3c00);
  CHECK(RoundToF16(v[23]) == 0x3c02);
  CHECK(IsNaNF16(RoundToF16(v[14])));
}

// @round: f32 -> low-precision (arith.truncf); @add: low-precision + low-precision;
// @exp: math.exp on low-precision; @widen: low-precision -> f32 (arith.extf). TYPE is bf16 or f16.
std::string ElementwiseModule(const std::string& type) {
  std::string m = R"mlir(
#map = affine_map<(i) -> (i)>
func.func @round(%x: tensor<?xf32>) -> tensor<?xi16> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xi16>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<?xf32>) outs(%e : tensor<?xi16>) {
  ^bb0(%v: f32, %o: i16):
    %t = arith.truncf %v : f32 to TYPE
    %b = arith.bitcast %t : TYPE to i16
    linalg.yield %b : i16
  } -> tensor<?xi16>
  return %r : tensor<?xi16>
}
func.func @add(%x: tensor<?xi16>, %y: tensor<?xi16>) -> tensor<?xi16> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xi16>
  %e = tensor.empty(%n) : tensor<?xi16>
  %r = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]} ins(%x, %y : tensor<?xi16>, tensor<?xi16>) outs(%e : tensor<?xi16>) {
  ^bb0(%a: i16, %b: i16, %o: i16):
    %fa = arith.bitcast %a : i16 to TYPE
    %fb = arith.bitcast %b : i16 to TYPE
    %s = arith.addf %fa, %fb : TYPE
    %r = arith.bitcast %s : TYPE to i16
    linalg.yield %r : i16
  } -> tensor<?xi16>
  return %r : tensor<?xi16>
}
func.func @exp(%x: tensor<?xi16>) -> tensor<?xi16> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xi16>
  %e = tensor.empty(%n) : tensor<?xi16>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<?xi16>) outs(%e : tensor<?xi16>) {
  ^bb0(%a: i16, %o: i16):
    %h = arith.bitcast %a : i16 to TYPE
    %x2 = math.exp %h : TYPE
    %b = arith.bitcast %x2 : TYPE to i16
    linalg.yield %b : i16
  } -> tensor<?xi16>
  return %r : tensor<?xi16>
}
func.func @widen(%x: tensor<?xi16>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xi16>
  %e = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<?xi16>) outs(%e : tensor<?xf32>) {
  ^bb0(%a: i16, %o: f32):
    %h = arith.bitcast %a : i16 to TYPE
    %w = arith.extf %h : TYPE to f32
    linalg.yield %w : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
)mlir";
  for (size_t at; (at = m.find("TYPE")) != std::string::npos;) m.replace(at, 4, type);
  return m;
}

struct Format {
  const char* name;
  uint16_t (*round)(float);
  float (*widen)(uint16_t);
  bool (*is_nan)(uint16_t);
};
const Format kBF16 = {"bf16", RoundToBF16, WidenBF16, IsNaNBF16};
const Format kF16 = {"f16", RoundToF16, WidenF16, IsNaNF16};

// Returns the compiled module's path.
std::string CheckElementwise(const Format& format, const std::string& device,
                             const std::string& module_name) {
  std::string module = CompileOrDie(ElementwiseModule(format.name), module_name, device);
  RequireDevice(device);
  std::vector<float> values = AwkwardF32Values();
  std::vector<uint16_t> expected_rounded;
  for (float v : values) expected_rounded.push_back(format.round(v));

  SECTION("truncf rounds to nearest even, keeps NaN and overflows to inf") {
    std::vector<HostTensor> out = RunOrDie(module, "round", {F32Tensor(values)}, 1, device);
    RequireSameBits(Bits(out[0]), expected_rounded, format.is_nan, values);
  }
  SECTION("addf rounds the f32 sum to nearest even") {
    // x + y: every awkward value plus itself, plus 1, plus a tie's worth below one ulp.
    std::vector<uint16_t> x, y, expected;
    std::vector<float> sums;
    const float kAddends[] = {0.0f, 1.0f, -1.0f, 3.0f};
    for (uint16_t a : expected_rounded)
      for (float addend : kAddends) {
        uint16_t b = format.round(addend == 0.0f ? format.widen(a) : addend);
        float sum = format.widen(a) + format.widen(b);
        x.push_back(a), y.push_back(b), sums.push_back(sum), expected.push_back(format.round(sum));
      }
    std::vector<HostTensor> out = RunOrDie(module, "add", {BitsTensor(x), BitsTensor(y)}, 1, device);
    RequireSameBits(Bits(out[0]), expected, format.is_nan, sums);
  }
  SECTION("math.exp is the f32 exp rounded once") {
    std::vector<uint16_t> expected;
    std::vector<float> widened;
    for (uint16_t a : expected_rounded) {
      widened.push_back(format.widen(a));
      expected.push_back(format.round(std::exp(format.widen(a))));
    }
    std::vector<HostTensor> out = RunOrDie(module, "exp", {BitsTensor(expected_rounded)}, 1, device);
    RequireSameBits(Bits(out[0]), expected, format.is_nan, widened);
  }
  SECTION("extf is exact, subnormals and infinities included") {
    std::vector<HostTensor> out = RunOrDie(module, "widen", {BitsTensor(expected_rounded)}, 1, device);
    const float* got = F32(out[0]);
    for (size_t i = 0; i < values.size(); ++i) {
      float want = format.widen(expected_rounded[i]);
      INFO("element " << i << " bits 0x" << std::hex << expected_rounded[i]);
      if (std::isnan(want))
        CHECK(std::isnan(got[i]));
      else
        CHECK(BitsOfFloat(got[i]) == BitsOfFloat(want));
    }
  }
  return module;
}

void BF16Elementwise(const std::string& device) { CheckElementwise(kBF16, device, "elementwise_bf16"); }
HEXIR_E2E_TEST_ON_DEVICES("bf16 elementwise kernels round like the f32 reference rounded to nearest even",
                          BF16Elementwise)

void F16Elementwise(const std::string& device) { CheckElementwise(kF16, device, "elementwise_f16"); }
HEXIR_E2E_TEST_ON_DEVICES("f16 elementwise kernels round like the f32 reference rounded to nearest even",
                          F16Elementwise)

// Without F16C, LLVM converts f16 through __extendhfsf2 / __truncsfhf2 calls that the kernel's
// shared object must resolve (from libgcc_s) or it fails to load.
TEST_CASE("f16 kernels compiled for a CPU without F16C load and round to nearest even") {
  const char* saved = std::getenv("HEXIR_COMPILE_FLAGS");
  std::string previous = saved ? saved : "";
  setenv("HEXIR_COMPILE_FLAGS", "--cpu=x86-64", 1);
  std::string module = CheckElementwise(kF16, "cpu", "elementwise_f16_x86_64");
  if (saved)
    setenv("HEXIR_COMPILE_FLAGS", previous.c_str(), 1);
  else
    unsetenv("HEXIR_COMPILE_FLAGS");
  // hexir-run has libgcc_s loaded anyway; an embedder may not: the kernel must name it.
  std::ifstream file(module, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.find("__truncsfhf2") != std::string::npos);
  CHECK(bytes.find("libgcc_s.so.1") != std::string::npos);
}

// bf16 x bf16 matmul accumulating in f32, the result rounded to bf16.
const char* kBF16Matmul = R"mlir(
#map = affine_map<(i, j) -> (i, j)>
func.func @main(%a: tensor<5x9xi16>, %b: tensor<9x7xi16>) -> tensor<5x7xi16> {
  %z = arith.constant 0.0 : f32
  %ea = tensor.empty() : tensor<5x9xbf16>
  %eb = tensor.empty() : tensor<9x7xbf16>
  %ab = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<5x9xi16>) outs(%ea : tensor<5x9xbf16>) {
  ^bb0(%v: i16, %o: bf16):
    %f = arith.bitcast %v : i16 to bf16
    linalg.yield %f : bf16
  } -> tensor<5x9xbf16>
  %bb = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<9x7xi16>) outs(%eb : tensor<9x7xbf16>) {
  ^bb0(%v: i16, %o: bf16):
    %f = arith.bitcast %v : i16 to bf16
    linalg.yield %f : bf16
  } -> tensor<9x7xbf16>
  %e = tensor.empty() : tensor<5x7xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<5x7xf32>) -> tensor<5x7xf32>
  %m = linalg.matmul ins(%ab, %bb : tensor<5x9xbf16>, tensor<9x7xbf16>) outs(%f : tensor<5x7xf32>) -> tensor<5x7xf32>
  %eo = tensor.empty() : tensor<5x7xi16>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<5x7xf32>) outs(%eo : tensor<5x7xi16>) {
  ^bb0(%v: f32, %o: i16):
    %t = arith.truncf %v : f32 to bf16
    %i = arith.bitcast %t : bf16 to i16
    linalg.yield %i : i16
  } -> tensor<5x7xi16>
  return %r : tensor<5x7xi16>
}
)mlir";

void BF16Matmul(const std::string& device) {
  std::string module = CompileOrDie(kBF16Matmul, "bf16_matmul", device);
  RequireDevice(device);
  const int M = 5, K = 9, N = 7;
  std::vector<uint16_t> a, b;
  HostTensor ra = RandomF32({M * K}, 11, -4, 4);
  for (int i = 0; i < M * K; ++i) a.push_back(RoundToBF16(F32(ra)[i]));
  HostTensor rb = RandomF32({K * N}, 12, -4, 4);
  for (int i = 0; i < K * N; ++i) b.push_back(RoundToBF16(F32(rb)[i]));
  // (0, 1) sums to a bf16 tie, (1, 2) overflows to inf, column 0 of b carries a NaN.
  for (int k = 0; k < K; ++k) a[0 * K + k] = RoundToBF16(k == 0 ? 1.0f : 0.0f);
  b[0 * N + 1] = RoundToBF16(1.0f);
  a[0 * K + 1] = RoundToBF16(1.0f), b[1 * N + 1] = RoundToBF16(1.0f / 256);  // 1 + 2^-8: tie
  for (int k = 0; k < K; ++k) a[1 * K + k] = RoundToBF16(3.0e38f), b[k * N + 2] = RoundToBF16(1.0f);
  b[2 * N + 0] = 0x7fc0;
  HostTensor ta = BitsTensor(a), tb = BitsTensor(b);
  ta.dims = {M, K}, tb.dims = {K, N};
  std::vector<HostTensor> out = RunOrDie(module, "main", {ta, tb}, 1, device);
  std::vector<uint16_t> expected;
  std::vector<float> sums;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) acc += WidenBF16(a[i * K + k]) * WidenBF16(b[k * N + j]);
      sums.push_back(acc), expected.push_back(RoundToBF16(acc));
    }
  CHECK(expected[0 * N + 1] == RoundToBF16(1.0f));  // the tie went to even
  CHECK(std::isinf(WidenBF16(expected[1 * N + 2])));
  RequireSameBits(Bits(out[0]), expected, IsNaNBF16, sums);
}
HEXIR_E2E_TEST_ON_DEVICES("bf16 matmul accumulating in f32 matches the f32 reference rounded to bf16",
                          BF16Matmul)

}  // namespace
}  // namespace hexir::e2e
