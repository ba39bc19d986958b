#include "passes/dispatch/fusion/RowInsertSelects.h"

#include "dialects/hexir/IR/HexirAttributes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "passes/dispatch/InPlaceUpdates.h"

namespace hexir {
using namespace mlir;

namespace {

// The 1-D row `insert` writes when it is a unit-stride row insert [p, 0] [1, N] of the
// expansion of a tensor<N> into a static tensor<RxN> it may update in place; else null.
Value RowOf(tensor::InsertSliceOp insert, int64_t maxElements) {
  if (insert->getParentOfType<linalg::LinalgOp>()) return {};
  RankedTensorType dest = insert.getDestType(), source = insert.getSourceType();
  if (!dest.hasStaticShape() || dest.getRank() != 2 || source.getRank() != 2 || dest.getNumElements() > maxElements ||
      source.getShape() != ArrayRef<int64_t>{1, dest.getDimSize(1)})
    return {};
  SmallVector<OpFoldResult> offsets = insert.getMixedOffsets();
  std::optional<int64_t> column = getConstantIntValue(offsets[1]);
  if (!column || *column != 0 || !isa<Value>(offsets[0])) return {};
  auto expand = insert.getSource().getDefiningOp<tensor::ExpandShapeOp>();
  if (!expand || expand.getSrcType().getRank() != 1 || !expand->hasOneUse()) return {};
  if (!CanInsertInPlace(insert)) return {};  // unit strides checked there too
  return expand.getSrc();
}

// The position as an i64 host value (the importer's i64, or a cast of the index).
Value PositionAsI64(OpBuilder& b, Location loc, Value pos) {
  if (pos.getType().isInteger(64)) return pos;
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), pos);
}

}  // namespace

SmallVector<linalg::GenericOp> RowInsertsAsSelects(func::FuncOp func, int64_t maxElements) {
  SmallVector<tensor::InsertSliceOp> inserts;
  func.walk([&](tensor::InsertSliceOp insert) {
    if (RowOf(insert, maxElements)) inserts.push_back(insert);
  });
  SmallVector<linalg::GenericOp> selects;
  IRRewriter rw(func.getContext());
  for (tensor::InsertSliceOp insert : inserts) {
    Location loc = insert.getLoc();
    Value row = RowOf(insert, maxElements);
    // The select goes as early as it may: after its row, its position and every other read
    // of the old cache (so that the group, placed at its last member, need not wait for
    // ops after the row such as the other cache's rotary).
    Value offset = cast<Value>(insert.getMixedOffsets()[0]);
    auto cast64 = offset.getDefiningOp<arith::IndexCastOp>();
    Value posSource = cast64 && cast64.getIn().getType().isInteger(64) ? cast64.getIn() : offset;
    Block* block = insert->getBlock();
    Operation* after = nullptr;
    auto later = [&](Operation* op) {
      if (Operation* at = op ? block->findAncestorOpInBlock(*op) : nullptr)
        if (at != insert && at->isBeforeInBlock(insert) && (!after || after->isBeforeInBlock(at))) after = at;
    };
    later(row.getDefiningOp());
    later(posSource.getDefiningOp());
    for (Operation* user : insert.getDest().getUsers()) later(user);
    if (after) rw.setInsertionPointAfter(after);
    else rw.setInsertionPointToStart(block);
    Value pos = PositionAsI64(rw, loc, posSource == offset ? offset : posSource);
    MLIRContext* ctx = func.getContext();
    AffineExpr r = getAffineDimExpr(0, ctx), j = getAffineDimExpr(1, ctx);
    SmallVector<AffineMap> maps = {AffineMap::get(2, 0, {j}, ctx), AffineMap::get(2, 0, {r, j}, ctx)};
    SmallVector<utils::IteratorType> iterators(2, utils::IteratorType::parallel);
    auto select = linalg::GenericOp::create(
        rw, loc, TypeRange{insert.getDestType()}, ValueRange{row}, ValueRange{insert.getDest()}, maps,
        iterators, [&](OpBuilder& b, Location l, ValueRange args) {
          Value index = linalg::IndexOp::create(b, l, 0);
          Value at = arith::IndexCastOp::create(b, l, b.getI64Type(), index);
          Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, at, pos);
          linalg::YieldOp::create(b, l, ValueRange{arith::SelectOp::create(b, l, hit, args[0], args[1])});
        });
    select->setAttr(kInPlaceAttr, rw.getUnitAttr());
    Operation* expand = insert.getSource().getDefiningOp();
    rw.replaceOp(insert, select->getResults());
    rw.eraseOp(expand);
    selects.push_back(select);
  }
  return selects;
}

void UngroupedSelectsToRowInserts(ArrayRef<linalg::GenericOp> selects) {
  for (linalg::GenericOp select : selects) {
    if (select->hasAttr(kDispatchGroupAttr)) continue;
    IRRewriter rw(select.getContext());
    rw.setInsertionPoint(select);
    Location loc = select.getLoc();
    auto cmp = cast<arith::CmpIOp>(cast<arith::SelectOp>(select.getBody()->getTerminator()->getOperand(0).getDefiningOp())
                                       .getCondition()
                                       .getDefiningOp());
    Value pos = arith::IndexCastOp::create(rw, loc, rw.getIndexType(), cmp.getRhs());
    Value row = select.getDpsInputOperand(0)->get();
    auto rowType = cast<RankedTensorType>(row.getType());
    auto expandedType = RankedTensorType::get({1, rowType.getDimSize(0)}, rowType.getElementType());
    Value expanded = tensor::ExpandShapeOp::create(rw, loc, expandedType, row,
                                                   ArrayRef<ReassociationIndices>{{0, 1}});
    SmallVector<OpFoldResult> offsets = {pos, rw.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {rw.getIndexAttr(1), rw.getIndexAttr(rowType.getDimSize(0))};
    SmallVector<OpFoldResult> strides(2, rw.getIndexAttr(1));
    Value cache = select.getDpsInitOperand(0)->get();
    rw.replaceOpWithNewOp<tensor::InsertSliceOp>(select, expanded, cache, offsets, sizes, strides);
  }
}

}  // namespace hexir
