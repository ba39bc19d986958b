// Dynamic work estimates a CPU driver can evaluate (hexir-cpu-lower-executables, at the entry).
//
// hexir-annotate-dispatch-costs writes each dynamic cost as a formula over kernel arguments
// ("6144 + 12*a1d0*a1d2*a1d3": aIdJ = dim J of tensor argument I, aI = index argument I).
// The CPU entry reads every run-time dim and scalar from one i64 word of its parameter
// binding, in argument order (KernelLoweringUtils.h, AppendKernelArguments), so each symbol
// is a word of that binding. For entry E this adds to the executable's costs (`hexir.costs`,
// which hexir-attach-dispatch-costs merges into `hexir.attrs`; else `hexir.attrs` itself):
//   cost.E.params            the parameter binding's index (the memref count)
//   cost.E.<field>.words     the formula over words ("6144 + 12*w0*w1*w2": wK = word K),
// for field in bytes_read, bytes_written, flops, where every symbol of the formula names an
// argument that the final signature reads from a word (else that field stays unknown). The
// CPU driver (hal/drivers/cpu/work_estimate.h) evaluates them per dispatch to decide whether
// a dispatch of run-time shape is worth sharing between threads.
#pragma once

#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/IR/Types.h"

namespace hexir::codegen {

// `signature`: the bufferized kernel's argument types without the trailing workgroup id.
void AttachWorkWords(ExecutableOp exe, llvm::ArrayRef<mlir::Type> signature, int64_t paramBinding);

}  // namespace hexir::codegen
