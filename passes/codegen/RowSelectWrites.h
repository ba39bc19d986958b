// A KV-cache row written through a whole-cache select (hexir-prepare-device-loops' form of a
// row write at a device-side position) narrowed to the row it writes, on bufferized kernels.
//
// The form: a linalg.generic with one buffer init (identity map, all loops parallel) whose
// body yields `select(index_cast(linalg.index d) == pos, v, out)` (either operand order of the
// compare, with or without the index_cast), `out` the init's element and `pos` the same for
// every point (a value from outside the body, or a memref.load / tensor.extract at constant
// indices of a buffer from outside). Every point but those with index d == pos yields the
// element it read, so the op is equivalent to the same body over the one slice at d = pos.
// NarrowRowSelectWrites rewrites each such op into:
//   %p   = pos (the load cloned before the op), as an index
//   %row = arith.minui %p, extent(d) - 1        (a negative or too large pos: the last row,
//                                                whose compare then fails: it is left as is)
//   %sub = memref.subview %init[.., %row, ..] [.., 1, ..]
//   linalg.generic over %sub (extent 1 at d), linalg.index d replaced by %row + index d
// so the op touches one row (2 x 32 elements a layer for stories260K instead of 2 x 16384).
// Inputs whose maps use d are not narrowed (the op is left as it was). Not thread-safe beyond
// MLIR's rules for the kernel it is given.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::codegen {

// Narrows every row-select write at the top level of `kernel` (see above); returns how many.
int NarrowRowSelectWrites(mlir::func::FuncOp kernel);

}  // namespace hexir::codegen
