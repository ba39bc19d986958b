#include "dialects/hexir/IR/HexirOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include "dialects/hexir/IR/HexirOpsDialect.cpp.inc"

namespace hexir {

void HexirDialect::initialize() {
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
