// Transcendental functions in CPU kernels are vector polynomial approximations, not scalar
// libm calls (hexir-cpu-lower-executables). Their accuracy against libm in double, rounded
// to f32, over sweeps of every binade that matters, with the special values: +-0, +-inf,
// NaN, denormals, the largest finite values and large negative arguments. Bounds in ulps of
// the correctly rounded result (passes/codegen/CPUMathApproximation.h); results whose
// magnitude is below FLT_MIN may be flushed to zero.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>

#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;

// y = BODY(x) elementwise over @N@ f32; BODY uses %v and yields %r.
std::string Module(int64_t n, const std::string& body) {
  std::string t = "tensor<" + std::to_string(n) + "xf32>";
  return "#id = affine_map<(i) -> (i)>\nfunc.func @main(%x: " + t + ") -> " + t +
         " {\n  %e = tensor.empty() : " + t +
         "\n  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = [\"parallel\"]}"
         " ins(%x : " + t + ") outs(%e : " + t + ") {\n  ^bb0(%v: f32, %o: f32):\n" + body +
         "    linalg.yield %r : f32\n  } -> " + t + "\n  return %y : " + t + "\n}\n";
}

// Monotonic integer image of a float: adjacent floats differ by 1.
int64_t Ordered(float f) {
  int32_t i;
  std::memcpy(&i, &f, 4);
  return i < 0 ? -int64_t(i & 0x7fffffff) : int64_t(i);
}

std::vector<float> Inputs(float lo, float hi, bool positive_only) {
  std::vector<float> x = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MIN, FLT_MAX, -FLT_MAX,
                          FLT_TRUE_MIN, -FLT_TRUE_MIN, 1e-40f, -1e-40f, 1e-30f, -1e-30f,
                          88.7f, 88.73f, 89.0f, -87.3f, -88.0f, -103.0f, -104.0f, -1e4f,
                          1e4f, 0.5f, -0.5f, 1.0f, -1.0f, 2.0f, 9.0f, -9.0f};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(lo, hi);
  std::uniform_real_distribution<float> exponent(-38, 38);
  for (int i = 0; i < 20000; ++i) x.push_back(uniform(rng));
  for (int i = 0; i < 20000; ++i) x.push_back((i % 2 ? -1 : 1) * std::pow(10.0f, exponent(rng)));
  if (positive_only)
    for (float& v : x)
      if (!std::isnan(v)) v = std::fabs(v);
  return x;
}

struct Accuracy {
  int64_t max_ulp = 0;
  float worst = 0;
};

// Runs BODY over the inputs and measures it against `reference` (in double).
Accuracy Measure(const std::string& name, const std::string& body, const std::vector<float>& x,
                 const std::function<double(double)>& reference) {
  int64_t n = static_cast<int64_t>(x.size());
  std::string module = CompileOrDie(Module(n, body), "math_" + name);
  HostTensor in = ZerosF32({n});
  std::memcpy(F32(in), x.data(), x.size() * 4);
  HostTensor out = RunOrDie(module, "main", {in}, 1, "cpu", "--cpu-threads=1")[0];
  Accuracy accuracy;
  for (int64_t i = 0; i < n; ++i) {
    float got = F32(out)[i];
    float want = static_cast<float>(reference(double(x[i])));
    INFO(name << "(" << x[i] << ") = " << got << ", libm says " << want);
    if (std::isnan(want)) {
      REQUIRE(std::isnan(got));
      continue;
    }
    REQUIRE(!std::isnan(got));
    if (std::isinf(want)) {
      REQUIRE(got == want);
      continue;
    }
    if (std::fabs(want) < FLT_MIN && std::fabs(got) < FLT_MIN) continue;  // may flush
    int64_t ulp = std::llabs(Ordered(got) - Ordered(want));
    if (ulp > accuracy.max_ulp) accuracy = {ulp, x[i]};
  }
  std::printf("%s: max %lld ulp (at %g)\n", name.c_str(), (long long)accuracy.max_ulp,
              double(accuracy.worst));
  return accuracy;
}

TEST_CASE("exp is within 3 ulp of libm, inf and NaN exact, tiny results flushed to zero") {
  Accuracy a = Measure("exp", "    %r = math.exp %v : f32\n", Inputs(-110, 90, false),
                       [](double v) { return std::exp(v); });
  CHECK(a.max_ulp <= 3);
}

// Every float where exp's 2^n changes form (codegen/CPUExpApproximation.h): n = 128 (from
// 128 ln2, the overflow to +inf), n = 127 (the largest finite results), n = -126 and -127
// (FLT_MIN, below which results are flushed), and both clamps (-88, 89).
TEST_CASE("exp over every float next to its overflow and underflow edges is within 3 ulp of libm") {
  std::vector<float> x;
  for (float lo : {88.3f, -88.1f, -87.45f})
    for (float v = lo; v < lo + 0.35f; v = std::nextafter(v, INFINITY)) x.push_back(v);
  for (float v = 88.8f; v < 89.2f; v = std::nextafter(v, INFINITY)) x.push_back(v);
  Accuracy a = Measure("exp_edges", "    %r = math.exp %v : f32\n", x,
                       [](double v) { return std::exp(v); });
  CHECK(a.max_ulp <= 3);
}

TEST_CASE("log is within 2 ulp of libm on positive normals and denormals, NaN below zero") {
  std::vector<float> x = Inputs(0, 1000, true);
  x.insert(x.end(), {-1.0f, -FLT_MIN, -INFINITY});
  Accuracy a = Measure("log", "    %r = math.log %v : f32\n", x,
                       [](double v) { return std::log(v); });
  CHECK(a.max_ulp <= 2);
}

TEST_CASE("tanh is within 4 ulp of libm and saturates at +-1") {
  Accuracy a = Measure("tanh", "    %r = math.tanh %v : f32\n", Inputs(-12, 12, false),
                       [](double v) { return std::tanh(v); });
  CHECK(a.max_ulp <= 4);
}

TEST_CASE("erf is within 4 ulp of libm and saturates at +-1") {
  Accuracy a = Measure("erf", "    %r = math.erf %v : f32\n", Inputs(-6, 6, false),
                       [](double v) { return std::erf(v); });
  CHECK(a.max_ulp <= 4);
}

TEST_CASE("sigmoid through the approximated exp is within 4 ulp of libm") {
  const char* body =
      "    %one = arith.constant 1.0 : f32\n    %n = arith.negf %v : f32\n"
      "    %ex = math.exp %n : f32\n    %d = arith.addf %one, %ex : f32\n"
      "    %r = arith.divf %one, %d : f32\n";
  Accuracy a = Measure("sigmoid", body, Inputs(-100, 100, false),
                       [](double v) { return 1.0 / (1.0 + std::exp(-v)); });
  CHECK(a.max_ulp <= 4);
}

}  // namespace
}  // namespace hexir::e2e
