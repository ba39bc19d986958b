#include "dialects/hexir/IR/HexirOps.h"

#include "dialects/hexir/IR/HexirAttributes.h"

#include "llvm/ADT/TypeSwitch.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"

#include "dialects/hexir/IR/HexirOpsDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/hexir/IR/HexirOpsTypes.cpp.inc"

namespace hexir {

void HexirDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/hexir/IR/HexirOpsTypes.cpp.inc"
      >();
  registerShardingAttr();
  addOperations<
#define GET_OP_LIST
#include "dialects/hexir/IR/HexirOps.cpp.inc"
      >();
}

mlir::LogicalResult DispatchRegionOp::verify() {
  auto yield = llvm::dyn_cast<YieldOp>(getBody().front().getTerminator());
  if (!yield) return emitOpError("body must end with hexir.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yielded types do not match the result types");
  return mlir::success();
}

mlir::ModuleOp ExecutableOp::getInnerModule() {
  for (mlir::Operation& op : getBody().front())
    if (auto module = llvm::dyn_cast<mlir::ModuleOp>(op)) return module;
  return nullptr;
}

mlir::LogicalResult DispatchOp::verify() {
  int64_t dynamic = 0;
  for (mlir::Type t : getResultTypes())
    if (auto shaped = llvm::dyn_cast<mlir::ShapedType>(t)) dynamic += shaped.getNumDynamicDims();
  if (dynamic != static_cast<int64_t>(getResultDims().size()))
    return emitOpError("expected ") << dynamic << " result dims (one per dynamic result "
                                    << "dimension), got " << getResultDims().size();
  return mlir::success();
}

YieldOp ExecuteOp::getYield() { return llvm::cast<YieldOp>(getBody().front().getTerminator()); }

mlir::LogicalResult ExecuteOp::verify() {
  int64_t device = static_cast<int64_t>(getDevice());
  if (device < 0) return emitOpError("device ordinal must be >= 0, got ") << device;
  if (getQueue() != "compute" && getQueue() != "transfer")
    return emitOpError("queue must be \"compute\" or \"transfer\", got \"") << getQueue() << "\"";
  mlir::Block& body = getBody().front();
  auto yield = llvm::dyn_cast<YieldOp>(body.getTerminator());
  if (!yield) return emitOpError("body must end with hexir.yield");
  if (yield.getValues().getTypes() != getResults().getTypes())
    return emitOpError("yields ") << yield.getValues().size()
                                  << " values whose types do not match its tensor results";
  for (mlir::Operation& op : body.without_terminator()) {
    if (llvm::isa<DispatchOp, BarrierOp, mlir::tensor::ExpandShapeOp,
                  mlir::tensor::CollapseShapeOp, mlir::tensor::CastOp>(op) ||
        GetCollective(&op))
      continue;
    if (auto call = llvm::dyn_cast<mlir::func::CallOp>(op)) {
      auto callee = mlir::SymbolTable::lookupNearestSymbolFrom<mlir::func::FuncOp>(
          call, call.getCalleeAttr());
      if (!callee || !callee->hasAttr(kRecordsIntoCallerAttr))
        return op.emitOpError("in a hexir.execute region must call a function marked "
                              "hexir.records_into_caller");
      continue;
    }
    if (auto transfer = llvm::dyn_cast<TransferOp>(op)) {
      if (getQueue() != "transfer" || static_cast<int64_t>(transfer.getTo()) != device)
        return op.emitOpError("must be in a \"transfer\" region of its target device ")
               << transfer.getTo();
      continue;
    }
    return op.emitOpError("cannot be in a hexir.execute region (only hexir.dispatch, "
                          "collectives, hexir.transfer, hexir.barrier, tensor "
                          "reshapes/casts and recorded calls)");
  }
  return mlir::success();
}

mlir::LogicalResult GlobalOp::verify() {
  auto tensor = llvm::dyn_cast<mlir::RankedTensorType>(getType());
  if (!tensor || !tensor.hasStaticShape())
    return emitOpError("type must be a statically shaped tensor, got ") << getType();
  return mlir::success();
}

// A global access names a hexir.global of the same type.
static mlir::LogicalResult verifyGlobalUse(mlir::Operation* op, mlir::FlatSymbolRefAttr name,
                                           mlir::Type type,
                                           mlir::SymbolTableCollection& symbols) {
  auto global = symbols.lookupNearestSymbolFrom<GlobalOp>(op, name);
  if (!global) return op->emitOpError("no hexir.global named ") << name;
  if (global.getType() != type)
    return op->emitOpError("type ") << type << " differs from the global's " << global.getType();
  return mlir::success();
}

mlir::LogicalResult GlobalLoadOp::verifySymbolUses(mlir::SymbolTableCollection& symbols) {
  return verifyGlobalUse(*this, getGlobalAttr(), getType(), symbols);
}

mlir::LogicalResult GlobalStoreOp::verifySymbolUses(mlir::SymbolTableCollection& symbols) {
  return verifyGlobalUse(*this, getGlobalAttr(), getValue().getType(), symbols);
}

}  // namespace hexir

#define GET_OP_CLASSES
#include "dialects/hexir/IR/HexirOps.cpp.inc"
