// How Hexir element types appear in Python: NumPy dtype names and DLPack type codes.
// One row per hal/element_type.h code; everything in python/ converts through this table.
#pragma once

#include <cstdint>
#include <string_view>

#include <dlpack/dlpack.h>

namespace hexir::python {

struct ElementTypeInfo {
  int32_t code;                 // hal::ElementType
  std::string_view numpy_name;  // numpy.dtype(name); "bfloat16" has no NumPy dtype
  char numpy_kind;              // numpy.dtype.kind with itemsize bits / 8; 0: none
  uint8_t dlpack_code;          // DLDataTypeCode
  uint8_t bits;
};

// Sorted by hal code. i1 travels through DLPack as uint8 (DLPack 0.6 has no bool code).
inline constexpr ElementTypeInfo kElementTypes[] = {
    {1, "float32", 'f', kDLFloat, 32},
    {2, "float16", 'f', kDLFloat, 16},
    {3, "bfloat16", 0, kDLBfloat, 16},
    {4, "float64", 'f', kDLFloat, 64},
    {16, "int8", 'i', kDLInt, 8},
    {17, "int16", 'i', kDLInt, 16},
    {18, "int32", 'i', kDLInt, 32},
    {19, "int64", 'i', kDLInt, 64},
    {20, "bool", 'b', kDLUInt, 8},
};

// nullptr when unknown.
inline const ElementTypeInfo* FindByCode(int32_t code) {
  for (const ElementTypeInfo& t : kElementTypes)
    if (t.code == code) return &t;
  return nullptr;
}
inline const ElementTypeInfo* FindByNumpyKind(char kind, int64_t itemsize) {
  for (const ElementTypeInfo& t : kElementTypes)
    if (kind && t.numpy_kind == kind && t.bits == itemsize * 8) return &t;
  return nullptr;
}
inline const ElementTypeInfo* FindByDlpack(DLDataType type) {
  if (type.lanes != 1) return nullptr;
  for (const ElementTypeInfo& t : kElementTypes)
    if (t.dlpack_code == type.code && t.bits == type.bits) return &t;
  // DLPack producers that know a bool code (DLPack >= 0.8: kDLBool = 6) send it for i1.
  if (type.code == 6 && type.bits == 8) return FindByCode(20);
  return nullptr;
}

}  // namespace hexir::python
