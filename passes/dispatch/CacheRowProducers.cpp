#include "passes/dispatch/CacheRowProducers.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "passes/dispatch/InPlaceUpdates.h"

namespace hexir {
using namespace mlir;

namespace {

// `insert` is an in-place update whose source is `use`'s value, in `use`'s block.
bool isInPlaceSourceUse(OpOperand& use, Operation* producer) {
  auto insert = dyn_cast<tensor::InsertSliceOp>(use.getOwner());
  return insert && insert->hasAttr(kInPlaceAttr) && &use == &insert.getSourceMutable() &&
         insert->getBlock() == producer->getBlock();
}

// The expansion only inserts unit dimensions: every reassociation group holds one source
// dimension and unit result dimensions.
bool addsOnlyUnitDims(tensor::ExpandShapeOp expand) {
  RankedTensorType result = expand.getResultType();
  for (const ReassociationIndices& group : expand.getReassociationIndices()) {
    int64_t nonUnit = 0;
    for (int64_t d : group) nonUnit += result.getDimSize(d) != 1;
    if (nonUnit > 1) return false;
  }
  return result.hasStaticShape();
}

}  // namespace

void DropUnitReshapesOfInPlaceRows(func::FuncOp func) {
  SmallVector<tensor::InsertSliceOp> updates;
  func.walk([&](tensor::InsertSliceOp insert) {
    if (insert->hasAttr(kInPlaceAttr)) updates.push_back(insert);
  });
  for (tensor::InsertSliceOp insert : updates) {
    auto expand = insert.getSource().getDefiningOp<tensor::ExpandShapeOp>();
    if (!expand || !expand->hasOneUse() || !addsOnlyUnitDims(expand)) continue;
    // The slot keeps its sizes; the source drops the unit dims in order (a rank-reducing
    // insert, valid since the expansion added nothing else).
    insert.getSourceMutable().assign(expand.getSrc());
    expand->erase();
  }
}

bool IsInPlaceRowProducer(Operation* op, bool (*isElementwise)(Operation*)) {
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
  if (!linalgOp || linalgOp.getNumReductionLoops() == 0 || op->getNumResults() != 1 ||
      !op->hasOneUse() || op->hasAttr(kInPlaceAttr))
    return false;
  OpOperand& use = *op->getResult(0).getUses().begin();
  if (isInPlaceSourceUse(use, op)) return true;
  Operation* user = use.getOwner();
  if (user->getBlock() != op->getBlock() || !isElementwise(user) || user->getNumResults() != 1 ||
      !user->hasOneUse())
    return false;
  return isInPlaceSourceUse(*user->getResult(0).getUses().begin(), user);
}

}  // namespace hexir
