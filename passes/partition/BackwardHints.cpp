// Backward propagation: the split each value's consumers ask of it, computed before the
// forward rewrite (Partition.cpp) from the function's result annotations and ops' own
// `hexir.sharding`, walking the body in reverse. The forward rules take a hint as one more
// candidate for the op producing the value (after the operands' splits, before replicated),
// so work feeding a split result is split from its start instead of computed whole on every
// rank and sliced at the end.
//
//   %c = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x4xf32>)     (both replicated)
//   %r = arith.maximumf %c, %zeros : tensor<8x4xf32>
//   return %r  {hexir.sharding = #hexir.sharding<split 1>}
//   hints: %r split 1 -> %c, %zeros split 1 (elementwise) -> %w split 1 (loop n of the matmul)
//   ==> %w1 = extract_slice of %w (free); the matmul computes 8x(4/N); nothing is gathered.
//
// Through linalg ops (projected-permutation maps): a split of result i at position d whose
// output map has a parallel loop L there asks each input holding L at position p for split
// p, and each tensor the body reads with tensor.extract at `linalg.index L` in position p
// (a gather's table) for split p. Through elementwise ops: every tensor operand of the
// result's rank gets the same split. Through expand_shape / collapse_shape: a split that
// maps to one dimension of the other side (ReshapeRule.cpp: the group's first extent other
// than 1). Other ops stop the propagation. A value's first request wins (its last consumer in
// program order, or its own annotation, which always wins).
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "passes/partition/Partitioner.h"

namespace hexir::partition {
namespace {

void askThroughLinalg(linalg::LinalgOp op, Partitioner& p) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  for (AffineMap map : maps)
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/true)) return;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    Sharding s = p.hint(result);
    if (!s.isSplit()) continue;
    AffineMap out = maps[op.getNumDpsInputs() + i];
    auto loop = dyn_cast<AffineDimExpr>(out.getResult(s.dim));
    if (!loop || iterators[loop.getPosition()] != utils::IteratorType::parallel) continue;
    for (OpOperand* in : op.getDpsInputOperands()) {
      if (!isa<RankedTensorType>(in->get().getType())) continue;
      AffineMap map = maps[in->getOperandNumber()];
      for (auto [pos, expr] : llvm::enumerate(map.getResults()))
        if (auto d = dyn_cast<AffineDimExpr>(expr); d && d.getPosition() == loop.getPosition())
          p.ask(in->get(), Sharding::split(pos));
    }
    op->getRegion(0).walk([&](tensor::ExtractOp extract) {
      if (op->isAncestor(extract.getTensor().getParentBlock()->getParentOp())) return;
      for (auto [pos, index] : llvm::enumerate(extract.getIndices()))
        if (auto l = index.getDefiningOp<linalg::IndexOp>(); l && l.getDim() == loop.getPosition())
          p.ask(extract.getTensor(), Sharding::split(pos));
    });
  }
}

void askThroughReshape(Operation* op, Partitioner& p) {
  Sharding s = p.hint(op->getResult(0));
  if (!s.isSplit()) return;
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    ReassociationIndices group = collapse.getReassociationIndices()[s.dim];
    p.ask(collapse.getSrc(), Sharding::split(SplitMemberOf(group, collapse.getSrcType().getShape())));
  } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    auto reassociation = expand.getReassociationIndices();
    auto shape = expand.getResultType().getShape();
    auto [group, unitBefore] = SplitGroupOf(reassociation, shape, s.dim);
    if (unitBefore && group >= 0 && SplitMemberOf(reassociation[group], shape) == s.dim)
      p.ask(expand.getSrc(), Sharding::split(group));
  }
}

void askThroughElementwise(Operation* op, Partitioner& p) {
  if (op->getNumResults() != 1) return;
  Sharding s = p.hint(op->getResult(0));
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!s.isSplit() || !type) return;
  for (Value v : op->getOperands())
    if (auto t = dyn_cast<RankedTensorType>(v.getType()); t && t.getRank() == type.getRank()) p.ask(v, s);
}

}  // namespace

void Partitioner::ask(Value v, Sharding s) {
  if (s.isSplit() && isa<RankedTensorType>(v.getType())) hints.try_emplace(v, s);
}

Sharding Partitioner::hint(Value v) const {
  auto it = hints.find(v);
  return it == hints.end() ? Sharding::replicated() : it->second;
}

void Partitioner::askBackwards(Block& body, ArrayRef<Sharding> resultShardings) {
  for (auto [v, s] : llvm::zip(body.getTerminator()->getOperands(), resultShardings)) ask(v, s);
  for (Operation& op : llvm::reverse(body.without_terminator())) {
    if (auto pinned = op.getAttrOfType<ShardingAttr>(kShardingAttr); pinned && op.getNumResults() == 1) {
      Sharding s = Sharding::fromAttr(pinned);
      if (s.isSplit()) hints[op.getResult(0)] = s;  // the op's own annotation over its consumers'
    }
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(&op)) {
      if (linalgOp.hasPureTensorSemantics()) askThroughLinalg(linalgOp, *this);
    } else if (op.hasTrait<OpTrait::Elementwise>() && op.getNumRegions() == 0) {
      askThroughElementwise(&op, *this);
    } else if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op)) {
      askThroughReshape(&op, *this);
    }
  }
}

}  // namespace hexir::partition
