// Row chains on CUDA: a row softmax (max, exp, sum, divide), a layer norm (mean, variance,
// scaling) or an RMSNorm (sum of squares, scaling) that hexir-group-row-chains made one kernel
// (codegen::kRowChainGroup, passes/codegen/CPURowChains.h) runs as one block of threads per
// row. Run as one kernel per generic, the softmax streamed its input through DRAM five times
// (max, exp, sum, divide and the exp temporary); as one block per row it reads each row from
// DRAM once (the chain's later passes over the row find it in L1) and writes the output once.
//
// DistributeRowChain, on the tensor-form kernel:
//   1. every all-parallel producer inside the chain is fused into its readers (linalg
//      elementwise fusion: the softmax's exp into the sum and the divide, a norm's mean into
//      the variance and the scaling), so no temporary holds a row: each pass recomputes its
//      elementwise prologue from the inputs, and only the per-row scalars remain;
//   2. the chain's last op is tiled by 1 along every row loop, its producers fused into the
//      tile (a producer fused for several readers is merged again by CSE), and the tile's
//      coordinates are the block's, delinearized from its id: the kernel body is one row;
//   3. the kernel is marked for the one-block lowering (CUDABlockLevels.h): each reduction of
//      the row is a block reduction (strided partials, a butterfly per warp, the warps' partials
//      through shared memory, the result in a shared scalar), each elementwise pass a loop over
//      the row strided by the block's threads, barriers between passes that read what another
//      wrote.
// Static shapes only (hexir-group-row-chains groups CUDA chains only when every member's loops
// are static, with at least kMinRowChainRows rows of at least kMinRowChainLength elements).
#pragma once

#include <cstdint>

#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"

namespace hexir::cuda {

// Chains CUDA groups (hexir-group-row-chains' cuda option): a row shorter than a warp keeps the
// per-generic kernels (a block would idle), and one row (an LLM decode step's norm, which
// hexir-group-small-projections and hexir-fuse-small-reductions handle) is no chain here.
inline constexpr int64_t kMinRowChainLength = 32;
inline constexpr int64_t kMinRowChainRows = 2;

// Whether `exe` holds a row chain (its dispatch group kind is codegen::kRowChainGroup).
bool IsRowChainGroup(ExecutableOp exe);

// The block one row gets: about 8 elements a thread, whole warps, at most `maxThreads`
// (1024 at most). 4096 elements: 512 threads, so four rows (64 KiB of f32) share an SM's L1.
int64_t RowChainThreads(int64_t rowLength, int64_t maxThreads);

// The grid of a distributed row chain: `rows` blocks of `threads`.
struct RowChainGrid {
  int64_t rows = 0, threads = 0;
};

// Rewrites the tensor-form `kernel` of a row chain into one row per block (steps 1 and 2
// above) and returns its grid, or fails (nothing changed that matters: the caller then
// reports the kernel; the grouping's conditions make that an internal error).
mlir::FailureOr<RowChainGrid> DistributeRowChain(mlir::func::FuncOp kernel, int64_t maxThreads);

}  // namespace hexir::cuda
