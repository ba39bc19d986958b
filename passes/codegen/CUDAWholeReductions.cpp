// Whole reductions recomputed per point (CUDAWholeReductions.h). The per-warp form:
//   acc = e;  for k = lane; k < K; k += 32: acc = body(inputs at k, acc)     (lane = tid % 32)
//   acc = combine(acc, shfl.xor(acc, 16, 8, 4, 2, 1))                        (every lane: total)
//   tmp = combine(tmp, acc)
// or, below kMinWarpReduction, the same loop from 0 step 1 in each lane without shuffles.
#include "passes/codegen/CUDAWholeReductions.h"

#include <string>

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "passes/codegen/CUDAWarpReduce.h"

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
// Replaces `op` (bufferized, one reduction loop, no parallel loop) by the loop above.
LogicalResult LowerOne(linalg::LinalgOp op, Operation* combiner, bool cooperative) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  std::optional<int64_t> extent = ReductionWork(op);
  if (!extent || op.getNumLoops() != 1)
    return op.emitError("internal: whole reduction not over one static loop");
  auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  Value lane = index(0);
  if (cooperative)
    lane = arith::RemUIOp::create(b, loc, gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x),
                                  index(kWarpSize));
  Block* body = op.getBlock();
  BlockArgument acc = body->getArgument(op.getNumDpsInputs());
  Value otherOperand =
      combiner->getOperand(0) == acc ? combiner->getOperand(1) : combiner->getOperand(0);
  auto combine = [&](OpBuilder& nb, Value a, Value other) {
    IRMapping m;
    m.map(acc, a);
    m.map(otherOperand, other);
    return nb.clone(*combiner, m)->getResult(0);
  };
  auto load = [&](OpBuilder& nb, OpOperand* operand, Value k) -> Value {
    AffineMap map = op.getMatchingIndexingMap(operand);
    SmallVector<Value> indices;
    for (unsigned r = 0; r < map.getNumResults(); ++r)
      indices.push_back(affine::AffineApplyOp::create(nb, loc, map.getSubMap({r}), ValueRange{k}));
    return memref::LoadOp::create(nb, loc, operand->get(), indices);
  };
  Value neutral = arith::ConstantOp::create(b, loc, *arith::getNeutralElement(combiner));
  auto loop = scf::ForOp::create(
      b, loc, lane, index(*extent), index(cooperative ? kWarpSize : 1), ValueRange{neutral},
      [&](OpBuilder& nb, Location l, Value k, ValueRange accs) {
        IRMapping m;
        for (OpOperand* in : op.getDpsInputOperands())
          m.map(body->getArgument(in->getOperandNumber()), load(nb, in, k));
        m.map(acc, accs[0]);
        for (Operation& inner : body->without_terminator()) {
          if (auto idx = dyn_cast<linalg::IndexOp>(inner)) {
            m.map(idx.getResult(), k);
            continue;
          }
          nb.clone(inner, m);
        }
        scf::YieldOp::create(nb, l, m.lookupOrDefault(body->getTerminator()->getOperand(0)));
      });
  Value total = loop.getResult(0);
  if (cooperative)
    for (int32_t offset = kWarpSize / 2; offset > 0; offset /= 2) {
      Value other =
          gpu::ShuffleOp::create(b, loc, total, offset, kWarpSize, gpu::ShuffleMode::XOR).getResult(0);
      total = combine(b, total, other);
    }
  OpOperand* out = op.getDpsInitOperand(0);
  Value result = combine(b, memref::LoadOp::create(b, loc, out->get(), ValueRange{}), total);
  memref::StoreOp::create(b, loc, result, out->get(), ValueRange{});
  op->erase();
  return success();
}
}  // namespace

LogicalResult LowerWholeReductionsPerWarp(func::FuncOp kernel) {
  KernelReductions split = SplitKernelReductions(kernel);
  if (!split.point) return success();  // the kernel's only reduction (or none): the warp's own
  for (linalg::LinalgOp op : split.whole) {
    if (!op.hasPureBufferSemantics()) return op.emitError("internal: whole reduction not bufferized");
    Operation* combiner = WarpReducibleCombiner(op);
    std::optional<int64_t> extent = ReductionWork(op);
    if (!combiner || !extent) return op.emitError("internal: whole reduction is not warp-reducible");
    if (failed(LowerOne(op, combiner, /*cooperative=*/*extent >= kMinWarpReduction))) return failure();
  }
  return success();
}

}  // namespace hexir::cuda
