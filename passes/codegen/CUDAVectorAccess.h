// Which memref reads along a reduced dimension may be one 16-byte vector load on CUDA
// (shared by the warp reduction of CUDALowerExecutables and the recomputed whole reductions
// of CUDAWholeReductions).
#pragma once

#include "llvm/ADT/SmallVector.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace hexir::cuda {

// Bytes of one vector access (128 bits) and the most elements one access reads.
inline constexpr int64_t kVectorAccessBytes = 16;
inline constexpr int64_t kMaxVectorAccessWidth = 8;

// Whether every address of `m`'s elements [..., k] with k a multiple of `width` is aligned
// to `width` elements: unit innermost stride, every other stride a static multiple of
// `width`, and an offset that is a multiple of `width`: a kernel argument (offset 0; its
// base is a binding, 16-byte aligned: the ABI entry of CUDALowerExecutables) or a subview
// (or cast) of such a memref whose innermost offset is a static multiple of `width`.
inline bool RowsAligned(mlir::Value m, int64_t width) {
  using namespace mlir;
  auto type = dyn_cast<MemRefType>(m.getType());
  llvm::SmallVector<int64_t> strides;
  int64_t offset;
  if (!type || type.getRank() == 0 || failed(type.getStridesAndOffset(strides, offset)) ||
      strides.back() != 1)
    return false;
  for (int64_t s : llvm::ArrayRef<int64_t>(strides).drop_back())
    if (ShapedType::isDynamic(s) || s % width != 0) return false;
  if (auto arg = dyn_cast<BlockArgument>(m))
    return offset == 0 && isa<func::FuncOp>(arg.getOwner()->getParentOp());
  if (auto cast = m.getDefiningOp<memref::CastOp>()) return RowsAligned(cast.getSource(), width);
  auto sub = m.getDefiningOp<memref::SubViewOp>();
  if (!sub || sub.getSourceType().getRank() != type.getRank()) return false;
  int64_t innerOffset = sub.getStaticOffsets().back();
  return !ShapedType::isDynamic(innerOffset) && innerOffset % width == 0 &&
         sub.getStaticStrides().back() == 1 && RowsAligned(sub.getSource(), width);
}

}  // namespace hexir::cuda
