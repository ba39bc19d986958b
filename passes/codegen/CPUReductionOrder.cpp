// LLVM vectorizes a float reduction only with reassociation allowed; the flags are placed on
// the linalg body so they survive convert-linalg-to-loops and convert-arith-to-llvm.
#include "passes/codegen/CPUReductionOrder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace hexir::codegen {
using namespace mlir;

bool ReducesAlongContiguousInput(linalg::LinalgOp op, int64_t lastParallel) {
  int64_t inner = op.getNumLoops() - 1;
  if (inner < 0 || op.getIteratorTypesArray()[inner] != utils::IteratorType::reduction)
    return false;
  MLIRContext* ctx = op.getContext();
  AffineExpr innerDim = getAffineDimExpr(inner, ctx);
  AffineExpr parallelDim = getAffineDimExpr(lastParallel, ctx);
  for (OpOperand* input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (map.getNumResults() == 0 || map.getResults().back() != innerDim) continue;
    if (llvm::is_contained(map.getResults(), parallelDim)) return true;
  }
  return false;
}

void AllowReassociationOfInnermostReductions(func::FuncOp kernel) {
  auto flags = arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;
  kernel.walk([&](linalg::LinalgOp op) {
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
    if (iterators.empty() || iterators.back() != utils::IteratorType::reduction) return;
    if (op->getNumRegions() != 1) return;
    op->getRegion(0).walk([&](arith::ArithFastMathInterface math) {
      arith::FastMathFlagsAttr old = math.getFastMathFlagsAttr();
      arith::FastMathFlags now = old ? old.getValue() | flags : flags;
      math->setAttr(math.getFastMathAttrName(),
                    arith::FastMathFlagsAttr::get(kernel.getContext(), now));
    });
  });
}

}  // namespace hexir::codegen
