#include "base/half_float.h"

#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

using namespace hexir;

TEST_CASE("f16 and bf16 round to nearest even and round trip exactly representable values") {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 0.000061035156f}) {
    REQUIRE(HalfToFloat(FloatToHalf(f)) == f);
  }
  REQUIRE(FloatToHalf(1.0f) == 0x3c00);
  REQUIRE(FloatToHalf(65520.0f) == 0x7c00);  // overflows to inf
  REQUIRE(HalfToFloat(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  REQUIRE(FloatToBF16(1.0f) == 0x3f80);
  REQUIRE(BF16ToFloat(FloatToBF16(3.140625f)) == 3.140625f);
}

TEST_CASE("every finite f16 and bf16 value survives a round trip through f32") {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t h = uint16_t(bits);
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) continue;  // NaN payloads
    INFO("f16 bits " << bits);
    REQUIRE(FloatToHalf(HalfToFloat(h)) == h);
    if ((h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0) continue;
    INFO("bf16 bits " << bits);
    REQUIRE(FloatToBF16(BF16ToFloat(h)) == h);
  }
}

TEST_CASE("f16 subnormals round to nearest even and NaN stays NaN") {
  const float tiny = std::ldexp(1.0f, -24);      // the smallest f16 subnormal
  REQUIRE(FloatToHalf(tiny * 0.5f) == 0x0000);   // a tie rounds to even (zero)
  REQUIRE(FloatToHalf(tiny * 1.5f) == 0x0002);   // a tie rounds to even (two)
  REQUIRE(FloatToHalf(-tiny * 2.5f) == 0x8002);
  REQUIRE(std::isnan(HalfToFloat(FloatToHalf(std::numeric_limits<float>::quiet_NaN()))));
  REQUIRE(std::isnan(BF16ToFloat(FloatToBF16(std::numeric_limits<float>::quiet_NaN()))));
  REQUIRE(FloatToBF16(std::numeric_limits<float>::infinity()) == 0x7f80);
}
