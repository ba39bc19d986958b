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
// With `report`, `%bad` also calls `@hexir_kernel_error(code, a, b)` under `scf.if` (codes of
// hal/kernel_status.h); `LowerKernelErrorCalls` turns those calls into stores to the
// kernel's error record: on the CPU the record the entry's workgroup state points at, on
// CUDA the dispatch's status record (hexir_kernel_status_t, claimed atomically). The call
// then fails with the same named error on both (hal/kernel_error.h). The clamped read /
// divisor keeps the kernel from touching memory outside its tensors whatever it computes
// after the failure (an out-of-range index reads element 0 of that dimension, x / 0 = x,
// x % 0 = 0, INT_MIN / -1 = INT_MIN); without `report` that is the documented result.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace hexir::codegen {

inline constexpr const char* kKernelErrorFunction = "hexir_kernel_error";

// `workgroupId`: the kernel argument that is the workgroup id (not data), or null.
void InsertKernelChecks(mlir::func::FuncOp kernel, bool report, mlir::Value workgroupId);

// Where a kernel's failures go once lowered to LLVM.
enum class ErrorRecord {
  // CPU: {i64 code, i64 a, i64 b} of the workgroup; the first failure of the workgroup is
  // kept (the record starts zeroed), with plain loads and stores.
  kWorkgroup,
  // CUDA: hexir_kernel_status_t of the dispatch, shared by every thread: the code is claimed
  // with a cmpxchg (first failure of the dispatch wins), the winner's values stored.
  kDispatchStatus,
};

// After lowering to LLVM: when `impl` calls @hexir_kernel_error (declared in `symbolTable`),
// appends a `ptr` argument to it (the record) and turns each call into stores to the record
// of the given kind. Returns whether it did (otherwise the declaration is erased).
bool LowerKernelErrorCalls(mlir::Operation* symbolTable, mlir::LLVM::LLVMFuncOp impl,
                           ErrorRecord kind = ErrorRecord::kWorkgroup);

}  // namespace hexir::codegen
