// Small whole reductions recomputed per point (issue #18, passes/dispatch/fusion/README.md):
// a kernel formed from hexir-fuse-small-reductions holds RMSNorm's sum of squares (a
// reduction of the whole input into a rank-0 temporary) ahead of the contraction whose
// output points CUDADistributeThreads spreads over threads. The sum stays outside the
// thread's point loops; every point recomputes it:
//   - a warp per point (hexir.cuda.lanes): the warp's 32 lanes split it and combine with an
//     xor butterfly, so every lane holds the total (LowerWholeReductionsPerWarp), when its
//     extent is at least kMinWarpReduction; below that each lane loops over it alone (five
//     shuffles would cost more than the few steps they save);
//   - a thread per point: the thread computes it alone (convert-linalg-to-loops).
// Shared by CUDADistributeThreads (tensor form, before tiling) and CUDALowerExecutables
// (memref form, after bufferization: the temporary is a stack allocation).
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Support/LogicalResult.h"

namespace hexir::cuda {

// The dispatch group kind of merged sibling projections (hexir-form-dispatch-regions with
// fuse-sibling-reductions: q, k and v GEMVs of one vector, each with its own consumers and
// result): CUDADistributeThreads gives each result's chain its own range of blocks.
inline constexpr char kSiblingProjectionsGroup[] = "sibling_projections";
// On such a kernel once partitioned: each chain's first block and row count, in the order of
// its results ([first0, rows0, first1, rows1, ...]); CUDALowerExecutables prefetches each
// block's own weight rows from it.
inline constexpr char kSiblingBlocksAttr[] = "hexir.cuda.sibling_blocks";

// Recomputing the whole reductions for one point costs at most this many times the point's
// own reduction (as hexir-fuse-small-reductions' kMaxRecomputeRatio: RMSNorm of D before a
// projection row of D multiply-adds).
inline constexpr int64_t kMaxWholeRecomputeRatio = 2;

// The kernel's reductions split into the one computing its output points and the whole ones
// computed ahead of it. `point` is null when there is no single such op. With one reduction
// in all it is `point` (the kernel's only reduction, whatever its shape). Sibling reductions
// (several reductions of the same loops and static extents, none whole: w1 and w3 read by
// SiLU * mul, hexir-form-dispatch-regions' fuse-sibling-reductions) are `point` (the first
// in the kernel's order) and `siblings` (the others, in order): the warp of a point computes
// each in turn.
struct KernelReductions {
  mlir::linalg::LinalgOp point;
  llvm::SmallVector<mlir::linalg::LinalgOp> whole;
  llvm::SmallVector<mlir::linalg::LinalgOp> siblings;
};
KernelReductions SplitKernelReductions(mlir::func::FuncOp kernel);

// `op` reduces everything into a fresh rank-0 temporary (a tensor.empty, possibly filled; or,
// bufferized, a stack or heap allocation) at the top level of `kernel`; also the fill of
// such a temporary.
bool IsWholeReductionIntoTemporary(mlir::Operation* op, mlir::func::FuncOp kernel);

// The whole reductions of `split` may be recomputed for every point: static, one reduction
// loop with a warp-reducible combiner each, and at most kMaxWholeRecomputeRatio times the
// static reduction work of `split.point` in all. Otherwise `why` says what is not.
bool WholeReductionsRecomputable(const KernelReductions& split, std::string& why);

// Bufferized kernel distributed a warp (or several) per point: each whole reduction becomes
// explicit loops in every lane: lanes split extents of at least kMinWarpReduction and combine
// with an xor butterfly (each warp on its own; every lane ends with the total in its own
// copy of the temporary), shorter ones are looped over by each lane alone. Afterwards the
// point's reduction is the kernel's only linalg reduction (what the warp lowering expects).
mlir::LogicalResult LowerWholeReductionsPerWarp(mlir::func::FuncOp kernel);

}  // namespace hexir::cuda
