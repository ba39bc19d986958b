// The layout fact the CPU vector kernels (CPUMatmulMicroKernel, CPUMatvecKernel) check before
// loading rows as vectors. Header-only; pure.
#pragma once

#include "llvm/ADT/SmallVector.h"
#include "mlir/IR/BuiltinTypes.h"

namespace hexir::codegen {

// True when `type` is a memref whose innermost stride is 1 (vector loads along it), or not a
// memref at all (tensors have no layout yet).
inline bool HasUnitInnerStride(mlir::Type type) {
  auto memref = mlir::dyn_cast<mlir::MemRefType>(type);
  if (!memref) return true;
  llvm::SmallVector<int64_t> strides;
  int64_t offset;
  return mlir::succeeded(memref.getStridesAndOffset(strides, offset)) && !strides.empty() &&
         strides.back() == 1;
}

}  // namespace hexir::codegen
