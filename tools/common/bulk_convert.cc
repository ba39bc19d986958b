#include "tools/common/bulk_convert.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "tools/common/tensor_io.h"

namespace hexir::tools {
namespace {

// Runs fn(begin, end) over [0, n) in contiguous pieces, one per hardware thread when n is
// large enough for threads to pay off.
template <typename Fn>
void ParallelRanges(size_t n, Fn fn) {
  constexpr size_t kMinPerThread = size_t{1} << 20;
  size_t threads = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()),
                                    std::max<size_t>(1, n / kMinPerThread));
  if (threads <= 1) return fn(size_t{0}, n);
  std::vector<std::thread> pool;
  const size_t step = (n + threads - 1) / threads;
  for (size_t t = 1; t < threads; ++t) {
    size_t begin = std::min(n, t * step), end = std::min(n, begin + step);
    pool.emplace_back([=] { fn(begin, end); });
  }
  fn(size_t{0}, std::min(n, step));
  for (std::thread& t : pool) t.join();
}

void F32ToF16Scalar(const uint8_t* src, size_t begin, size_t end, uint16_t* dst) {
  for (size_t i = begin; i < end; ++i) {
    float f;
    std::memcpy(&f, src + 4 * i, 4);
    dst[i] = FloatToHalf(f);
  }
}

#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) void F32ToF16Vector(const uint8_t* src, size_t begin,
                                                        size_t end, uint16_t* dst) {
  size_t i = begin;
  for (; i + 8 <= end; i += 8) {
    __m256 v = _mm256_loadu_ps(reinterpret_cast<const float*>(src + 4 * i));
    __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  F32ToF16Scalar(src, i, end, dst);
}

bool HasF16c() {
  static const bool has = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
  return has;
}
#endif

}  // namespace

void ConvertF32ToF16(const uint8_t* src, size_t n, uint16_t* dst) {
  ParallelRanges(n, [&](size_t begin, size_t end) {
#if defined(__x86_64__)
    if (HasF16c()) return F32ToF16Vector(src, begin, end, dst);
#endif
    F32ToF16Scalar(src, begin, end, dst);
  });
}

void ConvertToF32(const uint8_t* src, size_t n, int source_bytes, bool bf16, float* dst) {
  if (source_bytes == 4) {
    std::memcpy(dst, src, n * 4);
    return;
  }
  ParallelRanges(n, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      if (bf16) {  // the high half of an f32
        uint32_t bits = uint32_t(h) << 16;
        std::memcpy(&dst[i], &bits, 4);
      } else {
        dst[i] = HalfToFloat(h);
      }
    }
  });
}

}  // namespace hexir::tools
