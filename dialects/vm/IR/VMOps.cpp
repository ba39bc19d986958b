#include "dialects/vm/IR/VMOps.h"

#include "llvm/ADT/TypeSwitch.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"

#include "dialects/vm/IR/VMOpsDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/vm/IR/VMOpsTypes.cpp.inc"

namespace hexir::vmir {

void VMDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/vm/IR/VMOpsTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/vm/IR/VMOps.cpp.inc"
      >();
}

char SignatureChar(mlir::Type type) {
  if (type.isInteger(64)) return 'i';
  if (type.isF64()) return 'f';
  if (llvm::isa<RefType>(type)) return 'r';
  return 0;
}

mlir::LogicalResult CallImportOp::verify() {
  for (mlir::Type t : getOperandTypes())
    if (!SignatureChar(t)) return emitOpError("operand type ") << t << " is not a VM type";
  for (mlir::Type t : getResultTypes())
    if (!SignatureChar(t)) return emitOpError("result type ") << t << " is not a VM type";
  return mlir::success();
}

}  // namespace hexir::vmir

#define GET_OP_CLASSES
#include "dialects/vm/IR/VMOps.cpp.inc"
