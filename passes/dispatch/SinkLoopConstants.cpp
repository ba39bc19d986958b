// Clones a host scalar constant that is used only inside loop bodies into each of those
// bodies, so the loop does not keep it live in a register across iterations (LICM, which
// runs earlier, hoists them out; the VM gains nothing from that for a constant).
//
//   %c = arith.constant 3 : i64              scf.for %i = ... {
//   scf.for %i = ... {                   =>    %c = arith.constant 3 : i64
//     ... %c ...                                ... %c ...
//   }                                         }
//
// Repeated until no constant moves, so a constant used only in an inner loop ends up there.
// Not in the default pipeline: the VM keeps a live register for free but executes a sunk
// constant once per iteration (4 -> 6 instructions per iteration of a small loop).
// Tensor constants stay (each is a ref global loaded where it is defined), as do constants
// with a use outside any loop body (loop bounds and init values included).
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "passes/Passes.h"

namespace hexir {
#define GEN_PASS_DEF_SINKLOOPCONSTANTS
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

// The region of a loop (an op of `block`) that holds `user`, or null when `user` is not
// inside a loop body of an op of `block`.
Region* loopRegionHolding(Operation* user, Block* block) {
  Operation* op = user;
  Region* region = nullptr;
  while (op && op->getBlock() != block) {
    region = op->getParentRegion();
    op = op->getParentOp();
  }
  if (!op || !region || !isa<LoopLikeOpInterface>(op)) return nullptr;
  return region;
}

// Moves `c` into the loop regions that use it; returns the clones (null when it stays).
SmallVector<arith::ConstantOp> sink(arith::ConstantOp c) {
  llvm::SmallSetVector<Region*, 2> regions;
  for (OpOperand& use : c->getUses()) {
    Region* r = loopRegionHolding(use.getOwner(), c->getBlock());
    if (!r) return {};
    regions.insert(r);
  }
  SmallVector<arith::ConstantOp> clones;
  for (Region* r : regions) {
    OpBuilder b = OpBuilder::atBlockBegin(&r->front());
    auto clone = cast<arith::ConstantOp>(b.clone(*c));
    c->replaceUsesWithIf(clone->getResults(), [&](OpOperand& use) {
      return r->isAncestor(use.getOwner()->getParentRegion());
    });
    clones.push_back(clone);
  }
  c.erase();
  return clones;
}

class SinkLoopConstants : public impl::SinkLoopConstantsBase<SinkLoopConstants> {
 public:
  void runOnOperation() override {
    SmallVector<arith::ConstantOp> worklist;
    for (auto func : getOperation().getOps<func::FuncOp>())
      func.walk([&](arith::ConstantOp c) {
        if (!isa<ShapedType>(c.getType()) && !c->use_empty()) worklist.push_back(c);
      });
    while (!worklist.empty()) {
      arith::ConstantOp c = worklist.pop_back_val();
      for (arith::ConstantOp clone : sink(c)) worklist.push_back(clone);
    }
  }
};

}  // namespace
}  // namespace hexir
