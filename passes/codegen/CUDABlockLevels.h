// One-block kernels for small layers on CUDA (CUDABlockLevels.cpp says how they run): a
// `small_layer` dispatch group (hexir-group-small-projections) runs as one block, its ops
// level after level. hexir-cuda-distribute-threads marks such a kernel with kBlockLevelsAttr;
// hexir-cuda-lower-executables lowers the marked, bufferized kernel with LowerBlockLevels.
#pragma once

#include <cstdint>

#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::cuda {

// The kernel attribute (unit) of a kernel lowered by LowerBlockLevels.
extern const char kBlockLevelsAttr[];

// The executable is a `small_layer` dispatch group (kDispatchGroupAttr's kind).
bool IsSmallLayerGroup(ExecutableOp exe);

// The threads of a small-layer group's block: `blockSize`, or for a norm pair (a one-point
// reduction and the elementwise op after it, nothing else) wider than 4 steps a thread, a
// thread per 2 elements of its widest op, at most 1024.
int64_t BlockLevelsThreads(mlir::func::FuncOp kernel, int64_t blockSize);

// Lowers the bufferized kernel of a small-layer group to one block of `blockSize` threads.
mlir::LogicalResult LowerBlockLevels(mlir::func::FuncOp kernel, int64_t blockSize);

}  // namespace hexir::cuda
