// Rejects input the compiler cannot compile, with an error at the offending op, before
// any transformation runs (so errors point at the user's IR, not at generated IR).
#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "passes/ElementTypeCode.h"
#include "passes/Passes.h"
#include "passes/dispatch/LowerTensorOps.h"

namespace hexir {
#define GEN_PASS_DEF_VERIFYINPUT
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

// Element types with a hal/element_types.def code.
bool isSupportedElement(Type t) { return elementTypeCode(t) != 0; }

bool isSupportedScalar(Type t) { return isSupportedElement(t) || t.isIndex(); }

// Scalars a host function can take: those with a VM value kind.
bool isSupportedHostScalar(Type t) {
  return t.isF32() || t.isF64() || t.isInteger(32) || t.isInteger(64) || t.isIndex() ||
         t.isInteger(1);
}

class VerifyInput : public impl::VerifyInputBase<VerifyInput> {
 public:
  using VerifyInputBase::VerifyInputBase;

  void runOnOperation() override {
    bool ok = true;
    getOperation().walk([&](Operation* op) {
      if (!succeeded(check(op))) ok = false;
    });
    if (!ok) signalPassFailure();
  }

 private:
  LogicalResult check(Operation* op) {
    if (isa<ModuleOp>(op)) return success();
    // Ops of a named linalg op's implicit body have no location: blame the linalg op.
    while (isa<UnknownLoc>(op->getLoc()) && op->getParentOp() &&
           !isa<func::FuncOp>(op->getParentOp()))
      op = op->getParentOp();
    StringRef dialect = op->getDialect() ? op->getDialect()->getNamespace() : "";
    bool inKernel = op->getParentOfType<linalg::LinalgOp>() != nullptr;
    bool known = isa<func::FuncOp, func::ReturnOp, func::CallOp>(op) || dialect == "linalg" ||
                 dialect == "arith" || (dialect == "math" && inKernel) ||
                 isa<scf::ForOp, scf::WhileOp, scf::IfOp, scf::YieldOp, scf::ConditionOp>(op) ||
                 isa<tensor::EmptyOp, tensor::ExpandShapeOp, tensor::CollapseShapeOp,
                     tensor::DimOp, tensor::ExtractOp, tensor::CastOp>(op) ||
                 (!inKernel && IsLowerableHostTensorOp(op)) ||
                 (isa<tensor::YieldOp>(op) && isa<tensor::PadOp>(op->getParentOp())) ||
                 (!inKernel && (GetCollective(op) || isa<ChannelRankOp, ChannelCountOp, CheckOp>(op)));
    if (!known) {
      InFlightDiagnostic error = op->emitError() << "unsupported op '" << op->getName() << "' for target '"
                                                 << target << "'";
      if (std::string why = inKernel ? "" : UnsupportedHostTensorOpForm(op); !why.empty()) error << ": " << why;
      return error;
    }
    // Host arithmetic is scalar; tensor math belongs in linalg ops.
    if (dialect == "arith" && !inKernel && !isa<arith::ConstantOp>(op))
      for (Type t : op->getOperandTypes())
        if (isa<TensorType>(t))
          return op->emitError() << "unsupported op '" << op->getName()
                                 << "' on tensors outside linalg for target '" << target << "'";
    if (isa<tensor::ExtractOp>(op) && !inKernel) {
      Type e = cast<TensorType>(op->getOperand(0).getType()).getElementType();
      if (!isHostReadableElement(e))
        return op->emitError() << "unsupported element type " << e
                               << " for a host read (tensor.extract) for target '" << target << "'";
    }
    if (auto func = dyn_cast<func::FuncOp>(op)) {
      if (func.isExternal())
        return op->emitError() << "unsupported external function for target '" << target << "'";
      for (Type t : func.getFunctionType().getInputs()) {
        if (!isa<TensorType>(t) && !isSupportedHostScalar(t))
          return op->emitError() << "unsupported argument type " << t << " for target '"
                                 << target << "'";
        if (failed(checkType(op, t, /*allowScalar=*/true))) return failure();
      }
      // Scalar results travel in VM value registers like scalar arguments.
      for (Type t : func.getFunctionType().getResults()) {
        if (!isa<TensorType>(t) && !isSupportedHostScalar(t))
          return op->emitError() << "unsupported result type " << t << " for target '"
                                 << target << "'";
        if (failed(checkType(op, t, /*allowScalar=*/true))) return failure();
      }
      return success();
    }
    for (Type t : op->getResultTypes())
      if (failed(checkType(op, t, /*allowScalar=*/true))) return failure();
    return success();
  }

  LogicalResult checkType(Operation* op, Type t, bool allowScalar) {
    if (auto tensor = dyn_cast<RankedTensorType>(t)) {
      if (!isSupportedElement(tensor.getElementType()))
        return op->emitError() << "unsupported element type " << tensor.getElementType()
                               << " for target '" << target << "'";
      return success();
    }
    if (allowScalar && isSupportedScalar(t)) return success();
    return op->emitError() << "unsupported type " << t << " for target '" << target << "'";
  }
};

}  // namespace
}  // namespace hexir
