// Serializes a module in VM form (func.func bodies of hexir_vm ops, serialized
// hexir.executable ops) into .vmfb bytes. Registers are assigned by RegisterAllocation.h
// (live ranges per block, block arguments coalesced with their incoming values), branches
// are fused by BranchSelection.h (br.<p>.i64, rotated loop latches, for.i64), and a br with
// nothing to copy to the block laid out next falls through instead. A ref
// operand's last use carries MOVE when the value is not
// live out of its block; refs defined but never used are released at once; refs that die
// on a CFG edge are released at the start of the successor. So no ref outlives its last use
// and nothing is held after `return`. Module attributes `hexir_vm.value_globals` /
// `hexir_vm.ref_globals` give the global counts; a function with `hexir_vm.initializer`
// becomes the module initializer.
#pragma once

#include <cstdint>
#include <vector>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace hexir::compiler {

struct BytecodeWriterOptions {
  // Instruction selection for control flow: fused compare-branches, rotated loop latches,
  // for.i64 (BranchSelection.h) and block arguments coalesced with their incoming values
  // (RegisterAllocation.h). Off: every `cond_br` tests a `cmp` result, every edge is a branch
  // (to the next block too) with its block-argument copies and registers are first fit: the
  // unoptimised form that tests and benchmarks compare against (hexir-compile
  // --no-branch-selection).
  bool selectBranches = true;
};

// Emits a diagnostic on the offending op and fails on anything it cannot encode.
mlir::LogicalResult WriteBytecodeModule(mlir::ModuleOp module, std::vector<uint8_t>* out,
                                        const BytecodeWriterOptions& options = {});

}  // namespace hexir::compiler
