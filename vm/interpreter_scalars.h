// The interpreter's scalar arithmetic (internal to vm/interpreter.cc): value registers hold
// 64 bits; f64 and f32 values travel as their bits, and division traps as kernels fail.
// Header-only so the hot loop inlines every helper; no state.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "base/status.h"

namespace hexir::vm::interpreter {

inline double AsF64(int64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof(d));
  return d;
}
inline int64_t Bits(double d) {
  int64_t bits;
  std::memcpy(&bits, &d, sizeof(d));
  return bits;
}
inline int64_t Wrap(uint64_t u) { return static_cast<int64_t>(u); }

// `cast.f64.si64`: truncation toward zero, saturating at the i64 range; NaN gives 0.
inline int64_t SaturatingF64ToI64(double d) {
  if (std::isnan(d)) return 0;
  if (d >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
  if (d < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(d);
}

// `trunc.f64.f32`: the f32 nearest the f64 in `bits`, as zero-extended f32 bits.
inline int64_t F64BitsToF32Bits(int64_t bits) {
  float f = static_cast<float>(AsF64(bits));
  uint32_t narrow;
  std::memcpy(&narrow, &f, 4);
  return narrow;
}

// `ext.f32.f64`: the f32 in the low 32 bits of `bits`, widened to f64 bits.
inline int64_t F32BitsToF64Bits(int64_t bits) {
  uint32_t narrow = static_cast<uint32_t>(bits);
  float f;
  std::memcpy(&f, &narrow, 4);
  return Bits(static_cast<double>(f));
}

// True when `dividend / divisor` at width T must trap (ISA: a zero divisor, or T's minimum by
// -1); otherwise the C++ division cannot overflow.
template <typename T>
inline bool SignedDivisionTraps(T dividend, T divisor) {
  return divisor == 0 || (divisor == -1 && dividend == std::numeric_limits<T>::min());
}

// The trap of an integer division or remainder by zero, or of INT_MIN by -1; the words of a
// kernel's (hal/kernel_error.h), so host and device code fail alike.
__attribute__((noinline, cold)) inline Status DivisionTrap(int64_t dividend, int64_t divisor) {
  return InvalidArgument("integer division ", divisor == 0 ? "by zero" : "overflow", " (", dividend,
                         " / ", divisor, ")");
}

}  // namespace hexir::vm::interpreter
