#include "tools/hexir-quantize/quantize_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tools/common/tensor_io.h"

namespace hexir::tools {
namespace {

using compiler::llama::GgmlBlockType;

void PutHalf(float v, uint8_t* out) {
  uint16_t h = FloatToHalf(v);
  out[0] = uint8_t(h);
  out[1] = uint8_t(h >> 8);
}
// The f16 actually stored, so the quantized values use the scale the reader will see.
float Stored(float v) { return HalfToFloat(FloatToHalf(v)); }

// The element of largest magnitude, with its sign (ggml's legacy quantizers scale by it).
float SignedAbsMax(const float* x, int n) {
  float m = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(m)) m = x[i];
  return m;
}

int Clamp(int v, int lo, int hi) { return std::min(hi, std::max(lo, v)); }

// q4_0 (levels 16, offset 8) and q5_0 (32, 16): d = max / -offset, q = round(x / d) + offset.
void LegacySymmetric(const float* x, int levels, uint8_t* out) {
  const int offset = levels / 2;
  const float d = Stored(SignedAbsMax(x, 32) / -float(offset));
  const float id = d != 0 ? 1.0f / d : 0.0f;
  PutHalf(d, out);
  uint32_t qh = 0;
  uint8_t* qs = out + (levels == 32 ? 6 : 2);
  for (int j = 0; j < 16; ++j) {
    int q0 = Clamp(int(std::lround(x[j] * id)) + offset, 0, levels - 1);
    int q1 = Clamp(int(std::lround(x[j + 16] * id)) + offset, 0, levels - 1);
    qs[j] = uint8_t((q0 & 15) | ((q1 & 15) << 4));
    qh |= uint32_t((q0 >> 4) & 1) << j;
    qh |= uint32_t((q1 >> 4) & 1) << (j + 16);
  }
  if (levels == 32) std::memcpy(out + 2, &qh, 4);
}

void Q4_1(const float* x, uint8_t* out) {
  float lo = *std::min_element(x, x + 32), hi = *std::max_element(x, x + 32);
  const float d = Stored((hi - lo) / 15), m = Stored(lo);
  const float id = d != 0 ? 1.0f / d : 0.0f;
  PutHalf(d, out);
  PutHalf(m, out + 2);
  for (int j = 0; j < 16; ++j) {
    int q0 = Clamp(int(std::lround((x[j] - m) * id)), 0, 15);
    int q1 = Clamp(int(std::lround((x[j + 16] - m) * id)), 0, 15);
    out[4 + j] = uint8_t(q0 | (q1 << 4));
  }
}

void Q8_0(const float* x, uint8_t* out) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = Stored(amax / 127);
  const float id = d != 0 ? 1.0f / d : 0.0f;
  PutHalf(d, out);
  for (int j = 0; j < 32; ++j) out[2 + j] = uint8_t(int8_t(Clamp(int(std::lround(x[j] * id)), -127, 127)));
}

// q4_k / q5_k: 8 sub-blocks of 32 values, y = d*sc*q - dmin*m with 6-bit sc, m and q in
// [0, levels). Scales and mins packed as get_scale_min_k4 reads them.
void KQuantAffine(const float* x, int levels, uint8_t* out) {
  float scale[8], min[8];
  for (int s = 0; s < 8; ++s) {
    float lo = std::min(0.0f, *std::min_element(x + 32 * s, x + 32 * s + 32));
    float hi = *std::max_element(x + 32 * s, x + 32 * s + 32);
    scale[s] = (hi - lo) / float(levels - 1);
    min[s] = -lo;
  }
  const float d = Stored(*std::max_element(scale, scale + 8) / 63);
  const float dmin = Stored(*std::max_element(min, min + 8) / 63);
  int sc[8], m[8];
  for (int s = 0; s < 8; ++s) {
    sc[s] = d > 0 ? Clamp(int(std::lround(scale[s] / d)), 0, 63) : 0;
    // The min rounds up, so that -dmin*m stays at or below the sub-block's minimum.
    m[s] = dmin > 0 ? Clamp(int(std::ceil(min[s] / dmin)), 0, 63) : 0;
  }
  PutHalf(d, out);
  PutHalf(dmin, out + 2);
  uint8_t* scales = out + 4;
  for (int j = 0; j < 4; ++j) {
    scales[j] = uint8_t((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    scales[j + 4] = uint8_t((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    scales[j + 8] = uint8_t((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
  const bool five = levels == 32;
  uint8_t* qh = out + 16;
  uint8_t* qs = out + (five ? 48 : 16);
  if (five) std::memset(qh, 0, 32);
  std::memset(qs, 0, 128);
  for (int s = 0; s < 8; ++s) {
    const float step = d * float(sc[s]), offset = dmin * float(m[s]);
    for (int l = 0; l < 32; ++l) {
      int q = step > 0 ? Clamp(int(std::lround((x[32 * s + l] + offset) / step)), 0, levels - 1) : 0;
      qs[32 * (s / 2) + l] |= uint8_t((q & 15) << (4 * (s & 1)));
      if (five) qh[l] |= uint8_t(((q >> 4) & 1) << s);
    }
  }
}

// q6_k: 16 groups of 16 values, y = d * scales[g] * (q - 32), q in [0, 64), scales int8.
void Q6_K(const float* x, uint8_t* out) {
  float scale[16];
  for (int g = 0; g < 16; ++g) scale[g] = SignedAbsMax(x + 16 * g, 16) / -32;
  float amax = 0;
  for (float s : scale) amax = std::max(amax, std::fabs(s));
  const float d = Stored(amax / 127);
  uint8_t* ql = out;
  uint8_t* qh = out + 128;
  int8_t* scales = reinterpret_cast<int8_t*>(out + 192);
  std::memset(out, 0, 192);
  for (int g = 0; g < 16; ++g) scales[g] = int8_t(d > 0 ? Clamp(int(std::lround(scale[g] / d)), -127, 127) : 0);
  PutHalf(d, out + 208);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, t = (e / 32) % 4, l = e % 32;
    const float step = d * float(scales[8 * h + 2 * t + l / 16]);
    int q = step != 0 ? Clamp(int(std::lround(x[e] / step)) + 32, 0, 63) : 32;
    ql[64 * h + 32 * (t & 1) + l] |= uint8_t((q & 15) << (4 * (t >> 1)));
    qh[32 * h + l] |= uint8_t((q >> 4) << (2 * t));
  }
}

uint16_t ToBf16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if ((bits & 0x7fffffff) > 0x7f800000) return uint16_t((bits >> 16) | 0x40);  // NaN stays NaN
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

}  // namespace

void QuantizeRow(const compiler::llama::GgmlBlockInfo& format, const float* x, int64_t k, uint8_t* out) {
  for (int64_t b = 0; b < k / format.block_elements; ++b) {
    const float* in = x + b * format.block_elements;
    uint8_t* block = out + b * format.block_bytes;
    switch (format.type) {
      case GgmlBlockType::kQ4_0: LegacySymmetric(in, 16, block); break;
      case GgmlBlockType::kQ5_0: LegacySymmetric(in, 32, block); break;
      case GgmlBlockType::kQ4_1: Q4_1(in, block); break;
      case GgmlBlockType::kQ8_0: Q8_0(in, block); break;
      case GgmlBlockType::kQ4_K: KQuantAffine(in, 16, block); break;
      case GgmlBlockType::kQ5_K: KQuantAffine(in, 32, block); break;
      case GgmlBlockType::kQ6_K: Q6_K(in, block); break;
      case GgmlBlockType::kBF16: {
        uint16_t v = ToBf16(*in);
        block[0] = uint8_t(v);
        block[1] = uint8_t(v >> 8);
        break;
      }
    }
  }
}

}  // namespace hexir::tools
