#include "dialects/vm/IR/VMOps.h"

#include "llvm/ADT/STLExtras.h"

#include "llvm/ADT/TypeSwitch.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "vm/isa.h"

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

std::string_view InstOperandKinds(llvm::StringRef mnemonic) {
  hexir::vm::Op op;
  if (!hexir::vm::OpForMnemonic(std::string_view(mnemonic.data(), mnemonic.size()), &op)) return {};
  return hexir::vm::GetOpInfo(static_cast<uint32_t>(op)).operands;
}

mlir::LogicalResult InstOp::verify() {
  std::string_view kinds = InstOperandKinds(getMnemonic());
  if (kinds.empty() || kinds.find_first_not_of('V') != std::string_view::npos)
    return emitOpError("'") << getMnemonic() << "' is not a value-register-only instruction";
  if (getNumResults() > 1 || getNumResults() + getNumOperands() != kinds.size())
    return emitOpError("'") << getMnemonic() << "' takes " << kinds.size()
                            << " registers (results first)";
  return mlir::success();
}

bool InstTraps(llvm::StringRef mnemonic) {
  return (mnemonic.starts_with("div.") || mnemonic.starts_with("rem.")) && !mnemonic.ends_with(".f64");
}

namespace {
bool PositiveConstant(mlir::Value v) {
  auto c = v.getDefiningOp<ConstI64Op>();
  return c && static_cast<int64_t>(c.getValue()) > 0;
}

// A 64-bit divisor that is never 0 nor -1: a positive constant, or max.s.i64 with one (the
// shape arithmetic's max(extent, 1), max(size, 512)).
bool PositiveDivisor(mlir::Value v) {
  if (PositiveConstant(v)) return true;
  auto max = v.getDefiningOp<InstOp>();
  return max && max.getMnemonic() == "max.s.i64" && llvm::any_of(max.getOperands(), PositiveConstant);
}
}  // namespace

// A division or remainder traps only on its divisor (0, or -1 signed): by a PositiveDivisor
// (64-bit forms only: an i32 form truncates it) it cannot.
mlir::Speculation::Speculatability InstOp::getSpeculatability() {
  if (!InstTraps(getMnemonic())) return mlir::Speculation::Speculatable;
  if (getMnemonic().ends_with(".i64") && getOperands().size() == 2 && PositiveDivisor(getOperands()[1]))
    return mlir::Speculation::Speculatable;
  return mlir::Speculation::NotSpeculatable;
}

mlir::SuccessorOperands BrOp::getSuccessorOperands(unsigned) {
  return mlir::SuccessorOperands(getDestOperandsMutable());
}
mlir::Block* BrOp::getSuccessorForOperands(llvm::ArrayRef<mlir::Attribute>) { return getDest(); }

mlir::SuccessorOperands CondBrOp::getSuccessorOperands(unsigned index) {
  return mlir::SuccessorOperands(index == 0 ? getTrueOperandsMutable() : getFalseOperandsMutable());
}
mlir::Block* CondBrOp::getSuccessorForOperands(llvm::ArrayRef<mlir::Attribute>) {
  return nullptr;
}

}  // namespace hexir::vmir

#define GET_OP_CLASSES
#include "dialects/vm/IR/VMOps.cpp.inc"
