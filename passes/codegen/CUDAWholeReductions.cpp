// Whole reductions recomputed per point (CUDAWholeReductions.h). The per-warp form (lane =
// tid % 32, V = 16 bytes of the narrowest input read along k, S = K / 32 V whole steps):
//   acc[u] = e (u < min(S, 8))
//   step s (k = 32 V s + lane V): x = inputs[k .. k + V) (one 16-byte load of each input
//     whose rows are aligned, else V scalar loads); acc[s % 8] = body(x[V-1], ... body(x[0], ..))
//     S <= 32: all S steps unrolled, every load first (RMSNorm of 2048 f32: 16 loads of 16
//     bytes in flight per lane, no loop); else an scf.for over blocks of 8 steps, then the rest
//   for k = 32 V S + lane; k < K; k += 32: acc[0] = body(inputs at k, acc[0])     (the tail)
//   acc = combine(acc[0], acc[1], ...); acc = combine(acc, shfl.xor(acc, 16, 8, 4, 2, 1))
//   tmp = combine(tmp, acc)                                             (every lane: total)
// Every warp sums in the same order, so every row of a kernel sees the same total. Below
// kMinWarpReduction each lane loops over the extent alone (from 0, step 1, no shuffles).
#include "passes/codegen/CUDAWholeReductions.h"

#include <string>

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "passes/codegen/CUDAVectorAccess.h"
#include "passes/codegen/CUDAWarpReduce.h"
#include "passes/codegen/KernelLoweringUtils.h"

namespace hexir::cuda {
using namespace mlir;

bool IsWholeReductionIntoTemporary(Operation* op, func::FuncOp kernel) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || op->getParentOp() != kernel.getOperation() || linalgOp.getNumDpsInits() != 1 ||
      linalgOp.getNumParallelLoops() != 0)
    return false;
  Value init = linalgOp.getDpsInitOperand(0)->get();
  if (cast<ShapedType>(init.getType()).getRank() != 0) return false;
  if (auto fill = init.getDefiningOp<linalg::FillOp>()) init = fill.getDpsInitOperand(0)->get();
  Operation* def = init.getDefiningOp();
  return def && isa<tensor::EmptyOp, memref::AllocaOp, memref::AllocOp>(def);
}

namespace {
// `v` is an argument of `kernel`, or a slice or view of one.
bool isArgumentOrSliceOf(Value v, func::FuncOp kernel) {
  while (Operation* def = v.getDefiningOp()) {
    if (!isa<tensor::ExtractSliceOp, memref::SubViewOp, memref::ReinterpretCastOp>(def)) return false;
    v = def->getOperand(0);
  }
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && arg.getOwner() == &kernel.getBody().front();
}

// Reductions of the same loops (iterators and static extents, one reduction loop each) with
// one result each, reading only the kernel's arguments (so none depends on another's result):
// what one point's warp computes one after another.
bool areSiblings(ArrayRef<linalg::LinalgOp> ops, func::FuncOp kernel) {
  linalg::LinalgOp first = ops.front();
  for (linalg::LinalgOp op : ops)
    if (op.getNumReductionLoops() != 1 || op->getNumResults() > 1 || op.getNumDpsInits() != 1 ||
        llvm::any_of(op.getDpsInputOperands(),
                     [&](OpOperand* in) { return !isArgumentOrSliceOf(in->get(), kernel); }) ||
        ShapedType::isDynamicShape(op.getStaticLoopRanges()) ||
        op.getStaticLoopRanges() != first.getStaticLoopRanges() ||
        op.getIteratorTypesArray() != first.getIteratorTypesArray())
      return false;
  return true;
}
}  // namespace

KernelReductions SplitKernelReductions(func::FuncOp kernel) {
  SmallVector<linalg::LinalgOp> all, others;
  kernel.walk([&](linalg::LinalgOp op) {
    if (op.getNumReductionLoops() > 0) all.push_back(op);
  });
  KernelReductions split;
  if (all.size() == 1) {
    split.point = all.front();
    return split;
  }
  for (linalg::LinalgOp op : all)
    (IsWholeReductionIntoTemporary(op, kernel) ? split.whole : others).push_back(op);
  if (others.size() == 1) split.point = others.front();
  if (others.size() > 1 && split.whole.empty() && areSiblings(others, kernel)) {
    split.point = others.front();
    split.siblings.assign(others.begin() + 1, others.end());
  }
  return split;
}

namespace {
// The static product of `op`'s reduction extents; nullopt when one is dynamic.
std::optional<int64_t> ReductionWork(linalg::LinalgOp op) {
  int64_t work = 1;
  for (auto [n, it] : llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray())) {
    if (it != utils::IteratorType::reduction) continue;
    if (ShapedType::isDynamic(n)) return std::nullopt;
    work *= n;
  }
  return work;
}
}  // namespace

bool WholeReductionsRecomputable(const KernelReductions& split, std::string& why) {
  if (!split.point) {
    why = "no single reduction computes the output points";
    return false;
  }
  std::optional<int64_t> own = ReductionWork(split.point);
  if (!own) {
    why = "the points' reduction has a dynamic extent";
    return false;
  }
  int64_t total = 0;
  for (linalg::LinalgOp op : split.whole) {
    std::optional<int64_t> work = ReductionWork(op);
    if (!work) {
      why = "a whole reduction has a dynamic extent";
      return false;
    }
    if (!WarpReducibleCombiner(op)) {
      why = "a whole reduction is not one loop combined by an associative operation";
      return false;
    }
    total += *work;
  }
  if (total > kMaxWholeRecomputeRatio * *own) {
    why = std::to_string(total) + " iterations of whole reductions per point exceed " +
          std::to_string(kMaxWholeRecomputeRatio) + " x the point's own " + std::to_string(*own);
    return false;
  }
  return true;
}

namespace {
// Independent accumulators of the cooperative form (steps whose loads issue together), and
// the most steps a lane unrolls in full (RMSNorm of 4096 f32: 32 steps of 4).
constexpr int64_t kAccumulators = 8;
constexpr int64_t kMaxUnrolledSteps = 32;

// Replaces `op` (bufferized, one reduction loop, no parallel loop) by the loops described at
// the top of this file.
class WholeReductionLowering {
 public:
  WholeReductionLowering(linalg::LinalgOp op, Operation* combiner)
      : op_(op), combiner_(combiner), b_(op), loc_(op.getLoc()) {}

  LogicalResult lower(bool cooperative) {
    std::optional<int64_t> extent = ReductionWork(op_);
    if (!extent || op_.getNumLoops() != 1)
      return op_.emitError("internal: whole reduction not over one static loop");
    body_ = op_.getBlock();
    acc_ = body_->getArgument(op_.getNumDpsInputs());
    other_ = combiner_->getOperand(0) == acc_ ? combiner_->getOperand(1) : combiner_->getOperand(0);
    Value neutral = arith::ConstantOp::create(b_, loc_, *arith::getNeutralElement(combiner_));
    Value total;
    if (!cooperative) {
      total = scalarLoop(index(0), *extent, 1, neutral);
    } else {
      Value lane = arith::RemUIOp::create(b_, loc_, gpu::ThreadIdOp::create(b_, loc_, gpu::Dimension::x),
                                          index(kWarpSize));
      total = vectorSteps(lane, *extent, neutral);
      total = XorButterfly(b_, loc_, total, kWarpSize, [&](Value x, Value y) { return combine(b_, x, y); });
    }
    OpOperand* out = op_.getDpsInitOperand(0);
    Value result = combine(b_, memref::LoadOp::create(b_, loc_, out->get(), ValueRange{}), total);
    memref::StoreOp::create(b_, loc_, result, out->get(), ValueRange{});
    op_->erase();
    return success();
  }

 private:
  using Loaded = SmallVector<SmallVector<Value>>;  // [input][element of the step]

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b_, loc_, v); }

  Value combine(OpBuilder& nb, Value a, Value other) {
    IRMapping m;
    m.map(acc_, a);
    m.map(other_, other);
    return nb.clone(*combiner_, m)->getResult(0);
  }

  // Input `in`'s index at loop position `k`.
  SmallVector<Value> indices(OpBuilder& nb, OpOperand* in, Value k) {
    return codegen::IndicesAt(nb, loc_, op_.getMatchingIndexingMap(in), ValueRange{k});
  }

  // Whether input `in` is read along the loop in its last dimension only (element k at
  // [..., k]), so `width` consecutive k are one vector load where its rows are aligned.
  bool vectorizable(OpOperand* in, int64_t width) {
    AffineMap map = op_.getMatchingIndexingMap(in);
    if (map.getNumResults() == 0 || map.getResults().back() != getAffineDimExpr(0, op_.getContext()))
      return false;
    for (AffineExpr e : map.getResults().drop_back())
      if (e.isFunctionOfDim(0)) return false;
    return RowsAligned(in->get(), width);
  }

  // Loads of `w` consecutive elements from k on: one vector load for vectorized inputs,
  // else one scalar load per element (one for an input that does not depend on k).
  Loaded loadStep(OpBuilder& nb, Value k, int64_t w, ArrayRef<bool> vectorized) {
    Loaded loaded;
    for (auto [i, in] : llvm::enumerate(op_.getDpsInputOperands())) {
      loaded.emplace_back();
      Type element = getElementTypeOrSelf(in->get().getType());
      if (!op_.getMatchingIndexingMap(in).isFunctionOfDim(0)) {
        loaded.back().assign(w, memref::LoadOp::create(nb, loc_, in->get(), indices(nb, in, k)));
      } else if (vectorized[i]) {
        int64_t bytes = w * element.getIntOrFloatBitWidth() / 8;
        Value v = vector::LoadOp::create(nb, loc_, VectorType::get({w}, element), in->get(),
                                         indices(nb, in, k), /*nontemporal=*/false,
                                         llvm::MaybeAlign(bytes));
        for (int64_t j = 0; j < w; ++j) loaded.back().push_back(vector::ExtractOp::create(nb, loc_, v, j));
      } else {
        for (int64_t j = 0; j < w; ++j)
          loaded.back().push_back(memref::LoadOp::create(nb, loc_, in->get(), indices(nb, in, offset(nb, k, j))));
      }
    }
    return loaded;
  }

  Value offset(OpBuilder& nb, Value k, int64_t j) {
    return j == 0 ? k : arith::AddIOp::create(nb, loc_, k, arith::ConstantIndexOp::create(nb, loc_, j)).getResult();
  }

  // The body applied to the step's `w` elements in order, from `accValue`.
  Value computeStep(OpBuilder& nb, Value k, const Loaded& loaded, int64_t w, Value accValue) {
    for (int64_t j = 0; j < w; ++j) {
      IRMapping m;
      for (auto [i, in] : llvm::enumerate(op_.getDpsInputOperands()))
        m.map(body_->getArgument(in->getOperandNumber()), loaded[i][j]);
      m.map(acc_, accValue);
      for (Operation& inner : body_->without_terminator()) {
        if (auto idx = dyn_cast<linalg::IndexOp>(inner)) {
          m.map(idx.getResult(), offset(nb, k, j));
          continue;
        }
        nb.clone(inner, m);
      }
      accValue = m.lookupOrDefault(body_->getTerminator()->getOperand(0));
    }
    return accValue;
  }

  // for k = from; k < extent; k += step: acc = body(inputs at k, acc)
  Value scalarLoop(Value from, int64_t extent, int64_t step, Value init) {
    SmallVector<bool> scalar(op_.getNumDpsInputs(), false);
    return scf::ForOp::create(b_, loc_, from, index(extent), index(step), ValueRange{init},
                              [&](OpBuilder& nb, Location l, Value k, ValueRange accs) {
                                Loaded loaded = loadStep(nb, k, 1, scalar);
                                scf::YieldOp::create(nb, l, computeStep(nb, k, loaded, 1, accs[0]));
                              })
        .getResult(0);
  }

  // The lane's share of [0, extent): steps of V elements (one 16-byte load of each aligned
  // input) at lane V + 32 V s, all steps unrolled when there are at most kMaxUnrolledSteps
  // (their loads first, then the bodies into kAccumulators partial results), else in blocks
  // of kAccumulators steps; the elements past the last whole step one per lane; the partial
  // results combined.
  Value vectorSteps(Value lane, int64_t extent, Value neutral) {
    int64_t narrowest = 0;
    for (OpOperand* in : op_.getDpsInputOperands()) {
      int64_t bits = getElementTypeOrSelf(in->get().getType()).getIntOrFloatBitWidth();
      if (op_.getMatchingIndexingMap(in).isFunctionOfDim(0) && bits % 8 == 0)
        narrowest = narrowest ? std::min(narrowest, bits / 8) : bits / 8;
    }
    int64_t width = narrowest ? std::min(kMaxVectorAccessWidth, kVectorAccessBytes / narrowest) : 1;
    SmallVector<bool> vectorized(op_.getNumDpsInputs(), false);
    for (; width > 1; width /= 2) {
      bool any = false;
      for (auto [i, in] : llvm::enumerate(op_.getDpsInputOperands()))
        any |= vectorized[i] = vectorizable(in, width);
      if (any) break;
    }
    int64_t chunk = kWarpSize * width, steps = extent / chunk;
    Value laneStart = b_.createOrFold<arith::MulIOp>(loc_, lane, index(width));
    SmallVector<Value> accs(std::min(kAccumulators, std::max<int64_t>(steps, 1)), neutral);
    // Steps [first, last) unrolled at `base` (an index value): loads, then bodies.
    auto unrolled = [&](OpBuilder& nb, Value base, int64_t first, int64_t last, SmallVector<Value>& into) {
      SmallVector<Value> ks;
      SmallVector<Loaded> loaded;
      for (int64_t s = first; s < last; ++s) {
        ks.push_back(arith::AddIOp::create(nb, loc_, base, arith::ConstantIndexOp::create(nb, loc_, s * chunk)));
        loaded.push_back(loadStep(nb, ks.back(), width, vectorized));
      }
      for (int64_t s = first; s < last; ++s) {
        Value& a = into[(s - first) % into.size()];
        a = computeStep(nb, ks[s - first], loaded[s - first], width, a);
      }
    };
    int64_t done = 0;
    if (steps > kMaxUnrolledSteps) {
      int64_t blocks = steps / kAccumulators, blockSize = chunk * kAccumulators;
      auto loop = scf::ForOp::create(
          b_, loc_, index(0), index(blocks * blockSize), index(blockSize), accs,
          [&](OpBuilder& nb, Location l, Value s, ValueRange iter) {
            SmallVector<Value> next(iter.begin(), iter.end());
            unrolled(nb, arith::AddIOp::create(nb, l, s, laneStart), 0, kAccumulators, next);
            scf::YieldOp::create(nb, l, next);
          });
      accs.assign(loop.getResults().begin(), loop.getResults().end());
      done = blocks * kAccumulators;
    }
    unrolled(b_, laneStart, done, steps, accs);
    Value tailStart = arith::AddIOp::create(b_, loc_, index(steps * chunk), lane);
    accs[0] = scalarLoop(tailStart, extent, kWarpSize, accs[0]);
    Value partial = accs[0];
    for (size_t u = 1; u < accs.size(); ++u) partial = combine(b_, partial, accs[u]);
    return partial;
  }

  linalg::LinalgOp op_;
  Operation* combiner_;
  OpBuilder b_;
  Location loc_;
  Block* body_ = nullptr;
  BlockArgument acc_;
  Value other_;
};
}  // namespace

LogicalResult LowerWholeReductionsPerWarp(func::FuncOp kernel) {
  KernelReductions split = SplitKernelReductions(kernel);
  if (!split.point) return success();  // the kernel's only reduction (or none): the warp's own
  for (linalg::LinalgOp op : split.whole) {
    if (!op.hasPureBufferSemantics()) return op.emitError("internal: whole reduction not bufferized");
    Operation* combiner = WarpReducibleCombiner(op);
    std::optional<int64_t> extent = ReductionWork(op);
    if (!combiner || !extent) return op.emitError("internal: whole reduction is not warp-reducible");
    if (failed(WholeReductionLowering(op, combiner).lower(/*cooperative=*/*extent >= kMinWarpReduction)))
      return failure();
  }
  return success();
}

}  // namespace hexir::cuda
