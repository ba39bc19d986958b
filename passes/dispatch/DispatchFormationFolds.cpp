#include "passes/dispatch/DispatchFormationFolds.h"

#include "llvm/ADT/BitVector.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace hexir {
namespace {
using namespace mlir;

// Host linalg ops on tensors; ops inside another linalg op's body are kernel code already.
LogicalResult matchHostTensorLinalg(PatternRewriter& rewriter, linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics())
    return rewriter.notifyMatchFailure(op, "not on tensors");
  if (op->getParentOfType<linalg::LinalgOp>())
    return rewriter.notifyMatchFailure(op, "inside another linalg op's body");
  return success();
}

/// A static 0 loop extent: the op never runs its body, its results are its inits.
///
///   %r = linalg.matmul ins(%a, %b : tensor<4x0xf32>, tensor<0x8xf32>)
///                      outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
/// becomes
///   (uses of %r use %f: the K = 0 matmul is its fill)
struct FoldEmptyIterationSpace : OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(linalg::LinalgOp op, PatternRewriter& rewriter) const override {
    if (failed(matchHostTensorLinalg(rewriter, op))) return failure();
    if (!llvm::is_contained(op.getStaticLoopRanges(), int64_t{0}))
      return rewriter.notifyMatchFailure(op, "no static zero loop extent");
    SmallVector<Value> inits(op.getDpsInits());
    rewriter.replaceOp(op, inits);
    return success();
  }
};

/// An input produced by a linalg.fill is read as the fill's scalar.
///
///   %f = linalg.fill ins(%c : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
///   %r = linalg.generic ins(%x, %f) outs(%o) { ^bb0(%a, %b, %out): ... %b ... }
/// becomes
///   %r = linalg.generic ins(%x) outs(%o) { ^bb0(%a, %out): ... %c ... }
struct FoldFillInputs : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp generic,
                                PatternRewriter& rewriter) const override {
    if (failed(matchHostTensorLinalg(rewriter, generic))) return failure();
    // Inputs whose fill scalar has the body argument's type (a fill of another type would need
    // a cast the body does not have).
    SmallVector<OpOperand*> folded;
    for (OpOperand* input : generic.getDpsInputOperands()) {
      auto fill = input->get().getDefiningOp<linalg::FillOp>();
      if (fill && fill.getInputs()[0].getType() ==
                      generic.getMatchingBlockArgument(input).getType())
        folded.push_back(input);
    }
    if (folded.empty()) return rewriter.notifyMatchFailure(generic, "no input is a fill");

    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    llvm::BitVector erase(generic.getBody()->getNumArguments());
    for (OpOperand& operand : generic->getOpOperands()) {
      if (llvm::is_contained(folded, &operand)) {
        erase.set(operand.getOperandNumber());
        continue;
      }
      if (generic.isDpsInput(&operand)) inputs.push_back(operand.get());
      maps.push_back(generic.getMatchingIndexingMap(&operand));
    }
    for (OpOperand* input : folded) {
      Value scalar = input->get().getDefiningOp<linalg::FillOp>().getInputs()[0];
      rewriter.replaceAllUsesWith(generic.getMatchingBlockArgument(input), scalar);
    }
    auto replacement = linalg::GenericOp::create(
        rewriter, generic.getLoc(), generic->getResultTypes(), inputs, generic.getDpsInits(),
        maps, generic.getIteratorTypesArray());
    // Annotations (hexir.device, hexir.dispatch_group, ...) stay with the op.
    replacement->setDiscardableAttrs(generic->getDiscardableAttrDictionary());
    rewriter.inlineRegionBefore(generic.getRegion(), replacement.getRegion(),
                                replacement.getRegion().end());
    replacement.getBody()->eraseArguments(erase);
    rewriter.replaceOp(generic, replacement->getResults());
    return success();
  }
};

}  // namespace

void PopulateDispatchFormationFoldPatterns(RewritePatternSet& patterns) {
  // The empty-extent fold first: an op that never runs needs no fill folded into it.
  patterns.add<FoldEmptyIterationSpace>(patterns.getContext(), /*benefit=*/2);
  patterns.add<FoldFillInputs>(patterns.getContext(), /*benefit=*/1);
}

void ApplyDispatchFormationFolds(func::FuncOp func) {
  RewritePatternSet patterns(func.getContext());
  PopulateDispatchFormationFoldPatterns(patterns);
  walkAndApplyPatterns(func, std::move(patterns));
}

}  // namespace hexir
