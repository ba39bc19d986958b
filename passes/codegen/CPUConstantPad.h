// Constant pads of a CPU kernel as a fill and a copy (hexir-cpu-lower-executables, on the
// tensor kernel before bufferization).
//
// The ONNX importer's constant pad (compiler/importers/onnx Context::Pad) reaches a kernel as
// an all-parallel generic over the padded result whose body reads the source with
// tensor.extract at clamped coordinates, min(max(i - low, 0), extent - 1), and yields the
// padding value outside the source. Lowered as it is, LLVM does not vectorize it: a compare,
// a clamp and a select per element (1 x 144 x 16 x 16 padded by 1: 20 us alone, ~40 us in
// EfficientNet-B0). Where the body is provably
//
//   out[i] = (low <= i < low + extent(src) in every dim) ? src[i - low] : value
//
// with static shapes and constant lows (a low of 0 folded away: the clamp reads the index
// itself), it becomes
//
//   %f = linalg.fill ins(%value) outs(%out)
//   %r = tensor.insert_slice %src into %f[low...] [extent(src)...] [1...]
//
// which bufferizes to a fill of the output and a copy of the source into its interior, both
// unit-stride loops that LLVM vectorizes (2.6 us). Anything else (dynamic shapes, a tiled pad
// whose indices are offset, a condition that is not exactly the source's bounds, and
// dispatch/LowerTensorOps' form of a tensor.pad, whose coordinates are selected to 0 outside
// the source and which LLVM already vectorizes: 1.7 us) is left as it was; CPUDynamicPad.h
// then takes the dynamic and tiled ones.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::codegen {

// Rewrites every such pad of `kernel`; returns how many it rewrote.
int LowerConstantPadsToCopies(mlir::func::FuncOp kernel);

}  // namespace hexir::codegen
