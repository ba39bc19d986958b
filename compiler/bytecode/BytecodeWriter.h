// Serializes a module in VM form (func.func bodies of hexir_vm ops, serialized
// hexir.executable ops) into .vmfb bytes. Registers are assigned here: a linear scan over
// each function's single block that reuses a register after its value's last use; a ref
// operand's last use carries MOVE, and refs defined but never used are released at once,
// so no ref outlives its last use and nothing is held after `return`.
#pragma once

#include <cstdint>
#include <vector>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace hexir::compiler {

// Emits a diagnostic on the offending op and fails on anything it cannot encode.
mlir::LogicalResult WriteBytecodeModule(mlir::ModuleOp module, std::vector<uint8_t>* out);

}  // namespace hexir::compiler
