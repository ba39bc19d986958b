// Row chains on the CPU: a row softmax (max, exp, sum, divide), a layer norm (mean, variance,
// scaling) or an RMSNorm (sum of squares, scaling) is a chain of generics over the same rows,
// reductions along each row followed by elementwise ops reading their results. Run one
// dispatch per generic, each streams the whole tensor (softmax: x three times, the exp
// temporary twice); in one kernel, every pass over a row can run while the row is in cache.
//
// `hexir-group-row-chains` (passes/dispatch/GroupRowChains.cpp, CPU-only modules) marks such a
// chain `hexir.dispatch_group = "row_chain.N"`, so dispatch formation makes one kernel of it
// (kRowChainGroup on the executable). hexir-cpu-distribute-workgroups splits its rows over
// workgroups as for any kernel, the producers recomputed per workgroup; TileRowChains then
// walks each workgroup's rows in blocks that fit L1, all the chain's ops per block.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"

namespace hexir::codegen {

// The dispatch group kind of a row chain's region and executable.
inline constexpr char kRowChainGroup[] = "row_chain";

// In a kernel of kRowChainGroup: its last op (all-parallel, loops = rows then the row axis)
// is tiled along its rows into blocks of max(1, floor(rowBlockBytes / (3 * row bytes))) rows
// (the row's input, a temporary and the output in `rowBlockBytes`; dynamic row lengths give a
// block size computed at run time), 1 along any earlier row loop, with every producer fused
// into the block loop (the chain's reductions and elementwise ops on the block's rows); copies
// of a producer fused for several users are merged (CSE), so each is computed once per block.
// Errors (a tiling that fails) are reported at the op.
mlir::LogicalResult TileRowChains(mlir::func::FuncOp kernel, int64_t rowBlockBytes);

// Run on the bufferized kernel's module: a block's temporaries of a loop-invariant size (static
// rows, or a block of one row) are allocated once before the block loop instead of per block.
inline constexpr const char* kRowChainBufferPipeline = "builtin.module(func.func(buffer-loop-hoisting))";

}  // namespace hexir::codegen
