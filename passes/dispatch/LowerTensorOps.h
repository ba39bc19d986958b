// Host tensor ops without a runtime form of their own, rewritten (before dispatch formation)
// into linalg.generic ops that read their sources with tensor.extract in the body:
//   tensor.extract_slice (unit strides, maybe rank-reducing), tensor.insert_slice (unit
//   strides; a rank-reducing one's source expanded to the slice's shape first; the result is
//   a new tensor: the destination is copied, unless updated in place), tensor.pad
//   (constant padding value), tensor.from_elements.
// Offsets, sizes and scalars may be dynamic host values: they become kernel scalars.
#pragma once

#include <string>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"

namespace hexir {

// Rewrites the supported ops of `func` (outside linalg bodies) in place, once each: marks the
// insert_slice ops that update in place (kInPlaceAttr, left as they are), then applies the
// patterns below with a walk. Ops of an unsupported form (non-unit strides, non-constant
// padding) are left for the caller to reject.
void LowerHostTensorOps(mlir::func::FuncOp func);

// One OpRewritePattern per op above (host ops only; a marked in-place insert_slice is left).
void PopulateLowerHostTensorOpsPatterns(mlir::RewritePatternSet& patterns);

// True when `op` is one of the ops above in a form LowerHostTensorOps rewrites.
bool IsLowerableHostTensorOp(mlir::Operation* op);

// Why `op`, one of the ops above in a form it does not rewrite, is not supported (for the
// error that refuses it: "a stride is not 1", ...); empty for any other op.
std::string UnsupportedHostTensorOpForm(mlir::Operation* op);

}  // namespace hexir
