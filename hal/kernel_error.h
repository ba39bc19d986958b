// The error a kernel failure code of hal/kernel_status.h becomes, the same on every driver:
//   1 -> OutOfRange("kernel 'main_dispatch_0': index 1000000000 out of range [0, 10)")
//   2 -> InvalidArgument("kernel '...': integer division by zero (-8 / 0)")
//   3 -> InvalidArgument("kernel '...': integer division overflow (-2147483648 / -1)")
// Any other code is not one of these: KnownKernelError is false and the driver names it.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "hal/kernel_status.h"

namespace hexir::hal {

inline bool KnownKernelError(int64_t code) {
  return code == HEXIR_KERNEL_INDEX_OUT_OF_RANGE || code == HEXIR_KERNEL_DIVISION_BY_ZERO ||
         code == HEXIR_KERNEL_DIVISION_OVERFLOW;
}

// Requires KnownKernelError(code).
inline Status KernelError(std::string_view entry, int64_t code, int64_t a, int64_t b) {
  if (code == HEXIR_KERNEL_INDEX_OUT_OF_RANGE)
    return OutOfRange("kernel '", entry, "': index ", a, " out of range [0, ", b, ")");
  const char* what = code == HEXIR_KERNEL_DIVISION_BY_ZERO ? "by zero" : "overflow";
  return InvalidArgument("kernel '", entry, "': integer division ", what, " (", a, " / ", b, ")");
}

}  // namespace hexir::hal
