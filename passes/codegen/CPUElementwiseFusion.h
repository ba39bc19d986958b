// Elementwise chains of a CPU kernel as one loop nest (hexir-cpu-lower-executables, on the
// tensor kernel before bufferization).
//
// A dispatch region may hold several elementwise linalg ops, y = f(g(h(x))). Lowered one by
// one, each writes its whole tile of intermediates to a fresh buffer and the next reads it
// back: a chain of three over a 1 MiB tile allocates three buffers and moves five times the
// bytes of one pass. Fused, the chain reads its inputs and writes y once, in one loop that
// LLVM vectorizes along the contiguous dimension:
//
//   %a = generic(x) {h}   %b = generic(%a, x) {g}   %c = generic(%b, x) {f}
//     ->  %c = generic(x) {f(g(h(x)), x)}
//
// A producer is fused only when all its loops are parallel and the consumer is its only
// user, into a consumer with all loops parallel that reads it through a permutation (no
// broadcast): a matmul, convolution or reduction is never rewritten (the kernels that match
// them still do), and nothing is computed twice.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LogicalResult.h"

namespace hexir::codegen {

// Fuses every single-use all-parallel linalg producer into its all-parallel consumer, to a
// fixed point.
mlir::LogicalResult FuseElementwiseChains(mlir::func::FuncOp kernel);

}  // namespace hexir::codegen
