// Element types of buffer views, shared by the runtime and the compiler (header-only).
// Everything here is generated from hal/element_types.def; the numeric codes are part of the
// bytecode ABI (they appear as immediates): never renumber.
#pragma once

#include <cstdint>
#include <string_view>

namespace hexir::hal {

enum class ElementType : int32_t {
#define HEXIR_ELEMENT_TYPE(Name, code, spelling, bytes, is_float) k##Name = code,
#include "hal/element_types.def"
#undef HEXIR_ELEMENT_TYPE
};

// Every code of the table, in table order.
inline constexpr int32_t kElementTypeCodes[] = {
#define HEXIR_ELEMENT_TYPE(Name, code, spelling, bytes, is_float) code,
#include "hal/element_types.def"
#undef HEXIR_ELEMENT_TYPE
};

// Size in bytes of one element; 0 for an unknown code.
constexpr int64_t ElementTypeByteSize(int64_t code) {
  switch (code) {
#define HEXIR_ELEMENT_TYPE(Name, c, spelling, bytes, is_float) \
  case c:                                                      \
    return bytes;
#include "hal/element_types.def"
#undef HEXIR_ELEMENT_TYPE
    default: return 0;
  }
}

// True for the floating-point types (f32, f16, bf16, f64); false for integers and unknown codes.
constexpr bool ElementTypeIsFloat(int64_t code) {
  switch (code) {
#define HEXIR_ELEMENT_TYPE(Name, c, spelling, bytes, is_float) \
  case c:                                                      \
    return is_float;
#include "hal/element_types.def"
#undef HEXIR_ELEMENT_TYPE
    default: return false;
  }
}

// MLIR spelling ("f32", "bf16", "i1"); "" for an unknown code.
constexpr std::string_view ElementTypeName(int64_t code) {
  switch (code) {
#define HEXIR_ELEMENT_TYPE(Name, c, spelling, bytes, is_float) \
  case c:                                                      \
    return spelling;
#include "hal/element_types.def"
#undef HEXIR_ELEMENT_TYPE
    default: return "";
  }
}

// Inverse of ElementTypeName; 0 when the name is unknown.
constexpr int32_t ElementTypeFromName(std::string_view name) {
  for (int32_t code : kElementTypeCodes) {
    if (ElementTypeName(code) == name) return code;
  }
  return 0;
}

}  // namespace hexir::hal
