// Element types of buffer views, shared by the runtime and the compiler (header-only).
// The numeric codes are part of the bytecode ABI (they appear as immediates): never renumber.
#pragma once

#include <cstdint>
#include <string_view>

namespace hexir::hal {

enum class ElementType : int32_t {
  kF32 = 1,
  kF16 = 2,
  kBF16 = 3,
  kF64 = 4,
  kI8 = 16,
  kI16 = 17,
  kI32 = 18,
  kI64 = 19,
  kI1 = 20,  // stored as one byte, 0 or 1
};

// Size in bytes of one element; 0 for an unknown code.
constexpr int64_t ElementTypeByteSize(int64_t code) {
  switch (code) {
    case 1: return 4;
    case 2: return 2;
    case 3: return 2;
    case 4: return 8;
    case 16: return 1;
    case 17: return 2;
    case 18: return 4;
    case 19: return 8;
    case 20: return 1;
    default: return 0;
  }
}

// MLIR spelling ("f32", "bf16", "i1"); "" for an unknown code.
constexpr std::string_view ElementTypeName(int64_t code) {
  switch (code) {
    case 1: return "f32";
    case 2: return "f16";
    case 3: return "bf16";
    case 4: return "f64";
    case 16: return "i8";
    case 17: return "i16";
    case 18: return "i32";
    case 19: return "i64";
    case 20: return "i1";
    default: return "";
  }
}

// Inverse of ElementTypeName; 0 when the name is unknown.
constexpr int32_t ElementTypeFromName(std::string_view name) {
  for (int32_t code : {1, 2, 3, 4, 16, 17, 18, 19, 20}) {
    if (ElementTypeName(code) == name) return code;
  }
  return 0;
}

}  // namespace hexir::hal
