// Sliding-window geometry shared by Conv and the pools (NNConv.cc, NNPool.cc): kernel, strides,
// dilations, explicit or SAME/VALID padding, ceil_mode, and the padded input they read through
// affine maps `o * stride + k * dilation`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/importers/onnx/Context.h"

namespace hexir::importers::onnx {

struct Window {
  int s = 0;  // spatial rank
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<Dim> pad_begin, pad_end;  // per spatial dim
  Shape out;                            // spatial output dims
};

// The window of an N x C x spatial input `x` from the node's attributes.
StatusOr<Window> WindowGeometry(Context& c, const Val& x, const std::vector<int64_t>& kernel,
                                bool ceil_mode);

// x padded with `value` on its spatial dims as the window needs.
Val PadSpatial(Context& c, Val& x, const Window& w, double value);

// "d<i>", an affine map dim.
inline std::string D(int i) { return "d" + std::to_string(i); }

}  // namespace hexir::importers::onnx
