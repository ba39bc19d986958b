// Contiguous trailing loops of elementwise CPU kernels as one loop (hexir-cpu-lower-executables,
// on the tensor kernel before bufferization; for runs of dynamic extent, on the bufferized
// kernel behind a run-time check: CollapseDynamicLoopsAtRunTime below).
//
// LLVM vectorizes innermost loops only, and fully unrolls a short static innermost loop before
// it does: an NCHW op over 32 x 32 planes had its w loop (32) unrolled and its h loop
// vectorized at a stride of 32 elements, a gather and a scatter per vector (x * s[c], the
// squeeze-excitation scale over 1x32x32x32: 18.6 us; as one loop over the 1024 positions of a
// plane: 2.3 us). So the trailing loops that every operand reads in order as a run of its
// dims, or not at all, become one loop over their product:
//
//   generic (d0, d1, d2, d3) ins(s: (d0, d1, 0, 0), x: (d0, d1, d2, d3)) outs(y: (d0, d1, d2, d3))
//     ->  generic (d0, d1, e) ins(s: (d0, d1, 0, 0), collapse(x): (d0, d1, e)) outs(collapse(y))
//         and the result expanded back to y's shape
//
// Only all-parallel `linalg.generic`s without `hexir.*` marks, of static shapes, whose body
// reads no collapsed loop's index, and whose collapsed operands are dense in those dims
// (kernel arguments, temporaries, constants, or slices of them that keep the run's inner dims
// whole), so bufferization collapses each operand's buffer as a view, never a copy.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::codegen {

// Collapses the trailing contiguous loops of every such op of `kernel`.
void CollapseContiguousLoops(mlir::func::FuncOp kernel);

// The same on the bufferized kernel for runs of dynamic extent (dynamic exports), whose
// density the pattern above cannot prove (a workgroup's slice of the output has run-time
// sizes that are other values than the buffer's dims, equal only at run time): each such
// all-parallel generic (its outermost loop, the batch, kept as a loop when it has 3 or more:
// a workgroup's slice of the channels is then still one block) runs as one loop over the run
// when, at run time, every operand's run is one dense block (unit inner stride, each stride
// the next one's times its size), on
// views rebuilt from the strided metadata (unit stride, which collapse_shape cannot give a
// dynamic dim), and as it was otherwise. A hardswish over ? x 576 x ? x ? on a 2 x 2 plane:
// 2.3 us as 4 loops (the inner one of 2), 0.2 us static.
void CollapseDynamicLoopsAtRunTime(mlir::func::FuncOp kernel);

}  // namespace hexir::codegen
