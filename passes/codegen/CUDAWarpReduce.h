// Which reductions the CUDA backend computes with one warp per output element (shared by
// CUDADistributeThreads, which maps 32 lanes to each point, and CUDALowerExecutables, which
// rewrites the op into lane-strided partials + a shuffle butterfly; 64-bit values are
// shuffled as two 32-bit halves by convert-gpu-to-nvvm), and the xor butterfly that every
// emitter of lane partials (warp reductions, block sums, one-block layers, the quantized
// GEMV, decode attention) ends with.
#pragma once

#include <optional>

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace hexir::cuda {

inline constexpr int64_t kWarpSize = 32;
// The xor butterfly over aligned groups of `lanes` lanes (a power of two, at most kWarpSize):
// for offset = lanes / 2, ..., 1, each value becomes combine(value, its value in lane ^ offset)
// (values interleaved at each offset, in order), so every lane of a group ends with the
// group's combination (combine associative and commutative). Full-warp shuffles: every lane
// of the warp must take part.
inline void XorButterfly(mlir::OpBuilder& b, mlir::Location loc, llvm::MutableArrayRef<mlir::Value> values,
                         int64_t lanes, llvm::function_ref<mlir::Value(mlir::Value, mlir::Value)> combine) {
  for (int32_t offset = static_cast<int32_t>(lanes / 2); offset > 0; offset /= 2)
    for (mlir::Value& v : values)
      v = combine(v, mlir::gpu::ShuffleOp::create(b, loc, v, offset, static_cast<int32_t>(kWarpSize),
                                                  mlir::gpu::ShuffleMode::XOR)
                         .getResult(0));
}
inline mlir::Value XorButterfly(mlir::OpBuilder& b, mlir::Location loc, mlir::Value v, int64_t lanes,
                                llvm::function_ref<mlir::Value(mlir::Value, mlir::Value)> combine) {
  XorButterfly(b, loc, llvm::MutableArrayRef<mlir::Value>(v), lanes, combine);
  return v;
}

// Static reduction extents below this stay in one thread (a warp would idle; 64 = 2 elements
// per lane, an attention head dimension).
inline constexpr int64_t kMinWarpReduction = 64;

// The op combining the accumulator in `op`'s body when `op` is a linalg op with one init of
// f32/f64/i32/i64, exactly one reduction loop, and a body of one of the forms
//   yield combine(f(inputs), acc)
//   yield select(c(inputs), combine(f(inputs), acc), acc)     (argmax: the first index
//                                                              holding the maximum)
// whose combiner is an associative, commutative arith op with a neutral element e (addf,
// mulf, maximumf, minimumf, addi, muli, andi, ori, xori, max/min). The second form is
// combine(select(c, f, e), acc), since combine(e, acc) = acc; so in both forms the body
// folds one contribution per element into acc, and partial results of any split of the
// reduced extent (each started from e) combine with the combiner alone. Null otherwise.
inline mlir::Operation* WarpReducibleCombiner(mlir::linalg::LinalgOp op) {
  using namespace mlir;
  if (op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 1) return nullptr;
  Type element = getElementTypeOrSelf(op.getDpsInitOperand(0)->get().getType());
  if (!element.isF32() && !element.isF64() && !element.isInteger(32) && !element.isInteger(64))
    return nullptr;
  for (OpOperand* in : op.getDpsInputOperands())
    if (!isa<ShapedType>(in->get().getType())) return nullptr;
  Block* body = op.getBlock();
  BlockArgument acc = body->getArgument(op.getNumDpsInputs());
  Value yielded = body->getTerminator()->getOperand(0);
  Operation* combiner = nullptr;
  if (auto select = yielded.getDefiningOp<arith::SelectOp>();
      select && select.getFalseValue() == acc && acc.hasNUses(2)) {
    // acc's only other use is the combiner, whose only use is the select: neither c nor
    // f depends on acc.
    combiner = select.getTrueValue().getDefiningOp();
    if (!combiner || combiner->getBlock() != body || !combiner->hasOneUse()) return nullptr;
  } else {
    SmallVector<Operation*> combiners;
    if (!matchReduction({acc}, 0, combiners) || combiners.size() != 1) return nullptr;
    combiner = combiners.front();
    if (!acc.hasOneUse() || yielded != combiner->getResult(0)) return nullptr;
  }
  if (combiner->getNumOperands() != 2 || combiner->getNumResults() != 1) return nullptr;
  if (!isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
           arith::MinNumFOp, arith::AddIOp, arith::MulIOp, arith::AndIOp, arith::OrIOp,
           arith::XOrIOp, arith::MaxSIOp, arith::MinSIOp, arith::MaxUIOp, arith::MinUIOp>(
          combiner))
    return nullptr;
  if (!arith::getNeutralElement(combiner)) return nullptr;
  // Exactly one operand is acc (combine(acc, acc) is not a reduction of the inputs).
  if ((combiner->getOperand(0) == acc) == (combiner->getOperand(1) == acc)) return nullptr;
  return combiner;
}

// The one linalg op of `kernel` with a reduction loop and its combiner (WarpReducibleCombiner),
// for lowering a kernel distributed as a warp or column reduction. The combiner is null when
// the kernel has no such op, several, or one that is not reducible.
struct KernelReduction {
  mlir::linalg::LinalgOp op;
  mlir::Operation* combiner = nullptr;
};
inline KernelReduction SoleKernelReduction(mlir::func::FuncOp kernel) {
  KernelReduction r;
  int64_t candidates = 0;
  kernel.walk([&](mlir::linalg::LinalgOp candidate) {
    if (candidate.getNumReductionLoops() == 0) return;
    r.op = candidate;
    ++candidates;
  });
  if (r.op && candidates == 1) r.combiner = WarpReducibleCombiner(r.op);
  return r;
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
