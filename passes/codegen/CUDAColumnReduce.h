// Block-wide reductions on CUDA, shared by CUDADistributeThreads (which picks the shapes)
// and CUDALowerExecutables (which rewrites the reduction op):
//  - column reductions: y[.., c] = combine_k f(x[.., k], W[.., k, c]) where the reduced dim
//    k is not contiguous but the output's contiguous dim c is also the contiguous dim of an
//    input read along k (a GEMV x · W with W stored [K][N], column sums). One block per tile
//    of `columns()` output columns: `columnThreads` threads across the tile, each owning
//    `width` consecutive columns (16-byte loads), times `slices` threads down k; partials
//    meet through shuffles (within a warp) and shared memory (across warps);
//  - several warps per row: the warp-reduction kernel (CUDAWarpReduce.h) with
//    `warpsPerPoint` > 1 warps on one output, combined through shared memory.
#pragma once

#include <optional>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

namespace hexir::cuda {

// The H200's SMs, and the threads it keeps resident (2048 an SM): shapes are chosen to
// fill it once.
inline constexpr int64_t kMultiprocessors = 132;
inline constexpr int64_t kResidentThreads = kMultiprocessors * 2048;
// Column kernels: most output rows (the product of the parallel extents other than the
// column's; M of a GEMV batch) and most threads per block.
inline constexpr int64_t kMaxColumnRows = 16;
inline constexpr int64_t kMaxColumnBlock = 512;
// Rows: most warps on one output.
inline constexpr int64_t kMaxWarpsPerPoint = 16;

// The loops of a column reduction: `column` is the output's last (contiguous) dim and
// `reduced` the only reduction loop.
struct ColumnReduction {
  int64_t column;
  int64_t reduced;
};

// `op` is a column reduction when it is warp-reducible (CUDAWarpReduce.h) but not a row
// reduction (WantsWarpReduction), its maps are projected permutations, every input either
// ends with the column dim (read `width` columns at a time) or does not use it (one value
// per k, broadcast over the columns), some input ending with the column dim is read along
// k, and the reduced extent is dynamic or >= kMinWarpReduction.
std::optional<ColumnReduction> MatchColumnReduction(mlir::linalg::LinalgOp op);

struct ColumnTiling {
  int64_t width = 1;          // consecutive columns per thread (one vector load)
  int64_t columnThreads = 1;  // threads across a tile
  int64_t slices = 1;         // threads down k
  int64_t loads = 8;          // k steps per thread whose loads issue together
  int64_t columns() const { return width * columnThreads; }
  int64_t threads() const { return columnThreads * slices; }
};

// The tiling of a column reduction with a static column extent `columns` and `rows` other
// output points (<= kMaxColumnRows), or nullopt. width: 16 bytes of the narrowest input
// read along the columns (at most 8 elements), halved until it divides `columns` (rows of
// identity-layout arguments then start 16-byte aligned); columnThreads 4 with 8 loads in
// flight (64-byte row segments) where that gives >= 2 blocks an SM (264 on the H200), else 2
// with 16 (twice the blocks, the same bytes in flight a thread: on the H200 a 4096-column
// bf16 GEMV took 13.6 instead of 20.1 us, while at 14336 columns 4 x 8 won, 36.8 against
// 43.7 us; bench/gemv/README.md), halved further for narrow outputs so that >= 64 blocks
// run; slices: a power of two that fills kResidentThreads once, within
// [32 / columnThreads, kMaxColumnBlock / columnThreads] and, with a static reduced extent,
// few enough that every thread has `loads` of its rows. A block holds one tile.
std::optional<ColumnTiling> ChooseColumnTiling(mlir::linalg::LinalgOp op,
                                               const ColumnReduction& loops, int64_t columns,
                                               int64_t rows);

// Warps per output of a row (warp) reduction with `points` static outputs and a static
// reduced extent `extent` of elements of `bytes` bytes: doubled from 1, up to
// kMaxWarpsPerPoint, while points * the doubled count stays within the resident warps
// (kResidentThreads / 32) and every lane of the doubled count keeps at least one 16-byte step
// of the extent.
int64_t ChooseWarpsPerPoint(int64_t points, int64_t extent, int64_t bytes);

// A shared-memory array of `count` elements of `element` for `kernel` (a memref.global in
// workgroup memory next to it, moved into the gpu.module with it; see
// CUDALowerExecutables), as a memref value at the builder's insertion point.
mlir::Value WorkgroupArray(mlir::OpBuilder& b, mlir::Location loc, mlir::func::FuncOp kernel,
                           mlir::Type element, int64_t count);

// Rewrites the kernel's only reduction op (bufferized, tiled to one tile of <= columns()
// columns and one row by the distribution) into the column kernel described at the top;
// the output tile's initial values are combined in by the threads owning each column and
// what follows the op in its block (a fused elementwise consumer of the tile) runs after a
// barrier, column c on thread c.
mlir::LogicalResult LowerColumnReduction(mlir::func::FuncOp kernel, const ColumnTiling& tiling);

}  // namespace hexir::cuda
