// Import-time folding of elementwise ops on known contents (IsKnown: shape computations and
// small constants). PyTorch computes shapes with Equal/Where/Mod/Cast/... on constants and on
// Shape outputs; folding them keeps a static export static and turns what depends on a
// dynamic dim into host `index` arithmetic (Builder's Dim ops), so Reshape, Expand, Pad,
// ConstantOfShape and friends see known operands.
//
// Ops that move elements (Slice, Gather, Concat, Transpose, Expand, Tile, reshapes) and
// reductions fold inside their lowerings through Context (KnownPositions, ReduceKnown).
#pragma once

#include "base/status.h"
#include "compiler/importers/onnx/Context.h"

namespace hexir::importers::onnx {

// Folds c.node when its op type has a fold rule and every input is known: the outputs are
// stored as known values and true is returned. False (nothing stored) when the op has no
// rule, an input is not known, or the result would not be known (too large, f16, a float
// computed from a dynamic dim); an error for what would also fail at run time (integer
// division by zero).
StatusOr<bool> FoldKnownNode(Context& c);

}  // namespace hexir::importers::onnx
