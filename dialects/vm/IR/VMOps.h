// The `hexir_vm` dialect: VM instructions (vm/isa.def) on SSA values. Value registers carry
// i64 / f64, ref registers carry !hexir_vm.ref. See VMOps.td.
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/vm/IR/VMOpsDialect.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/vm/IR/VMOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "dialects/vm/IR/VMOps.h.inc"

namespace hexir::vmir {
// 'i', 'f' or 'r' for a VM-level type; 0 for anything else.
char SignatureChar(mlir::Type type);
// The operand-kind string of the vm/isa.def instruction `mnemonic` ("VVV" for add.i64),
// empty if there is none.
std::string_view InstOperandKinds(llvm::StringRef mnemonic);
// Whether the `inst` mnemonic traps on some operands (integer division and remainder by
// zero, vm/isa.def): InstOp's speculatability.
bool InstTraps(llvm::StringRef mnemonic);
}  // namespace hexir::vmir
