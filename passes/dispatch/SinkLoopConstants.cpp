// Clones a host scalar constant that is used only inside loop bodies into each of those
// bodies, so the loop does not keep it live in a register across iterations (LICM, which
// runs earlier, hoists them out; the VM gains nothing from that for a constant).
// One rewrite pattern (SinkConstantIntoLoops), applied greedily to the used scalar constants
// and their clones until no constant moves, so a constant used only in an inner loop ends up
// there.
// Not in the default pipeline: the VM keeps a live register for free but executes a sunk
// constant once per iteration (4 -> 6 instructions per iteration of a small loop).
// Tensor constants stay (each is a ref global loaded where it is defined), as do constants
// with a use outside any loop body (loop bounds and init values included).
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
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

/// A host scalar constant whose every use lies in loop bodies of ops of its block moves into
/// each of those bodies (one clone per body, at its top); the clones are visited again, so a
/// constant used only in an inner loop ends up there.
///   %c = arith.constant 3 : i64            scf.for %i = ... {
///   scf.for %i = ... { ... %c ... }   =>     %c = arith.constant 3 : i64
///                                            ... %c ...
///                                          }
struct SinkConstantIntoLoops : OpRewritePattern<arith::ConstantOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::ConstantOp c, PatternRewriter& rewriter) const override {
    if (isa<ShapedType>(c.getType()))
      return rewriter.notifyMatchFailure(c, "a tensor constant stays (a ref global loaded once)");
    if (c->use_empty()) return rewriter.notifyMatchFailure(c, "unused");
    llvm::SmallSetVector<Region*, 2> regions;
    for (OpOperand& use : c->getUses()) {
      Region* r = loopRegionHolding(use.getOwner(), c->getBlock());
      if (!r) return rewriter.notifyMatchFailure(c, "used outside a loop body");
      regions.insert(r);
    }
    for (Region* r : regions) {
      rewriter.setInsertionPointToStart(&r->front());
      Operation* clone = rewriter.clone(*c);
      rewriter.replaceUsesWithIf(c->getResults(), clone->getResults(), [&](OpOperand& use) {
        return r->isAncestor(use.getOwner()->getParentRegion());
      });
    }
    rewriter.eraseOp(c);
    return success();
  }
};

class SinkLoopConstants : public impl::SinkLoopConstantsBase<SinkLoopConstants> {
 public:
  void runOnOperation() override {
    SmallVector<Operation*> constants;
    for (auto func : getOperation().getOps<func::FuncOp>())
      func.walk([&](arith::ConstantOp c) {
        if (!isa<ShapedType>(c.getType()) && !c->use_empty()) constants.push_back(c);
      });
    RewritePatternSet patterns(&getContext());
    patterns.add<SinkConstantIntoLoops>(&getContext());
    // Only these constants and their clones are visited (the driver would erase a dead one);
    // nothing is folded, merged or hoisted (constant CSE would undo the sinking).
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps)
        .enableFolding(false)
        .enableConstantCSE(false)
        .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyOpPatternsGreedily(constants, std::move(patterns), config))) signalPassFailure();
  }
};

}  // namespace
}  // namespace hexir
