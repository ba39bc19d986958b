#include "passes/schedule/Buffers.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "passes/dispatch/InPlaceUpdates.h"

namespace hexir::schedule {

int64_t TiedOperandOf(DispatchOp dispatch, unsigned result) {
  auto tied = dispatch->getAttrOfType<mlir::DenseI64ArrayAttr>(kTiedOperandsAttr);
  if (!tied || result >= tied.size()) return -1;
  return tied[result];
}

bool IsAlias(mlir::Operation* op) {
  return llvm::isa<mlir::tensor::ExpandShapeOp, mlir::tensor::CollapseShapeOp,
                   mlir::tensor::CastOp>(op);
}

mlir::Value BufferRoot(mlir::Value v) {
  while (mlir::Operation* def = v.getDefiningOp()) {
    if (IsAlias(def)) {
      v = def->getOperand(0);
      continue;
    }
    auto dispatch = llvm::dyn_cast<DispatchOp>(def);
    if (!dispatch) break;
    int64_t operand = TiedOperandOf(dispatch, llvm::cast<mlir::OpResult>(v).getResultNumber());
    if (operand < 0) break;
    v = dispatch.getArgs()[operand];
  }
  return v;
}

}  // namespace hexir::schedule
