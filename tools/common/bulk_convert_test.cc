// The bulk converters agree with the element-wise reference conversions of tensor_io.h on
// random values and on every special case (signed zeros, subnormals, ties, overflow, inf, NaN),
// on both the threaded and the single-range paths.
#include "tools/common/bulk_convert.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "tools/common/tensor_io.h"

namespace hexir::tools {
namespace {

std::vector<float> Samples(size_t n) {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65520.0f, 65519.0f, 1e-8f,
                          5.96e-8f, 2.98e-8f, 6.1e-5f, std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(), 1.0f + 1.0f / 2048,
                          1.0f + 3.0f / 2048, 1e9f, -3.0e-7f};
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> bits;
  while (v.size() < n) {
    uint32_t b = bits(rng);
    float f;
    std::memcpy(&f, &b, 4);
    if (!std::isnan(f)) v.push_back(f);
  }
  return v;
}

TEST_CASE("f32 to f16 equals FloatToHalf element by element, threaded or not") {
  for (size_t n : {size_t{37}, size_t{3} << 20}) {
    std::vector<float> f = Samples(n);
    f[n / 2] = std::nanf("");
    std::vector<uint16_t> got(n);
    ConvertF32ToF16(reinterpret_cast<const uint8_t*>(f.data()), n, got.data());
    size_t mismatches = 0, first = n;
    for (size_t i = 0; i < n; ++i) {
      bool ok = std::isnan(f[i]) ? std::isnan(HalfToFloat(got[i])) : got[i] == FloatToHalf(f[i]);
      if (!ok && mismatches++ == 0) first = i;
    }
    INFO("first mismatch at element " << first << " of " << n);
    REQUIRE(mismatches == 0);
  }
}

TEST_CASE("f16 and bf16 widen exactly and f32 is copied") {
  const size_t n = (size_t{5} << 19) + 3;
  std::vector<uint16_t> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = uint16_t(i * 40503u);
  std::vector<float> got(n);
  ConvertToF32(reinterpret_cast<const uint8_t*>(h.data()), n, 2, /*bf16=*/false, got.data());
  for (size_t i = 0; i < n; i += 7) {
    float want = HalfToFloat(h[i]);
    if (std::isnan(want)) {
      REQUIRE(std::isnan(got[i]));
    } else {
      REQUIRE(got[i] == want);
    }
  }
  ConvertToF32(reinterpret_cast<const uint8_t*>(h.data()), n, 2, /*bf16=*/true, got.data());
  for (size_t i = 0; i < n; i += 7) {
    uint32_t bits = uint32_t(h[i]) << 16, got_bits;
    std::memcpy(&got_bits, &got[i], 4);
    REQUIRE(got_bits == bits);
  }
  std::vector<float> f = Samples(100);
  std::vector<float> copy(100);
  ConvertToF32(reinterpret_cast<const uint8_t*>(f.data()), 100, 4, false, copy.data());
  REQUIRE(std::memcmp(copy.data(), f.data(), 400) == 0);
}

}  // namespace
}  // namespace hexir::tools
