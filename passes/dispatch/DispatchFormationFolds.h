// Folds applied to a function before dispatch regions are formed (FormDispatchRegions), each
// an OpRewritePattern applied once per op by a walk (no fixpoint, no folding, no DCE: the
// region former erases what becomes dead):
//   - a linalg op with a static 0 loop extent is replaced by its inits (it never runs its body;
//     kernel tiling does not support zero-extent loops);
//   - a linalg.generic input produced by a linalg.fill is replaced by the fill's scalar in the
//     body (a fill read as an input would otherwise be a kernel temporary of its full size).
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"

namespace hexir {

void PopulateDispatchFormationFoldPatterns(mlir::RewritePatternSet& patterns);

// Applies the patterns above to the host ops of `func` (never inside another linalg op).
void ApplyDispatchFormationFolds(mlir::func::FuncOp func);

}  // namespace hexir
