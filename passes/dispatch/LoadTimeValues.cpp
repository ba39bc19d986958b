#include "passes/dispatch/LoadTimeValues.h"

#include "dialects/hexir/IR/HexirAttributes.h"
#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "passes/dispatch/InPlaceUpdates.h"

namespace hexir {
using namespace mlir;

bool IsParameterArgument(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || !cast<ShapedType>(v.getType()).hasStaticShape()) return false;
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (!func || !func.isPublic() || arg.getOwner() != &func.getBody().front()) return false;
  if (!func.getArgAttr(arg.getArgNumber(), kParameterAttr)) return false;
  for (OpOperand& use : v.getUses()) {
    auto d = dyn_cast<DispatchOp>(use.getOwner());
    if (!d) continue;
    if (auto tied = d->getAttrOfType<DenseI64ArrayAttr>(kTiedOperandsAttr))
      if (llvm::is_contained(tied.asArrayRef(), int64_t(use.getOperandNumber()))) return false;
  }
  return true;
}

Value ThroughStaticReshapes(Value v) {
  while (Operation* def = v.getDefiningOp()) {
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp>(def) ||
        !cast<RankedTensorType>(v.getType()).hasStaticShape())
      break;
    v = def->getOperand(0);
  }
  return v;
}

LoadTimeKind ClassifyLoadTime(Value v) {
  if (!isa<ShapedType>(v.getType())) {
    // Scalars: constants only.
    return matchPattern(v, m_Constant()) ? LoadTimeKind::kConstant : LoadTimeKind::kRunTime;
  }
  v = ThroughStaticReshapes(v);
  if (IsParameterArgument(v)) return LoadTimeKind::kParameter;
  return isa_and_nonnull<GlobalLoadOp, arith::ConstantOp>(v.getDefiningOp()) ? LoadTimeKind::kConstant
                                                                              : LoadTimeKind::kRunTime;
}

}  // namespace hexir
