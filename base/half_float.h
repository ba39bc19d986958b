// IEEE binary16 (f16) and bfloat16 conversions to and from f32: the one definition used by the
// tools (tensor_io, bulk conversion, quantization) and the runtime (channels that reduce f16 and
// bf16 in f32). Rounding is to nearest even; NaN stays NaN (quiet), overflow becomes infinity,
// f16 subnormals are produced and read exactly.
#pragma once

#include <cstdint>

namespace hexir {

uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);
uint16_t FloatToBF16(float f);
float BF16ToFloat(uint16_t h);

}  // namespace hexir
