// Which reductions the CUDA backend computes with one warp per output element (shared by
// CUDADistributeThreads, which maps 32 lanes to each point, and CUDALowerExecutables, which
// rewrites the op into lane-strided partials + a shuffle butterfly).
#pragma once

#include <optional>

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace hexir::cuda {

inline constexpr int64_t kWarpSize = 32;
// Static reduction extents below this stay in one thread (a warp would idle).
inline constexpr int64_t kMinWarpReduction = 128;

// The op combining the accumulator in `op`'s body when `op` is a linalg op with one init of
// f32/i32, exactly one reduction loop, and a body `yield combine(f(inputs), acc)` whose
// combiner is an associative, commutative arith op with a neutral element (addf, mulf,
// maximumf, minimumf, addi, muli, andi, ori, xori, max/min). Null otherwise.
inline mlir::Operation* WarpReducibleCombiner(mlir::linalg::LinalgOp op) {
  using namespace mlir;
  if (op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 1) return nullptr;
  Type element = getElementTypeOrSelf(op.getDpsInitOperand(0)->get().getType());
  if (!element.isF32() && !element.isInteger(32)) return nullptr;
  for (OpOperand* in : op.getDpsInputOperands())
    if (!isa<ShapedType>(in->get().getType())) return nullptr;
  Block* body = op.getBlock();
  SmallVector<Operation*> combiners;
  BlockArgument acc = body->getArgument(op.getNumDpsInputs());
  if (!matchReduction({acc}, 0, combiners) || combiners.size() != 1) return nullptr;
  Operation* combiner = combiners.front();
  if (combiner->getNumOperands() != 2 || combiner->getNumResults() != 1) return nullptr;
  if (!isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
           arith::MinNumFOp, arith::AddIOp, arith::MulIOp, arith::AndIOp, arith::OrIOp,
           arith::XOrIOp, arith::MaxSIOp, arith::MinSIOp, arith::MaxUIOp, arith::MinUIOp>(
          combiner))
    return nullptr;
  if (!arith::getNeutralElement(combiner)) return nullptr;
  if (combiner->getOperand(0) != acc && combiner->getOperand(1) != acc) return nullptr;
  if (!acc.hasOneUse()) return nullptr;
  if (body->getTerminator()->getOperand(0) != combiner->getResult(0)) return nullptr;
  return combiner;
}

// True when `op` should get a warp per output: reducible, the reduced dimension is the
// contiguous (last) dimension of every input indexed by it (so the lanes' loads coalesce;
// this excludes matmul, whose B is indexed (k, j)), and the reduction extent is dynamic or
// at least kMinWarpReduction.
inline bool WantsWarpReduction(mlir::linalg::LinalgOp op) {
  if (!WarpReducibleCombiner(op)) return false;
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  llvm::SmallVector<mlir::utils::IteratorType> it = op.getIteratorTypesArray();
  int64_t reduced = -1;
  for (auto [d, t] : llvm::enumerate(it))
    if (t == mlir::utils::IteratorType::reduction) reduced = d;
  for (mlir::OpOperand* in : op.getDpsInputOperands()) {
    mlir::AffineMap map = op.getMatchingIndexingMap(in);
    for (unsigned r = 0; r < map.getNumResults(); ++r)
      if (map.getResult(r).isFunctionOfDim(reduced) &&
          (r + 1 != map.getNumResults() ||
           map.getResult(r) != mlir::getAffineDimExpr(reduced, op.getContext())))
        return false;
  }
  return mlir::ShapedType::isDynamic(ranges[reduced]) || ranges[reduced] >= kMinWarpReduction;
}

}  // namespace hexir::cuda
