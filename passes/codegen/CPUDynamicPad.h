// Pads of run-time extents, or tiled ones, as a fill and a copy (hexir-cpu-lower-executables,
// on the tensor kernel before bufferization, after CPUConstantPad.h's static rewrite).
//
// The ONNX importer's pad (compiler/importers/onnx Context::Pad) is a generic over the padded
// result reading its source at clamped coordinates. In a dynamic export its extents are
// kernel arguments, so the clamped read is a data-dependent index (KernelChecks.h adds a bound
// check per element) and LLVM vectorizes nothing: MobileNetV3's 12 pads took 122 us dynamic
// against 11.5 us static. After workgroup distribution the pad is also a tile: its position
// along a split dim is `index + offset`. Where the body is provably, per dim d,
//
//   read  src[p_d]                 with p_d = i_d + off_d            (a dim not padded), or
//   read  src[clamp(s_d, 0, E_d - 1)] with s_d = i_d + off_d - low_d, inside iff 0 <= s_d < E_d
//         (s_d = i_d + off_d where a low of 0 was folded away: an end-only pad)
//   out[i] = inside in every padded dim ? that read : value
//
// (off_d, low_d, E_d values defined outside the body, or constants; off_d absent when the dim
// is not tiled), it becomes
//
//   %f = linalg.fill ins(%value) outs(%out)
//   %s = tensor.extract_slice %src[srcOff...] [size...] [1...]
//   %r = tensor.insert_slice %s into %f[lo...] [size...] [1...]
//
// with, per padded dim (O_d the output's extent, L = low_d - off_d, E = min(E_d, dim(src, d))):
// lo = clamp(L, 0, O_d), hi = clamp(L + E, lo, O_d), size = hi - lo, srcOff = lo - L; per dim
// not padded: lo = 0, size = O_d, srcOff = off_d. These are exactly the output positions whose
// condition holds, read where the generic read them, so any low (negative: a crop), any tile
// and any extents give the same result; E is clamped to the source's extent so that a wrong
// argument cannot read outside it (the generic's bound check would have reported it; here the
// region past the source is padded instead). A fill and a unit-stride copy, both of which
// LLVM vectorizes. Anything else is left as it was.
//
// A pad read only as a depthwise convolution's x (fused into its dispatch; tensor.dim ops of
// it, which workgroup distribution leaves, read no element), padding only
// dims 2 and 3, untiled there, with constant lows L >= 0: its window is placed at L itself
// (lo = L, size = clamp(O - L, 0, E), source offset 0: the same elements; nothing copied when
// L >= O), the static offsets CPUConvolutionDepthwise.h needs to stage from the source
// instead of this padded copy.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::codegen {

// Rewrites every such pad of `kernel`; returns how many it rewrote.
int LowerDynamicPadsToCopies(mlir::func::FuncOp kernel);

}  // namespace hexir::codegen
