// Loop order and reassociation of reductions in CPU kernels (hexir-cpu-lower-executables),
// on bufferized linalg ops before they become loops, so that LLVM's loop vectorizer turns
// the innermost loop into vector code.
//
// A dot product along a contiguous dimension (y[n] = sum_k W[n][k] x[k]: LLM decode's
// [out][in] weights, attention's q.K^T) keeps its reduction innermost: interchanging it
// outside n would make the inner loop stride through W by a whole row. Such a loop, and any
// other whose innermost loop is a reduction, is vectorized only if its float combiner may be
// reassociated: `AllowReassociationOfInnermostReductions` marks the body's float arithmetic
// `reassoc contract` (partial sums in vector lanes and several accumulators, fused
// multiply-adds), which changes rounding like any blocked summation, never the operation.
#pragma once

#include <cstdint>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace hexir::codegen {

// True when `op`'s innermost loop is a reduction that walks the contiguous (last) dimension
// of an input which also depends on loop `lastParallel`: moving the reduction outside that
// loop would turn contiguous reads into strided ones.
bool ReducesAlongContiguousInput(mlir::linalg::LinalgOp op, int64_t lastParallel);

// Marks `reassoc contract` on the float arith ops in the body of every linalg op of
// `kernel` whose innermost loop is a reduction.
void AllowReassociationOfInnermostReductions(mlir::func::FuncOp kernel);

}  // namespace hexir::codegen
