// A block-wide f32 sum inside a CUDA kernel: every thread of the block gets the sum of
// term(at) over at = 0 .. K - 1 (a norm's sum of squares recomputed by the quantized GEMV that
// reads the norm, CUDAQuantizedGemv.h). Thread t takes at = t, t + T, ... (T threads), the loads
// of up to 8 of its steps issued before any of their terms is computed; each warp's partials
// are added by an xor butterfly, lane 0 of each warp stores the warp's in shared memory, one
// barrier, then every thread adds the T / 32 warp sums in warp order, so every thread holds
// the same, deterministic total. The shared array is read only after the barrier and never
// written again: no second barrier.
#pragma once

#include <cstdint>

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace hexir::cuda {

// `load(at)` emits the loads step `at` needs (at < K, an index); `term(loaded)` the f32 term
// from them. `threads` is a multiple of 32, `tid` the thread's index in the block.
mlir::Value EmitBlockSum(mlir::OpBuilder& b, mlir::Location loc, mlir::func::FuncOp kernel, mlir::Value tid,
                         int64_t threads, int64_t K,
                         llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::Value at)> load,
                         llvm::function_ref<mlir::Value(mlir::ValueRange loaded)> term);

}  // namespace hexir::cuda
