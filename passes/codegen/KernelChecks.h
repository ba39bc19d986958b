// Checks compiled into kernels, shared by the CPU and CUDA code generators: reads whose index
// comes from data, and integer division, never touch memory outside a tensor or raise SIGFPE.
//
// On a kernel at the tensor level (before bufferization), `InsertKernelChecks` rewrites
// - `tensor.extract %t[.., %i, ..]` where %i depends on data (an element of an operand, a
//   value read by another extract, a kernel argument other than the workgroup id; not
//   `linalg.index`, constants, loop variables or dims): `%bad = %i >=u dim(%t, k)` (one
//   compare; a negative index is huge unsigned), and the read uses `select(%bad, 0, %i)`;
// - integer `divsi/divui/remsi/remui/floordivsi/ceildivsi/ceildivui` inside linalg bodies
//   whose divisor is not a constant: `%bad = divisor == 0` (signed: or dividend == INT_MIN
//   and divisor == -1), and the op divides by `select(%bad, 1, divisor)`.
// With `report` (CPU), `%bad` also calls `@hexir_kernel_error(code, a, b)` under `scf.if`
// (codes of hal/drivers/cpu/dispatch_abi.h); `LowerKernelErrorCalls` turns those calls into
// stores to a record the CPU entry returns. Without it (CUDA) the clamped read / divisor
// is the documented result: an out-of-range index reads element 0 of that dimension, x / 0
// = x, x % 0 = 0, INT_MIN / -1 = INT_MIN (passes/README.md).
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace hexir::codegen {

inline constexpr const char* kKernelErrorFunction = "hexir_kernel_error";

// `workgroupId`: the kernel argument that is the workgroup id (not data), or null.
void InsertKernelChecks(mlir::func::FuncOp kernel, bool report, mlir::Value workgroupId);

// After lowering to LLVM: when `impl` calls @hexir_kernel_error, appends a `ptr` argument
// to it (a record {i64 code, i64 a, i64 b}) and turns each call into stores of its operands
// to the record (the last failure in a workgroup is the one reported). Returns whether it did.
bool LowerKernelErrorCalls(mlir::ModuleOp inner, mlir::LLVM::LLVMFuncOp impl);

}  // namespace hexir::codegen
