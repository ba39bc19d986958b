// The hal/element_types.def code of an MLIR element type, for the passes that check (VerifyInput)
// and lower (ConvertToVM) tensors: the table's MLIR spelling is the match, so a type the runtime
// has no code for (si8, ui16, f8E4M3, complex) gets 0.
#pragma once

#include <string>

#include "hal/element_type.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/Types.h"

namespace hexir {

inline int64_t elementTypeCode(mlir::Type t) {
  std::string spelling;
  llvm::raw_string_ostream os(spelling);
  t.print(os);
  return hal::ElementTypeFromName(os.str());
}

// Element types the host can read one element of (tensor.extract): the integer types through
// hal.device.read_i64, f32 and f64 through hal.device.read_f64.
inline bool isHostReadableElement(mlir::Type t) {
  int64_t code = elementTypeCode(t);
  return code != 0 && (!hal::ElementTypeIsFloat(code) || t.isF32() || t.isF64());
}

}  // namespace hexir
