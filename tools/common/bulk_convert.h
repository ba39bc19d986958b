// Bulk element conversion for weight uploads (tools/common/llama_parameters.cc): the same
// results as tensor_io.h's FloatToHalf / HalfToFloat element by element, fast enough for
// billions of elements (F16C when the CPU has it, split over the hardware threads).
//
// Sources are unaligned little-endian bytes (a memory-mapped checkpoint). Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hexir::tools {

// dst[i] = FloatToHalf(f32 at src + 4i) (round to nearest even; NaN stays NaN).
void ConvertF32ToF16(const uint8_t* src, size_t n, uint16_t* dst);

// dst[i] = the f32 at src + 4i (a copy), the f16 at src + 2i widened, or the bf16 at src + 2i
// widened (both exact). `source_bytes` is 4 (f32) or 2; `bf16` picks bf16 over f16.
void ConvertToF32(const uint8_t* src, size_t n, int source_bytes, bool bf16, float* dst);

}  // namespace hexir::tools
