// Rewrites that let a row chain read its reductions' results directly when an importer keeps
// the reduced dim as a trailing 1 (ONNX keepdims: Softmax, ReduceMean in LayerNormalization):
// a value of [r..., 1] that holds a row value of [r...] read by a generic at (d0, ..., d(n-2), 0)
// is read as the row value at (d0, ..., d(n-2)), so hexir-group-row-chains sees the chain.
//
// A "kept-dims value" of [r..., 1] is a reshape of a value of [r...]: reached through
// tensor.expand_shape / tensor.collapse_shape ops of static shapes, or one expand_shape that
// appends the unit dim ([[0], ..., [n-2, n-1]], any dims). Each an OpRewritePattern on host
// linalg.generic ops, applied once per op by a walk in block order (producers first):
//   - a generic that only appends the unit dim (copy [r...] -> [r..., 1], the importer's
//     dynamic reshape) becomes that tensor.expand_shape;
//   - an all-parallel generic over [r..., 1] whose inputs are kept-dims values read whole and
//     scalars (LayerNormalization's 1 / sqrt(var + eps)) runs over [r...] on the row values
//     instead, its result expanded back to [r..., 1];
//   - last, a generic over the rows (n - 1 all-parallel loops, identity maps: ReduceMean's
//     divide, the rewritten generics above) read only by a generic of n loops, along its
//     rows, is fused into it (upstream elementwise fusion), repeatedly.
//   - an input of a generic of n loops read at (d0, ..., d(n-2), 0) that is a kept-dims value
//     is replaced by its row value read at (d0, ..., d(n-2)).
// Then a tensor.dim of an expand_shape becomes its output_shape entry (the importer's shape
// checks of a dynamic export read the kept-dims value's dims: an outside use of the row value).
// Reshapes and tensor.dim ops left unused are erased. Every rewrite keeps the program's meaning.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"

namespace hexir {

void PopulateKeptDimRowReadPatterns(mlir::RewritePatternSet& patterns);

// Applies the patterns above to the host generics of `func`, then erases dead reshapes and dims.
void ReadRowsThroughKeptDims(mlir::func::FuncOp func);

}  // namespace hexir
