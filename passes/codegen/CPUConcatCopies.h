// Concatenations as one copy per source (hexir-cpu-lower-executables, on the tensor kernel
// before bufferization, beside CPUDynamicPad.h's pads).
//
// The ONNX importer's Concat (compiler/importers/onnx LowerConcat) is a generic over the output
// that reads, at position p along the axis, the last source k whose offset off_k <= p:
//
//   out[i] = select(p >= off_K, src_K[.., clamp(p - off_K, 0, size_K - 1), ..],
//              ... select(p >= off_1, src_1[..], src_0[.., clamp(p - off_0, 0, size_0 - 1), ..]))
//
// A compare, a clamp, a select and a bound-checked load per element per source: ShuffleNet's
// dynamic 48 + 48 -> 96-channel concats over 4 x 4 planes took 0.9 us each against 0.1 for the
// static export's. Where every other dim reads the source at the output's position (maybe
// offset by a workgroup's tile) and the axis is not tiled, it becomes, when at run time the
// offsets are the running sums of the sizes from 0 and the last ends at the output's extent
// (the importer's; then each clamp is the identity where its source is selected),
//
//   %r = out; for each k: %r = tensor.insert_slice (extract_slice src_k) into %r[.., off_k, ..]
//
// one unit-stride copy per source (a run dense at run time: one loop, CPUCollapseContiguous-
// Loops.h), and the generic as it was otherwise (an scf.if on that test).
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::codegen {

// Rewrites every such concatenation of `kernel`; returns how many it rewrote.
int LowerConcatenationsToCopies(mlir::func::FuncOp kernel);

}  // namespace hexir::codegen
