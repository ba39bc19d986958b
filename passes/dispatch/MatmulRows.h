// The default hot dim of hexir-specialize-dispatches: M = 1 of a matmul-shaped contraction
// (M = 1 in LLM decode and a one-token prompt's prefill, M = the prompt length otherwise).
// Shared with hexir-inline-unrecordable-calls, which must know on the input which callees
// will hold a specialization switch (several blocks: no longer recordable into a caller).
#pragma once

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"

namespace hexir {

// True when `op` is a matmul-shaped contraction (a named linalg.matmul, or a generic whose
// body multiplies and adds, casts allowed: B as [K][N] or [N][K], the llama importer's
// projections) with no batch dims, whose left operand (input 0) is 2-D with its rows (dim 0)
// the M loop.
bool IsMatmulLhsRow0(mlir::linalg::LinalgOp op);

// IsMatmulLhsRow0 with those rows dynamic: hexir-specialize-dispatches gives it an M = 1 clone.
bool HasDynamicMatmulRows(mlir::linalg::LinalgOp op);

}  // namespace hexir
