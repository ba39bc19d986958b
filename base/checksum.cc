#include "base/checksum.h"

#include <cstring>

namespace hexir {
namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ull;
constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ull;

inline uint64_t RotateLeft(uint64_t v, int bits) { return (v << bits) | (v >> (64 - bits)); }

inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);  // the format is little-endian, like every host Hexir runs on
  return v;
}

inline uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline uint64_t Round(uint64_t acc, uint64_t input) {
  return RotateLeft(acc + input * kPrime2, 31) * kPrime1;
}

inline uint64_t MergeRound(uint64_t acc, uint64_t lane) {
  return (acc ^ Round(0, lane)) * kPrime1 + kPrime4;
}

}  // namespace

uint64_t Checksum64(const void* data, size_t size) {
  // Offsets, not pointer comparisons: `data` may be null when size is 0.
  const auto* p = static_cast<const uint8_t*>(data);
  size_t at = 0;
  uint64_t h;
  if (size >= 32) {
    // Four independent lanes keep four multiplies in flight per 32-byte stripe.
    uint64_t v1 = kPrime1 + kPrime2, v2 = kPrime2, v3 = 0, v4 = 0 - kPrime1;
    do {
      v1 = Round(v1, Load64(p + at));
      v2 = Round(v2, Load64(p + at + 8));
      v3 = Round(v3, Load64(p + at + 16));
      v4 = Round(v4, Load64(p + at + 24));
      at += 32;
    } while (at + 32 <= size);
    h = RotateLeft(v1, 1) + RotateLeft(v2, 7) + RotateLeft(v3, 12) + RotateLeft(v4, 18);
    h = MergeRound(h, v1);
    h = MergeRound(h, v2);
    h = MergeRound(h, v3);
    h = MergeRound(h, v4);
  } else {
    h = kPrime5;
  }
  h += static_cast<uint64_t>(size);
  for (; at + 8 <= size; at += 8) h = RotateLeft(h ^ Round(0, Load64(p + at)), 27) * kPrime1 + kPrime4;
  if (at + 4 <= size) {
    h = RotateLeft(h ^ (uint64_t{Load32(p + at)} * kPrime1), 23) * kPrime2 + kPrime3;
    at += 4;
  }
  for (; at < size; ++at) h = RotateLeft(h ^ (uint64_t{p[at]} * kPrime5), 11) * kPrime1;
  // Avalanche: every input bit affects every output bit.
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  h *= kPrime3;
  h ^= h >> 32;
  return h;
}

}  // namespace hexir
