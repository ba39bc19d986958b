// A row written in place into a larger buffer (an LLM's KV-cache update: insert_slice at a
// run-time position, passes/dispatch/InPlaceUpdates.h) is computed inside the update's
// dispatch when it comes from a reduction (a GEMV, a matmul row) read nowhere else, alone or
// through elementwise ops (a rounding to the cache's type): the producer writes its output
// straight into the cache slot, one dispatch instead of two (the decode step's V projection:
// 13 dispatches a layer instead of 14).
//
//   %v = linalg.generic {reduction} ...  : tensor<Nxf32>           (a GEMV)
//   %r = tensor.expand_shape %v [[0, 1]] : tensor<Nxf32> into tensor<1xNxf32>
//   %c = tensor.insert_slice %r into %cache[%pos, 0] [1, N] [1, 1] {hexir.in_place}
// becomes, before dispatch regions form (DropUnitReshapesOfInPlaceRows),
//   %c = tensor.insert_slice %v into %cache[%pos, 0] [1, N] [1, 1] {hexir.in_place}
// (rank-reducing: the same slot), and the GEMV is then a fusable producer of the update
// (IsInPlaceRowProducer): the update's region computes it, codegen tiles the row's copy into
// the slot and fuses the GEMV into each tile (CUDA: a warp per element, CPU: rows per
// workgroup). A row that needs other rows' values (a rotary embedding reading its pair
// element through tensor.extract) keeps its producer apart: the reshape has another use.
//
// Pure IR rewrites and predicates; thread-compatible.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Operation.h"

namespace hexir {

// Rewrites every in-place insert_slice (kInPlaceAttr) of `func` whose source is a
// tensor.expand_shape adding only unit dimensions, used nowhere else, into the rank-reducing
// insert of the expansion's source (same offsets, sizes and strides: the same slot).
void DropUnitReshapesOfInPlaceRows(mlir::func::FuncOp func);

// `op` is a linalg op with reduction loops and one result, used once in its block: by an
// in-place insert_slice as its source, or by an elementwise generic (`isElementwise`) whose
// one use is that (the rounding of a row to the cache's element type).
bool IsInPlaceRowProducer(mlir::Operation* op, bool (*isElementwise)(mlir::Operation*));

}  // namespace hexir
