// Slices as one copy (hexir-cpu-lower-executables, on the tensor kernel before bufferization,
// after CPUConcatCopies.h's concatenations).
//
// The ONNX importer's Slice and Split (compiler/importers/onnx StridedCopy, unit steps) are a
// generic over the output that reads its source at the output's position plus an offset:
//
//   out[i] = src[i_0 + off_0, ..., i_{r-1} + off_{r-1}]
//
// (an offset a constant, a value outside the body or a workgroup's tile offset). Static, LLVM
// turns its loop nest into a copy; with run-time extents each element paid a bound-checked
// load at a computed address in loops too short to vectorize: ShuffleNet's dynamic channel
// splits (96 -> 48 + 48 channels over 4 x 4 planes) took 0.7 us against 0.2 for the static
// export's. Where the output has a dynamic dim, it becomes, when at run time every offset is
// non-negative and the source holds every position read (off_d + extent_d <= source extent),
//
//   %r = tensor.insert_slice (tensor.extract_slice src[off..][extents..][1..]) into out
//
// one unit-stride copy (a dense run at run time where the source's runs are whole: one loop,
// CPUCollapseContiguousLoops.h), and the generic as it was otherwise (an scf.if on that test:
// its reads stay bound-checked).
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::codegen {

// Rewrites every such slice of `kernel` whose output has a dynamic dim; returns how many.
int LowerSlicesToCopies(mlir::func::FuncOp kernel);

}  // namespace hexir::codegen
