// Hexir CUDA code generation passes (declared in CUDAPasses.td): distribute threads,
// lower to NVVM with the CUDA dispatch ABI v1 entry, serialize to PTX + cubin. The last
// one is implemented in compiler/targets/cuda/ and linked from //compiler/targets/cuda.
#pragma once

#include <memory>
#include <string>

#include "mlir/Pass/Pass.h"

namespace hexir {

#define GEN_PASS_DECL
#include "passes/codegen/CUDAPasses.h.inc"

// Kernel attributes from hexir-cuda-distribute-threads (and the tensor-core matmul's schedule,
// CUDAMatmul.cpp) to hexir-cuda-lower-executables, which removes them: the threads that cover
// the iteration points (index; -1 when the kernel bounds itself with a grid-stride or tile
// loop), threads per point of a warp reduction (index), a column reduction's tiling
// (`array<i64: width, column threads, slices>`, CUDAColumnReduce.h).
inline constexpr char kThreadCountAttr[] = "hexir.cuda.thread_count";
inline constexpr char kLanesAttr[] = "hexir.cuda.lanes";
inline constexpr char kColumnTilingAttr[] = "hexir.cuda.column_tiling";
// The block size: an index on the kernel (read by lowering) and `array<i64: x, y, z>` on the
// executable (read by hexir-cuda-serialize-executables: the driver's "cuda.block_size.<entry>").
inline constexpr char kBlockSizeAttr[] = "hexir.cuda.block_size";

// Executable attributes from lowering to serialization: the chip of an executable whose
// kernel needs another than the pipeline's (the wgmma GEMM: sm_90a), and the dynamic shared
// memory its kernel is launched with (bytes; the driver's "cuda.shared_bytes.<entry>").
inline constexpr char kExecutableChipAttr[] = "hexir.cuda.chip";
inline constexpr char kSharedBytesAttr[] = "hexir.cuda.shared_bytes";

// The programmatic-launch wait that begins an sm_90 entry (hexir-cuda-lower-executables), as
// inline PTX with side effects and a memory clobber, the form CUDA's own headers use: LLVM 22
// declares `llvm.nvvm.griddepcontrol.wait` IntrNoMem, so its passes could move a load above
// the intrinsic, before the prerequisite kernels' writes are visible; an asm that clobbers
// memory keeps every access after it. hexir-cuda-serialize-executables recognizes this string.
inline constexpr char kGridDependencyWaitAsm[] = "griddepcontrol.wait;";

// Registers the CUDA passes with the global registry (hexir-opt, pipelines).
#define GEN_PASS_REGISTRATION
#include "passes/codegen/CUDAPasses.h.inc"

}  // namespace hexir
