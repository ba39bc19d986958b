#include "passes/dispatch/InPlaceUpdates.h"

#include "dialects/hexir/IR/HexirOps.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "passes/dispatch/LowerTensorOps.h"

namespace hexir {
namespace {
using namespace mlir;

class Ownership {
 public:
  // `v` is consumed by `user` (which mutates or forwards it): nothing else may see v's buffer
  // afterwards, and v's buffer belongs to this program.
  bool ownedAt(Value v, Operation* user) {
    if (v.getParentBlock() != user->getBlock()) return false;  // would run more than once
    unsigned byUser = 0;
    for (OpOperand& use : v.getUses()) {
      if (use.getOwner() == user) {
        ++byUser;
        continue;
      }
      Operation* other = user->getBlock()->findAncestorOpInBlock(*use.getOwner());
      if (!other || !other->isBeforeInBlock(user)) return false;
    }
    return byUser == 1 && fresh(v);
  }

 private:
  // `v`'s buffer is created by this program (not an argument, constant or alias).
  bool fresh(Value v) {
    if (!visiting.insert(v.getAsOpaquePointer()).second) return true;  // a loop: assumed, checked on the other edges
    if (auto arg = dyn_cast<BlockArgument>(v)) return freshArgument(arg);
    Operation* def = v.getDefiningOp();
    unsigned i = cast<OpResult>(v).getResultNumber();
    // A generic updating its init in place (CanUpdateInitInPlace) writes the init's buffer.
    if (auto g = dyn_cast<linalg::GenericOp>(def); g && g->hasAttr(kInPlaceAttr))
      return ownedAt(g.getDpsInitOperand(i)->get(), g);
    if (isa<linalg::LinalgOp, tensor::EmptyOp, tensor::ExtractSliceOp, tensor::PadOp,
            tensor::FromElementsOp>(def))
      return true;
    // A function formed before this one (a callee) already holds dispatch regions: their
    // results are fresh kernel outputs, except an in-place update's (the destination's buffer).
    if (auto region = dyn_cast<DispatchRegionOp>(def)) {
      bool inPlace = false;
      region.walk([&](tensor::InsertSliceOp op) { inPlace |= op->hasAttr(kInPlaceAttr); });
      return !inPlace;
    }
    if (auto insert = dyn_cast<tensor::InsertSliceOp>(def))
      return !insert->hasAttr(kInPlaceAttr) || ownedAt(insert.getDest(), insert);
    if (auto f = dyn_cast<scf::ForOp>(def)) return ownedThroughFor(f, i);
    if (auto w = dyn_cast<scf::WhileOp>(def)) return ownedThroughCondition(w, i);
    if (auto ifOp = dyn_cast<scf::IfOp>(def)) {
      for (Region* r : {&ifOp.getThenRegion(), &ifOp.getElseRegion()}) {
        if (r->empty()) return false;
        auto yield = cast<scf::YieldOp>(r->front().getTerminator());
        if (!ownedAt(yield.getOperand(i), yield)) return false;
      }
      return true;
    }
    if (auto call = dyn_cast<func::CallOp>(def)) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(call, call.getCalleeAttr());
      if (!callee || callee.isExternal() || !callee.getBody().hasOneBlock()) return false;
      auto ret = cast<func::ReturnOp>(callee.getBody().front().getTerminator());
      return ownedAt(ret.getOperand(i), ret);
    }
    return false;
  }

  bool freshArgument(BlockArgument arg) {
    Operation* parent = arg.getOwner()->getParentOp();
    unsigned n = arg.getArgNumber();
    if (auto f = dyn_cast<scf::ForOp>(parent))
      return n > 0 && ownedThroughFor(f, n - 1);  // argument 0 is the induction variable
    if (auto w = dyn_cast<scf::WhileOp>(parent)) {
      if (arg.getOwner() != &w.getBefore().front()) return ownedThroughCondition(w, n);
      auto yield = cast<scf::YieldOp>(w.getAfter().front().getTerminator());
      return ownedAt(w.getInits()[n], w) && ownedAt(yield.getOperand(n), yield);
    }
    return false;  // function arguments and anything else
  }

  // Iteration value i of a for loop (its iter_arg and its result): the init or a yield.
  bool ownedThroughFor(scf::ForOp f, unsigned i) {
    auto yield = cast<scf::YieldOp>(f.getBody()->getTerminator());
    return ownedAt(f.getInitArgs()[i], f) && ownedAt(yield.getOperand(i), yield);
  }
  // Value i a while loop's condition forwards (to the after region and to the results).
  bool ownedThroughCondition(scf::WhileOp w, unsigned i) {
    scf::ConditionOp cond = w.getConditionOp();
    return ownedAt(cond.getArgs()[i], cond);
  }

  llvm::SmallPtrSet<const void*, 16> visiting;
};

}  // namespace

bool CanUpdateInitInPlace(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || op->getNumResults() != 1 || op.getNumReductionLoops() != 0) return false;
  OpOperand* init = op.getDpsInitOperand(0);
  if (!op.getMatchingIndexingMap(init).isIdentity() || !isa<RankedTensorType>(init->get().getType())) return false;
  return Ownership().ownedAt(init->get(), op);
}

bool CanInsertInPlace(tensor::InsertSliceOp op) {
  if (!IsLowerableHostTensorOp(op)) return false;  // unit strides, same rank
  return Ownership().ownedAt(op.getDest(), op);
}

}  // namespace hexir
