// hexir-generalize-elementwise-ops: named elementwise linalg ops (`linalg.add`, `linalg.mul`,
// `linalg.exp`, `linalg.max`, ... as torch-mlir, StableHLO and hand-written MLIR produce them)
// become the `linalg.generic` they stand for, after the shape checks (which name the op) and
// before dispatch formation.
//
// Dispatch formation fuses elementwise generics into one kernel, and the CPU codegen steps for
// elementwise loops (CPUElementwiseFusion.h, CPUCollapseContiguousLoops.h: one loop over a
// dense run, checked at run time for run-time extents) match generics: a named op was a
// dispatch of its own with a loop per dim. `linalg.add` then `linalg.mul` over 1 x 48 x 8 x 8
// were two dispatches; with run-time dims each took 0.8-0.9 us on this machine (four loops, the
// inner one of 8 elements) where the same two generics run as one dispatch of 0.3-0.4 us.
//
// `linalg.broadcast` and `linalg.transpose` too: as generics they fuse into their consumer
// like the importers' broadcasts and transposes (a broadcast bias is read where the add needs
// it, never materialized; a transpose of constants stays a dispatch of its own, lifted to load:
// FormDispatchRegions' isConstantLayoutChange).
//
// Generalized: named ops (not `linalg.generic`) whose loops are all parallel, whose inputs are
// tensors or buffers read through projected permutations and whose inits are written through
// the identity map. Not: `linalg.fill` (its scalar), `linalg.copy` (several lowerings match
// copies), contractions, convolutions, reductions.
// Tests: tests/lit/dispatch/generalize_elementwise_ops.mlir.
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace hexir {
namespace {
using namespace mlir;

bool IsNamedElementwise(linalg::LinalgOp op) {
  if (isa<linalg::GenericOp, linalg::CopyOp, linalg::FillOp>(op.getOperation())) return false;
  if (op.getNumLoops() == 0 || op.getNumParallelLoops() != op.getNumLoops()) return false;
  if (!op.hasPureTensorSemantics() && !op.hasPureBufferSemantics()) return false;
  for (OpOperand& operand : op->getOpOperands()) {
    if (!isa<ShapedType>(operand.get().getType())) return false;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (op.isDpsInit(&operand) ? !map.isIdentity() : !map.isProjectedPermutation()) return false;
  }
  return true;
}

class GeneralizeElementwiseOps : public PassWrapper<GeneralizeElementwiseOps, OperationPass<func::FuncOp>> {
 public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GeneralizeElementwiseOps)
  StringRef getArgument() const override { return "hexir-generalize-elementwise-ops"; }
  StringRef getDescription() const override {
    return "Rewrites named elementwise linalg ops (identity maps, parallel loops) as linalg.generic";
  }
  void getDependentDialects(DialectRegistry& registry) const override {
    registry.insert<linalg::LinalgDialect>();
  }
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (IsNamedElementwise(op)) ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::generalizeNamedOp(rewriter, op))) {
        op->emitError("cannot be rewritten as a linalg.generic");
        return signalPassFailure();
      }
    }
  }
};

}  // namespace

// Declared in compiler/Pipeline.cpp (a new header or Passes.td entry would make Bazel
// recompile all of //passes).
std::unique_ptr<mlir::Pass> CreateGeneralizeElementwiseOps() { return std::make_unique<GeneralizeElementwiseOps>(); }
void RegisterGeneralizeElementwiseOps() { mlir::registerPass(&CreateGeneralizeElementwiseOps); }

}  // namespace hexir
