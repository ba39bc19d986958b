#include "passes/codegen/RowSelectWrites.h"

#include <optional>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace hexir::codegen {
using namespace mlir;

namespace {

// A row-select write found in a generic: the selected loop and the position value.
struct RowSelect {
  unsigned dim;
  Value pos;  // in the body, or defined above the op
};

// The loop whose linalg.index `v` is (through an optional index_cast), if any.
std::optional<unsigned> IndexOfLoop(Value v) {
  if (auto cast = v.getDefiningOp<arith::IndexCastOp>()) v = cast.getIn();
  if (auto index = v.getDefiningOp<linalg::IndexOp>()) return index.getDim();
  return std::nullopt;
}

// The buffer a chain of views (subview, cast, reshape) is over.
Value RootBuffer(Value v) {
  while (Operation* def = v.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def)) v = view.getViewSource();
    else if (auto cast = dyn_cast<memref::CastOp>(def)) v = cast.getSource();
    else break;
  }
  return v;
}

// Some op of `kernel` writes (a view of) `buffer`: a linalg init, a copy's target, a store.
bool WrittenInKernel(Value buffer, func::FuncOp kernel) {
  Value root = RootBuffer(buffer);
  WalkResult found = kernel.walk([&](Operation* op) {
    SmallVector<Value> targets;
    if (auto l = dyn_cast<linalg::LinalgOp>(op)) targets.append(l.getDpsInits().begin(), l.getDpsInits().end());
    if (auto copy = dyn_cast<memref::CopyOp>(op)) targets.push_back(copy.getTarget());
    if (auto store = dyn_cast<memref::StoreOp>(op)) targets.push_back(store.getMemRef());
    for (Value t : targets)
      if (RootBuffer(t) == root) return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return found.wasInterrupted();
}

// `v` is the same for every point of `op`: defined outside its body, or a constant, or a
// load at such indices of a buffer from outside that no op of `kernel` writes (the load is
// hoisted above `op`, where nothing orders it after such a write).
bool PointInvariant(Value v, linalg::GenericOp op, func::FuncOp kernel) {
  Operation* def = v.getDefiningOp();
  if (!def || !op->isAncestor(def)) return !isa<BlockArgument>(v) || !op->isAncestor(v.getParentBlock()->getParentOp());
  if (isa<arith::ConstantOp>(def)) return true;
  if (auto load = dyn_cast<memref::LoadOp>(def))
    return !op->isAncestor(load.getMemRef().getParentBlock()->getParentOp()) &&
           !WrittenInKernel(load.getMemRef(), kernel) &&
           llvm::all_of(load.getIndices(), [&](Value o) { return PointInvariant(o, op, kernel); });
  return false;
}

std::optional<RowSelect> MatchRowSelect(linalg::GenericOp op, func::FuncOp kernel) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 0)
    return std::nullopt;
  OpOperand* init = op.getDpsInitOperand(0);
  auto type = dyn_cast<MemRefType>(init->get().getType());
  if (!type || !type.hasStaticShape() || !op.getMatchingIndexingMap(init).isIdentity())
    return std::nullopt;
  auto yield = cast<linalg::YieldOp>(op.getBody()->getTerminator());
  auto select = yield.getValues()[0].getDefiningOp<arith::SelectOp>();
  if (!select || select.getFalseValue() != op.getMatchingBlockArgument(init)) return std::nullopt;
  auto cmp = select.getCondition().getDefiningOp<arith::CmpIOp>();
  if (!cmp || cmp.getPredicate() != arith::CmpIPredicate::eq) return std::nullopt;
  for (auto [index, pos] : {std::pair(cmp.getLhs(), cmp.getRhs()), std::pair(cmp.getRhs(), cmp.getLhs())}) {
    std::optional<unsigned> dim = IndexOfLoop(index);
    if (!dim || !PointInvariant(pos, op, kernel) || type.getShape()[*dim] <= 1) continue;
    // The index must be compared in a type that holds every row number exactly.
    if (index.getType() != pos.getType()) continue;
    bool inputUsesDim = llvm::any_of(op.getDpsInputOperands(), [&](OpOperand* in) {
      return op.getMatchingIndexingMap(in).isFunctionOfDim(*dim);
    });
    if (inputUsesDim) continue;
    return RowSelect{*dim, pos};
  }
  return std::nullopt;
}

// Clones `v`'s in-body definition (a constant, a load at invariant indices) before
// `op`, or returns `v` when it is defined outside.
Value HoistInvariant(OpBuilder& b, Value v, linalg::GenericOp op, IRMapping& mapping) {
  Operation* def = v.getDefiningOp();
  if (!def || !op->isAncestor(def)) return v;
  for (Value operand : def->getOperands()) mapping.map(operand, HoistInvariant(b, operand, op, mapping));
  return b.clone(*def, mapping)->getResult(cast<OpResult>(v).getResultNumber());
}

void Narrow(IRRewriter& rw, linalg::GenericOp op, const RowSelect& match) {
  Location loc = op.getLoc();
  rw.setInsertionPoint(op);
  IRMapping mapping;
  Value pos = HoistInvariant(rw, match.pos, op, mapping);
  if (!pos.getType().isIndex()) pos = arith::IndexCastOp::create(rw, loc, rw.getIndexType(), pos);
  Value init = op.getDpsInitOperand(0)->get();
  auto type = cast<MemRefType>(init.getType());
  Value last = arith::ConstantIndexOp::create(rw, loc, type.getShape()[match.dim] - 1);
  Value row = arith::MinUIOp::create(rw, loc, pos, last);
  SmallVector<OpFoldResult> offsets(type.getRank(), rw.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes, strides(type.getRank(), rw.getIndexAttr(1));
  for (int64_t n : type.getShape()) sizes.push_back(rw.getIndexAttr(n));
  offsets[match.dim] = row;
  sizes[match.dim] = rw.getIndexAttr(1);
  Value slot = memref::SubViewOp::create(rw, loc, init, offsets, sizes, strides);
  auto narrowed = linalg::GenericOp::create(rw, loc, TypeRange{}, op.getDpsInputs(), ValueRange{slot},
                                            op.getIndexingMapsArray(), op.getIteratorTypesArray());
  narrowed->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  rw.cloneRegionBefore(op.getRegion(), narrowed.getRegion(), narrowed.getRegion().end());
  for (auto index : llvm::to_vector(narrowed.getBody()->getOps<linalg::IndexOp>())) {
    if (index.getDim() != match.dim) continue;
    rw.setInsertionPointAfter(index);
    auto shifted = arith::AddIOp::create(rw, loc, row, index);
    rw.replaceAllUsesExcept(index, shifted, shifted);
  }
  rw.eraseOp(op);
}

}  // namespace

int NarrowRowSelectWrites(func::FuncOp kernel) {
  IRRewriter rw(kernel.getContext());
  int narrowed = 0;
  for (auto op : llvm::to_vector(kernel.getBody().front().getOps<linalg::GenericOp>()))
    if (std::optional<RowSelect> match = MatchRowSelect(op, kernel)) {
      Narrow(rw, op, *match);
      ++narrowed;
    }
  return narrowed;
}

}  // namespace hexir::codegen
