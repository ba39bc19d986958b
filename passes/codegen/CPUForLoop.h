// The loop builder of the CPU kernel emitters (convolutions, matmul micro-kernel, matvec).
// Header-only.
#pragma once

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace hexir::codegen {

// An scf.for from `lb` to `ub` by `step` at `b`'s insertion point, with `body(induction
// variable)` emitted inside it, before its terminator; `b`'s insertion point is restored
// after it (the next op follows the loop).
inline void EmitForLoop(mlir::OpBuilder& b, mlir::Location loc, mlir::Value lb, mlir::Value ub,
                        mlir::Value step, llvm::function_ref<void(mlir::Value)> body) {
  auto loop = mlir::scf::ForOp::create(b, loc, lb, ub, step);
  mlir::OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  body(loop.getInductionVar());
}

}  // namespace hexir::codegen
