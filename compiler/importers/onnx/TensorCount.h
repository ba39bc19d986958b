// Data-dependent extents (TensorCount.cc): the positions a 0/1 mask selects, counted on the
// device and read back once. Shared by NonZero, Compress, Unique and NonMaxSuppression.
#pragma once

#include "compiler/importers/onnx/Context.h"

namespace hexir::importers::onnx {

// The selected positions of 1-D i64 `mask` (1 = selected, 0 = not).
struct Selection {
  Dim count;      // the host `index` read back from the device (static 0 for an empty mask)
  Val positions;  // [count] i64: the selected indices in increasing order
};
Selection SelectPositions(Context& c, Val& mask);

}  // namespace hexir::importers::onnx
