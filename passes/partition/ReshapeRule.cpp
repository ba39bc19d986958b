// tensor.collapse_shape / expand_shape: a split moves to the group that holds its dimension
// when it is the group's outermost dimension of an extent other than 1 (rank r's rows stay one
// contiguous block: dimensions of extent 1 before it do not change the layout); a partial value
// stays partial (a reshape moves elements, so a sum, max or min of them commutes with it);
// anything else is made replicated first.
//
//   %c = tensor.collapse_shape %x [[0], [1, 2]] : tensor<8x4x16xf32> into tensor<8x64xf32>
//        (%x split 1)  ==> collapse of the local 8x(4/N)x16 into 8x(64/N)   (%c split 1)
//   %e = tensor.expand_shape %y [[0], [1, 2]] output_shape [8, 4, 16] : tensor<8x64xf32> ...
//        (%y split 1)  ==> expand of the local 8x(64/N) into 8x(4/N)x16     (%e split 1; the
//                          ranks must divide 4: checked like any split)
//   %u = tensor.expand_shape %y [[0], [1, 2]] output_shape [8, 1, 64]
//        (%y split 1)  ==> 8x1x(64/N)                                       (%u split 2)
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "passes/partition/Partitioner.h"

namespace hexir::partition {
namespace {

}  // namespace

std::pair<int64_t, bool> SplitGroupOf(ArrayRef<ReassociationIndices> reassociation, ArrayRef<int64_t> shape,
                                      int64_t dim) {
  for (auto [g, group] : llvm::enumerate(reassociation)) {
    if (!llvm::is_contained(group, dim)) continue;
    bool unitBefore = llvm::all_of(group, [&](int64_t m) { return m >= dim || shape[m] == 1; });
    return {g, unitBefore};
  }
  return {-1, false};
}

int64_t SplitMemberOf(const ReassociationIndices& group, ArrayRef<int64_t> shape) {
  for (int64_t m : group)
    if (shape[m] != 1) return m;
  return group.back();
}

namespace {

FailureOr<bool> partitionCollapse(tensor::CollapseShapeOp op, Partitioner& p) {
  Sharding s = p.lookup(op.getSrc()).sharding;
  auto reassociation = op.getReassociationIndices();
  Sharding result = s;
  if (s.isSplit()) {
    auto [group, outermost] = SplitGroupOf(reassociation, op.getSrcType().getShape(), s.dim);
    if (!outermost) return p.notMatched(op, "split dimension " + std::to_string(s.dim) +
                                                " has a dimension of extent other than 1 before it in its "
                                                "collapsed group");
    result = Sharding::split(group);
  }
  Value local = tensor::CollapseShapeOp::create(p.b, op.getLoc(), p.lookup(op.getSrc()).value,
                                                reassociation);
  p.map(op.getResult(), {local, result});
  return true;
}

FailureOr<bool> partitionExpand(tensor::ExpandShapeOp op, Partitioner& p) {
  Sharding s = p.lookup(op.getSrc()).sharding;
  auto reassociation = op.getReassociationIndices();
  SmallVector<OpFoldResult> shape = op.getMixedOutputShape();
  for (OpFoldResult& size : shape)
    if (auto v = dyn_cast<Value>(size)) size = p.lookup(v).value;
  Sharding result = s;
  if (s.isSplit()) {
    int64_t outer = SplitMemberOf(reassociation[s.dim], op.getResultType().getShape());
    Value extent = getValueOrCreateConstantIndexOp(p.b, op.getLoc(), shape[outer]);
    FailureOr<Value> part = p.splitExtent(
        op, extent, "dimension " + std::to_string(outer) + " of the result of tensor.expand_shape");
    if (failed(part)) return failure();
    shape[outer] = getAsOpFoldResult(*part);
    result = Sharding::split(outer);
  }
  SmallVector<int64_t> staticShape;
  for (OpFoldResult size : shape)
    staticShape.push_back(getConstantIntValue(size).value_or(ShapedType::kDynamic));
  auto type = op.getResultType().clone(staticShape);
  Value local = tensor::ExpandShapeOp::create(p.b, op.getLoc(), type, p.lookup(op.getSrc()).value,
                                              reassociation, shape);
  p.map(op.getResult(), {local, result});
  return true;
}

}  // namespace

FailureOr<bool> PartitionReshape(Operation* op, Partitioner& p) {
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) return partitionCollapse(collapse, p);
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) return partitionExpand(expand, p);
  return p.notMatched(op, "not a tensor.expand_shape or collapse_shape");
}

}  // namespace hexir::partition
