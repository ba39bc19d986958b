#include "passes/dispatch/InPlaceUpdates.h"

#include "dialects/hexir/IR/HexirAttributes.h"
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
      // A use inside `user`'s regions (a dispatch region's capture) is `user`'s own.
      Operation* other = user->getBlock()->findAncestorOpInBlock(*use.getOwner());
      if (other == user) {
        ++byUser;
        continue;
      }
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
    // results are fresh kernel outputs, except an in-place update's, which is its
    // destination's buffer (owned when the destination was, consumed by the region).
    if (auto region = dyn_cast<DispatchRegionOp>(def)) {
      Value yielded = cast<YieldOp>(region.getBody().front().getTerminator()).getValues()[i];
      Operation* inner = yielded.getDefiningOp();
      if (!inner || !region->isProperAncestor(inner)) return false;  // a capture passed through
      Value destination;
      if (auto insert = dyn_cast<tensor::InsertSliceOp>(inner); insert && insert->hasAttr(kInPlaceAttr))
        destination = insert.getDest();
      if (auto g = dyn_cast<linalg::GenericOp>(inner); g && g->hasAttr(kInPlaceAttr))
        destination = g.getDpsInitOperand(0)->get();
      if (!destination) return true;
      Operation* d = destination.getDefiningOp();
      return (d && region->isProperAncestor(d)) || ownedAt(destination, region);
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
    if (auto f = dyn_cast<func::FuncOp>(parent)) return donatedArgument(f, n);
    return false;  // anything else
  }

  // Argument n of `f` is donated by every caller: `f` is private in a module of one device,
  // its symbol is used only by calls, and each call's operand n is owned at that call (its
  // last use there). Then `f` may update it in place and the caller sees the update through
  // the call's result (schedule/Buffers.h: the call's result is tied to that operand).
  bool donatedArgument(func::FuncOp f, unsigned n) {
    if (!f.isPrivate() || f.isExternal() || !f.getBody().hasOneBlock()) return false;
    auto module = f->getParentOfType<ModuleOp>();
    if (!module || module->hasAttr(kDevicesAttr)) return false;
    std::optional<SymbolTable::UseRange> uses = SymbolTable::getSymbolUses(f, module);
    if (!uses || uses->empty()) return false;
    for (const SymbolTable::SymbolUse& use : *uses) {
      auto call = dyn_cast<func::CallOp>(use.getUser());
      if (!call || call.getCallee() != f.getName() || n >= call.getNumOperands()) return false;
      if (!ownedAt(call.getOperand(n), call)) return false;
    }
    return true;
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
  // Unit strides, same rank (a rank-reducing insert is expanded first, LowerHostTensorOps).
  if (!IsLowerableHostTensorOp(op) || op.getSourceType().getRank() != op.getDestType().getRank()) return false;
  return Ownership().ownedAt(op.getDest(), op);
}

}  // namespace hexir
