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
// Trailing reduction loops likewise (a global average pool's h and w: one reduction loop of
// h * w that LLVM vectorizes with partial sums, where the unrolled w loop of 16 stayed scalar:
// EfficientNet-B0's pool over 144 x 16 x 16 9.5 -> 1.5 us), when no output reads them and every input
// reads them as one dense run.
//
// Only `linalg.generic`s without `hexir.*` marks (parallel loops, then only reductions), of static shapes, whose body
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
// 2.3 us as 4 loops (the inner one of 2), 0.2 us static. Likewise trailing reductions that no
// output reads and every input reads as one run (a dynamic export's global average pools,
// the plane one reduction loop: EfficientNet-B0's 17 pools 50 -> 16 us a call, static 22).
// Such a reduced run of 1, 4 or 9 positions at run time (pools over 1 x 1, 2 x 2 and 3 x 3
// planes) takes a copy of that loop on views of the static length: LLVM unrolls it and
// vectorizes across the outputs, where a loop of a few iterations per output stayed scalar
// (ShuffleNet v2's global pool over 1024 x 2 x 2: 2.0-3.6 -> 0.7-0.9 us, static 0.6).
void CollapseDynamicLoopsAtRunTime(mlir::func::FuncOp kernel);
// The innermost loop that is still short after that (a plane of at most `maxRun` positions:
// NCHW's 4 x 4 and 2 x 2 planes, the bias and activation after a convolution over them) LLVM
// unrolls fully and then leaves scalar, one load, op and store per element. On the bufferized
// kernel, after the math approximations (row chains excepted: CPURowChains.h tiles them):
// every all-parallel `linalg.generic` without `hexir.*` marks, on f32 buffers, whose innermost
// loop (static extent 2..maxRun; outer loops static or of run-time extent: a dynamic export's
// bias over ? x 32 rows, which LLVM vectorized across rows with gathers, 0.6 us static 0.13
// for 20 rows) each operand reads as its last dim at unit
// stride or not at all, whose body is lane-wise arith on f32 and integers (math ops only
// where LLVM has a vector intrinsic: fma, abs, sqrt, floor, ceil, copysign),
// becomes loops over the outer dims and, per run of `lanes` positions of the inner one,
// vector loads (a broadcast scalar for operands that do not read it), the body on vectors and
// vector stores (a last run of fewer lanes as a narrower vector).
// `onlyRunTimeLoops` (row chains): only ops with a loop of run-time extent, the elementwise ops
// of a dynamic export's block of rows, which LLVM vectorized across the rows with gathers and
// scatters, or along rows of a run-time length 4 lanes at a time; there the innermost loop may
// be of run-time length (whole vectors, then a masked one; no integer division in the body).
// Blocks whose types are static are left to LLVM as before; a static export's block whose row
// length is a run-time value in its type (a tile clamped at the end that later folds to a
// constant: the encoder's 8 x 10 x 10 softmax) takes the masked form too (2.89 -> 2.75 us).
// Without `onlyRunTimeLoops`, a copy (a body that only yields an input) whose innermost loop
// is of run-time length and read by every operand takes that masked form too: a dynamic
// export's pad or concatenation into a strided window of a small plane, whose rows of 2 or 4
// LLVM left scalar (RegNet-400MF's pads over 2 x 2 and 4 x 4 planes 1.5-2x faster, the model
// 0.94x); ops that compute keep LLVM's loops (a guarded form slowed convolution epilogues).
void VectorizeShortContiguousRuns(mlir::func::FuncOp kernel, int64_t lanes, int64_t maxRun,
                                  bool onlyRunTimeLoops = false);

// A `linalg.fill` of a buffer whose dims are one dense block (identity layout, static or
// run-time sizes, or static strides of one) as a fill of its one-dimensional view, on the
// bufferized kernel. Filled as it is, a static plane whose rows are not a multiple of the
// vector width becomes loops that LLVM unrolls inside and vectorizes across rows with scatter
// stores: a constant pad's fill of 1 x 24 x 34 x 34 (ShuffleNet's max pool, CPUConstantPad.h)
// took 68 scatters, 9.5 us for the pad, 3.5 us in the dynamic export, whose fill was already
// one run.
void CollapseDenseFills(mlir::func::FuncOp kernel);

}  // namespace hexir::codegen
