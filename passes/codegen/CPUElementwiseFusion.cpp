// Upstream's FuseElementwiseOps alone, not populateElementwiseOpsFusionPatterns: its
// RemoveOutsDependency would give a tile's result a buffer of its own and a copy back into
// the output.
#include "passes/codegen/CPUElementwiseFusion.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hexir::codegen {
namespace {
using namespace mlir;

bool AllParallel(linalg::LinalgOp op) { return op.getNumLoops() == op.getNumParallelLoops(); }

// The producer of `input` (a consumer's input operand) may be folded into the consumer.
bool Fusable(OpOperand& input) {
  auto producer = input.get().getDefiningOp<linalg::GenericOp>();
  auto consumer = dyn_cast<linalg::GenericOp>(input.getOwner());
  if (!producer || !consumer || !consumer.isDpsInput(&input)) return false;
  if (!producer->hasOneUse() || producer->getNumResults() != 1) return false;
  if (!AllParallel(producer) || !AllParallel(consumer)) return false;
  // A broadcast read (the consumer has loops the map drops) would recompute each producer
  // element once per point of those loops: a rotated K row written into every row of a
  // 512-row cache evaluated its sin/cos 512 times (1600x slower than reading the row).
  if (!consumer.getMatchingIndexingMap(&input).isPermutation()) return false;
  return linalg::areElementwiseOpsFusable(&input);
}

// consumer(producer(x), y) -> fused(x, y), one input at a time.
struct FuseProducer : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp consumer, PatternRewriter& rewriter) const override {
    for (OpOperand& input : consumer->getOpOperands()) {
      if (!Fusable(input)) continue;
      Operation* producer = input.get().getDefiningOp();
      FailureOr<linalg::ElementwiseOpFusionResult> fused = linalg::fuseElementwiseOps(rewriter, &input);
      if (failed(fused)) continue;
      for (auto [original, replacement] : fused->replacements)
        rewriter.replaceUsesWithIf(original, replacement,
                                   [&](OpOperand& use) { return use.getOwner() != producer; });
      rewriter.eraseOp(consumer);
      if (producer->use_empty()) rewriter.eraseOp(producer);
      return success();
    }
    return rewriter.notifyMatchFailure(consumer, "no single-use all-parallel producer");
  }
};

}  // namespace

LogicalResult FuseElementwiseChains(func::FuncOp kernel) {
  RewritePatternSet patterns(kernel.getContext());
  patterns.add<FuseProducer>(kernel.getContext());
  return applyPatternsGreedily(kernel, std::move(patterns));
}

}  // namespace hexir::codegen
