// Transposing loops of a CPU kernel tiled into small square blocks (hexir-cpu-lower-
// executables, on the tensor kernel before bufferization).
//
// An all-parallel linalg op that writes its output in loop order but reads an input whose
// contiguous (last) dimension is walked by another loop than the innermost one (a
// transpose, out[i][j] = x[j][i], or an elementwise op with a transposed operand) reads that
// input a whole row apart at each step of the inner loop: each read is a cache line and a
// page of its own (a 4096 x 4096 f32 transpose: 0.5 GB/s). Tiled, the two loops walk blocks
// of B x B elements (B = one cache line of the element type), so the B lines of the input a
// block touches are read once and each is used B times:
//
//   for i, j: out[i][j] = x[j][i]
//     ->  for i0, j0 (step B): for i in [i0, i0+B), j in [j0, j0+B): out[i][j] = x[j][i]
//
// Every other loop gets tiles of one, so the block loops stay innermost.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LogicalResult.h"

namespace hexir::codegen {

// Tiles every such op of `kernel`; others are left unchanged.
mlir::LogicalResult TileTransposingLoops(mlir::func::FuncOp kernel);

}  // namespace hexir::codegen
