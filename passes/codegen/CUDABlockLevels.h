// One-block kernels for small layers on CUDA (CUDABlockLevels.cpp says how they run): a
// `small_layer` dispatch group (hexir-group-small-projections) runs as one block, its ops
// level after level. hexir-cuda-distribute-threads marks such a kernel with kBlockLevelsAttr;
// hexir-cuda-lower-executables lowers the marked, bufferized kernel with LowerBlockLevels.
#pragma once

#include <cstdint>

#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::cuda {

// Shared memory one block may use for a group's temporaries (the static limit without opt-in;
// hexir-compile groups only within it, compiler/Pipeline.cpp; row chains too, CUDARowChains.cpp).
inline constexpr int64_t kMaxBlockLevelsSharedBytes = 48 * 1024;

// The kernel attribute (unit) of a kernel lowered by LowerBlockLevels.
extern const char kBlockLevelsAttr[];

// The executable is a `small_layer` dispatch group (kDispatchGroupAttr's kind).
bool IsSmallLayerGroup(ExecutableOp exe);

// The threads of a small-layer group's block: `blockSize`, or for a norm pair (a one-point
// reduction and the elementwise op after it, nothing else) wider than 4 steps a thread, a
// thread per 2 elements of its widest op, at most 1024.
int64_t BlockLevelsThreads(mlir::func::FuncOp kernel, int64_t blockSize);

// Lowers the bufferized kernel of a small-layer group (or a row chain's row,
// CUDARowChains.h) to one block of `blockSize` threads. With `vector` > 1, a block reduction
// whose static extent it divides, and an op of a thread per point whose points and innermost
// parallel extent it divides, give each thread `vector` consecutive elements a step (LLVM's
// load/store vectorizer makes them one 16-byte access for f32 rows of aligned buffers).
mlir::LogicalResult LowerBlockLevels(mlir::func::FuncOp kernel, int64_t blockSize, int64_t vector = 1);

// On a row chain's kernel: the `vector` its LowerBlockLevels gets (IntegerAttr).
inline constexpr char kBlockLevelsVectorAttr[] = "hexir.cuda.block_levels_vector";

}  // namespace hexir::cuda
