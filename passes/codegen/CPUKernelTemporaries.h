// Where a CPU kernel's temporaries live (hexir-cpu-lower-executables, on the bufferized kernel
// after the kernel lowerings, before the buffer-deallocation pipeline places the frees).
//
// Bufferization allocates a temporary (a convolution's tile before its fused bias and ReLU, a
// fused producer's tile, a row chain's block of rows) with memref.alloc where its tensor was
// created, and a dynamic one is a malloc and a free per workgroup. Two steps keep them off the
// heap:
//
// 1. SinkTemporariesIntoTheirBranch: an alloc whose every use (through views) lies inside one
//    branch of an scf.if (nested ifs too; never into a loop, which would allocate per
//    iteration) moves to the start of that branch, so the paths that never touch it never
//    allocate it. The kernel lowerings leave such temporaries behind: a dynamic export's
//    convolution, whose fused ReLU the input-packing kernel absorbs under a run-time test of
//    its rows, keeps the loop lowering (and its tile of the bias-initialized output) in the
//    test's else branch; that tile (24 x 8 x 32 floats of ShuffleNet's stem: past the stack
//    slot of a run-time size) was a 24 KiB malloc and free per workgroup on the paths that
//    never used it: hexir-bench's profiled calls, whose own allocations interleave with the
//    kernels', timed the stem at 22 us against 10 us static (10.5 after); unprofiled calls
//    changed little (glibc reused the chunk).
// 2. PromoteSmallTemporariesToStack: temporaries become stack buffers at the kernel's entry,
//    one per kernel instead of a malloc and free per workgroup or loop iteration. A static
//    shape is allocated as is; a dynamic one whose sizes have constant upper bounds (a static
//    tile clamped at the end) gets a slot of the bound's size and a view of its run-time
//    sizes; any other dynamic one gets a slot of kDynamicSlotBytes and a run-time choice: the
//    view when its elements fit, else the heap (a dynamic row chain's block: rows of a run-time
//    length, as many as fit L1). Each at most kStackTemporaryBytes, kStackTemporariesBytes in
//    all (workers run on 8 MiB thread stacks; the packed GEMM block takes at most 256 KiB
//    more); larger ones and those a view of which leaves its iteration stay on the heap.
//
// Both leave the values computed unchanged: the same buffers, read and written by the same
// ops, allocated elsewhere.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::codegen {

void SinkTemporariesIntoTheirBranch(mlir::func::FuncOp kernel);
void PromoteSmallTemporariesToStack(mlir::func::FuncOp kernel);

}  // namespace hexir::codegen
