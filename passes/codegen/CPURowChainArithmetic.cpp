// Reciprocal row divides and sign-free row maxima in row chains (CPURowChainArithmetic.h).
#include "passes/codegen/CPURowChainArithmetic.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hexir::codegen {
namespace {
using namespace mlir;

// True when `v`, a value of `g`'s body, is the same at every step of g's innermost loop: defined
// outside the body, an input read through a map without that loop, the index of another loop,
// or a pure op of such values. The output's block argument is not (a reduction's accumulator
// changes every step; a parallel output is written along the loop).
bool InvariantAlongInnermostLoop(linalg::GenericOp g, Value v) {
  Region& body = g.getRegion();
  if (!body.isAncestor(v.getParentRegion())) return true;
  const unsigned inner = g.getNumLoops() - 1;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner() != &body.front()) return false;
    OpOperand* operand = g.getMatchingOpOperand(arg);
    return !g.isDpsInit(operand) && !g.getMatchingIndexingMap(operand).isFunctionOfDim(inner);
  }
  Operation* def = v.getDefiningOp();
  if (auto index = dyn_cast<linalg::IndexOp>(def)) return index.getDim() != inner;
  if (def->getNumRegions() || !isPure(def)) return false;
  return llvm::all_of(def->getOperands(), [&](Value o) { return InvariantAlongInnermostLoop(g, o); });
}

// x / s -> x * (1 / s) for s invariant along the innermost loop and x not.
struct DivideByRowInvariantAsReciprocal : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp g, PatternRewriter& rewriter) const override {
    if (g.getNumLoops() == 0) return rewriter.notifyMatchFailure(g, "no loops");
    SmallVector<arith::DivFOp> divides;
    for (auto div : g.getBody()->getOps<arith::DivFOp>()) {
      if (!isa<FloatType>(div.getType())) continue;
      if (InvariantAlongInnermostLoop(g, div.getRhs()) && !InvariantAlongInnermostLoop(g, div.getLhs()))
        divides.push_back(div);
    }
    if (divides.empty()) return rewriter.notifyMatchFailure(g, "no divide by a row-invariant value");
    for (arith::DivFOp div : divides) {
      rewriter.setInsertionPoint(div);
      Location loc = div.getLoc();
      auto type = cast<FloatType>(div.getType());
      Value one = arith::ConstantOp::create(rewriter, loc, type, rewriter.getFloatAttr(type, 1.0));
      Value reciprocal = arith::DivFOp::create(rewriter, loc, one, div.getRhs(), div.getFastmathAttr());
      rewriter.replaceOpWithNewOp<arith::MulFOp>(div, div.getLhs(), reciprocal, div.getFastmathAttr());
    }
    return success();
  }
};

// True when every use of `arg` (a block argument of a consumer's body) is the subtrahend of a
// subtraction whose every use is an exponential.
bool OnlyShiftsAnExponential(BlockArgument arg) {
  return llvm::all_of(arg.getUses(), [](OpOperand& use) {
    auto sub = dyn_cast<arith::SubFOp>(use.getOwner());
    if (!sub || use.getOperandNumber() != 1) return false;
    return llvm::all_of(sub->getUsers(), [](Operation* u) { return isa<math::ExpOp>(u); });
  });
}

// The maximumf of a max reduction read only as exp(v - m) gets `nsz`.
struct MaxOfExponentShiftIgnoresZeroSign : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp g, PatternRewriter& rewriter) const override {
    if (g.getNumDpsInits() != 1 || g.getNumReductionLoops() == 0 || !g.hasPureTensorSemantics())
      return rewriter.notifyMatchFailure(g, "not a reduction on tensors with one result");
    auto yield = cast<linalg::YieldOp>(g.getBody()->getTerminator());
    auto max = yield.getValues()[0].getDefiningOp<arith::MaximumFOp>();
    if (!max) return rewriter.notifyMatchFailure(g, "does not yield a maximumf");
    BlockArgument accumulator = g.getMatchingBlockArgument(g.getDpsInitOperand(0));
    if (max.getLhs() != accumulator && max.getRhs() != accumulator)
      return rewriter.notifyMatchFailure(g, "the maximumf does not combine the accumulator");
    arith::FastMathFlags flags = max.getFastmath();
    if (arith::bitEnumContainsAll(flags, arith::FastMathFlags::nsz))
      return rewriter.notifyMatchFailure(g, "already nsz");
    for (OpOperand& use : g->getResult(0).getUses()) {
      auto reader = dyn_cast<linalg::GenericOp>(use.getOwner());
      if (!reader || reader.isDpsInit(&use) || !OnlyShiftsAnExponential(reader.getMatchingBlockArgument(&use)))
        return rewriter.notifyMatchFailure(g, "the max is read other than as exp(v - max)");
    }
    rewriter.modifyOpInPlace(max, [&] { max.setFastmath(flags | arith::FastMathFlags::nsz); });
    return success();
  }
};

}  // namespace

void PopulateRowChainArithmeticPatterns(RewritePatternSet& patterns) {
  patterns.add<DivideByRowInvariantAsReciprocal, MaxOfExponentShiftIgnoresZeroSign>(patterns.getContext());
}

LogicalResult CheapenRowChainArithmetic(func::FuncOp kernel) {
  RewritePatternSet patterns(kernel.getContext());
  PopulateRowChainArithmeticPatterns(patterns);
  GreedyRewriteConfig config;
  config.enableFolding(false);
  if (failed(applyPatternsGreedily(kernel, std::move(patterns), config)))
    return kernel.emitError("row chain arithmetic did not converge");
  return success();
}

}  // namespace hexir::codegen
