#include "passes/schedule/Buffers.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "passes/dispatch/InPlaceUpdates.h"

namespace hexir::schedule {

int64_t TiedOperandOf(DispatchOp dispatch, unsigned result) {
  auto tied = dispatch->getAttrOfType<mlir::DenseI64ArrayAttr>(kTiedOperandsAttr);
  if (!tied || result >= tied.size()) return -1;
  return tied[result];
}

mlir::Value TiedOperand(mlir::Operation* op, unsigned result) {
  auto tied = op->getAttrOfType<mlir::DenseI64ArrayAttr>(kTiedOperandsAttr);
  if (!tied || result >= tied.size() || tied[result] < 0) return {};
  if (auto dispatch = llvm::dyn_cast<DispatchOp>(op)) return dispatch.getArgs()[tied[result]];
  if (auto call = llvm::dyn_cast<mlir::func::CallOp>(op)) return call.getOperand(tied[result]);
  return {};
}

llvm::SmallVector<int64_t> TiedCallOperands(mlir::func::FuncOp callee) {
  llvm::SmallVector<int64_t> tied(callee.getNumResults(), -1);
  if (callee.isExternal() || !callee.getBody().hasOneBlock()) return tied;
  mlir::Block& entry = callee.getBody().front();
  for (auto [i, v] : llvm::enumerate(entry.getTerminator()->getOperands()))
    if (auto arg = llvm::dyn_cast<mlir::BlockArgument>(BufferRoot(v)); arg && arg.getOwner() == &entry)
      tied[i] = arg.getArgNumber();
  return tied;
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
    mlir::Value tied = TiedOperand(def, llvm::cast<mlir::OpResult>(v).getResultNumber());
    if (!tied) break;
    v = tied;
  }
  return v;
}

}  // namespace hexir::schedule
