// Hexir CUDA code generation passes (kept apart from Passes.td so the CUDA backend can
// evolve without touching the shared pass list). Implementations:
// passes/codegen/CUDA*.cpp and compiler/targets/cuda/CUDASerializeExecutables.cpp.
#ifndef HEXIR_CUDA_PASSES_TD
#define HEXIR_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def CUDADistributeThreads : Pass<"hexir-cuda-distribute-threads", "mlir::ModuleOp"> {
  let summary = "Maps each kernel's parallel iteration space onto CUDA threads, one point per thread";
  let description = [{
    For a kernel whose single result comes from a tileable op with static parallel loops,
    tiles every parallel loop by 1 (reductions stay whole, producers are fused into the
    tile) and sets each tile loop to the point of the calling thread: the global linear id
    `gid = block_id.x * B + thread_id.x` is delinearized over the parallel loops ordered
    like the output's dimensions, so consecutive threads write consecutive elements of the
    output's contiguous dimension. Records `hexir.workgroup_count = [ceil(P / B), 1, 1]`
    and `hexir.cuda.block_size = [B, 1, 1]` on the executable (P = number of points,
    B = min(block-size, P)) and `hexir.cuda.thread_count = P` on the kernel (threads with
    gid >= P do nothing). With dynamic extents each thread strides over the points by the
    launched grid (`for p = gid; p < P; p += gridDim.x * B`), `hexir.cuda.thread_count = -1`;
    when P is a product of parameter words and constants the executable gets
    `hexir.workgroup_count_dynamic` (tile B / lanes points per block, limit `dynamic-grid`:
    the host launches max(1, ceil(P / max(B / lanes, ceil(P / dynamic-grid)))) blocks,
    passes/codegen/WorkgroupCount.h), else a fixed grid of `dynamic-grid` blocks.
    Reductions whose reduced extent is dynamic or >= 64 (kMinWarpReduction) with an
    associative arith combiner (also `select(c, combine(acc, v), acc)` bodies such as an
    argmax, and 32/64-bit int/float accumulators) get one warp per point
    (`hexir.cuda.lanes = 32`, thread_count = 32 * P, blocks of 2 warps; with dynamic
    extents the warps stride over the points), also when the reduction has an elementwise
    consumer (lane 0 applies it) or a rank-0 result read whole by its consumer (RMSNorm);
    rewritten by hexir-cuda-lower-executables (16-byte vector loads, 8 steps in flight).
    With static extents and few points, W = 2..16 warps per point (`hexir.cuda.lanes` =
    32 W, one point per block; CUDAColumnReduce.h ChooseWarpsPerPoint) combined through
    shared memory. Column reductions (the reduced dim not contiguous, the output's
    contiguous dim also an input's, as in a [K][N] GEMV; M <= 16 rows, static extents,
    inputs that are kernel arguments) get one block per tile of columns
    (`hexir.cuda.column_tiling` = [width, column threads, slices, loads in flight] on the
    kernel, one tile a block; ChooseColumnTiling). `block-reductions=false` turns both off. f16/bf16 matmuls with f32
    accumulation get the tensor-core kernel (CUDAMatmul.h; wgmma when `chip` is sm_90); f32
    ones the SIMT kernel (TF32 mma.sync with `allow-tf32`). GGUF block-format matvecs
    (`hexir.block_matvec`) alone or with elementwise consumers get the quantized GEMV kernel
    (CUDAQuantizedGemv.h: rows in groups of blocks read with 16-byte loads, decoded in
    registers, L lanes a row); `quantized-gemv=false` (or a kernel it refuses) regroups them
    into 32-value units for the warp kernel (CUDABlockMatvec.h). An in-place update (the
    kernel returns `insert_slice %row into %out[...]`, a KV-cache row write,
    passes/dispatch/InPlaceUpdates.h) is distributed over its slot like any kernel: the root
    is the copy of the row into the slot (codegen::KernelRoot), and the write-back of the
    slot the threads wrote stays outside the thread loops (codegen::IsSlotWriteBack; a
    self-copy that bufferization folds away).
    Anything else runs on one thread (P = 1).
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256", "threads per block">,
    Option<"dynamicGrid", "dynamic-grid", "int64_t", /*default=*/"1056",
           "most blocks launched for kernels with dynamic extents (grid-stride loop)">,
    Option<"gridFromShape", "grid-from-shape", "bool", /*default=*/"true",
           "dynamic extents: the workgroup count from the shape (false: a fixed grid of "
           "dynamic-grid blocks, no per-call count and no graph node update)">,
    Option<"warpReductions", "warp-reductions", "bool", /*default=*/"true",
           "one warp (32 lanes + shuffles) per output of long reductions">,
    Option<"blockReductions", "block-reductions", "bool", /*default=*/"true",
           "several warps per output of static row reductions with few outputs, and "
           "column-tile kernels for column reductions ([K][N] GEMVs); "
           "passes/codegen/CUDAColumnReduce.h">,
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "target SM: sm_90/sm_90a put f16/bf16 matmuls on the wgmma kernel, other chips "
           "on the mma.sync kernel (passes/codegen/CUDAMatmul.h)">,
    Option<"quantizedGemv", "quantized-gemv", "bool", /*default=*/"true",
           "GGUF block-format matvecs on the quantized GEMV kernel (false: 32-value units "
           "on the warp-reduction kernel; passes/codegen/CUDAQuantizedGemv.h)">,
    Option<"allowTf32", "allow-tf32", "bool", /*default=*/"false",
           "f32 matmuls multiply on TF32 tensor cores (operands rounded to 10 mantissa "
           "bits, f32 accumulation; passes/codegen/CUDAMatmul.h)">,
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect",
                           "mlir::tensor::TensorDialect", "mlir::affine::AffineDialect",
                           "mlir::gpu::GPUDialect"];
}

def CUDALowerExecutables : Pass<"hexir-cuda-lower-executables", "mlir::ModuleOp"> {
  let summary = "Bufferizes kernels, lowers them to NVVM inside a gpu.module, adds the ABI kernel";
  let description = [{
    Per executable: bufferize, turn static allocations into stack allocations, guard the
    body with `gid < hexir.cuda.thread_count`, lower linalg to loops, move the kernel into
    `gpu.module @<name> [#nvvm.target<chip, features, O=3>]` and run convert-gpu-to-nvvm.
    The lowered kernel becomes `<name>_impl` (internal); the entry `<name>` is an
    `nvvm.kernel` taking one pointer per memref argument (binding) and, when the kernel has
    dynamic dims or scalars, one more pointer: the parameter buffer of i64 words (dynamic
    dims of the memrefs in order, then scalars; f32 as its low 32 bits), exactly like the
    CPU ABI. It builds the memref descriptors and calls the body (CUDA dispatch ABI v1).
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"", "target SM">,
    Option<"features", "features", "std::string", /*default=*/"\"+ptx80\"", "PTX features">,
    Option<"prefetchMaxBytes", "prefetch-max-bytes", "int64_t", /*default=*/"8388608",
           "sm_90+: a GEMV's weight that no dispatch writes, of at most this many bytes, is "
           "prefetched into L2 by each block (its rows; the quantized GEMV's W and sibling W: "
           "a share per block) before the programmatic wait, and so are decode attention's K "
           "and V caches of at most this many bytes each (a share per block) (0: none)">,
    Option<"weightStaging", "weight-staging", "std::string", /*default=*/"\"shared\"",
           "sm_90+: the read-only weights a one-block kernel (a small-layer group) reads whole "
           "are fetched before the programmatic wait: \"shared\" copies them into dynamic "
           "shared memory (cp.async) and the kernel reads the copies, \"l1\" prefetches "
           "their lines into L1, \"none\" (CUDAStagedWeights.h)">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::NVVM::NVVMDialect",
                           "mlir::gpu::GPUDialect", "mlir::memref::MemRefDialect",
                           "mlir::bufferization::BufferizationDialect",
                           "mlir::scf::SCFDialect", "mlir::cf::ControlFlowDialect"];
}

def CUDASerializeExecutables : Pass<"hexir-cuda-serialize-executables", "mlir::ModuleOp"> {
  let summary = "Translates each lowered executable to PTX and assembles a cubin with ptxas";
  let description = [{
    Runs gpu-module-to-binary{format=isa} (libdevice linked when the kernel calls __nv_*
    functions) to get PTX, then `ptxas -arch=<chip>` to get a cubin. Attaches
    `hexir.format` ("cuda-cubin-<chip>", or "cuda-ptx" with format=ptx), `hexir.entry`,
    `hexir.binary`, `hexir.attrs` ({"cuda.block_size.<entry>" = "X,Y,Z", "cuda.ptx" = PTX
    text, the driver's JIT fallback}) and
    `hexir.rodata_attrs` ({"cuda.ptx_segment" = PTX text}: the bytecode writer stores the
    text as rodata and writes its ordinal), and empties the executable's body.
    The toolkit is `toolkit`, else $CUDA_HOME, else /usr/local/cuda.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"", "target SM (ptxas -arch)">,
    Option<"format", "format", "std::string", /*default=*/"\"cubin\"",
           "cubin (cubin + PTX embedded) or ptx (PTX only, no ptxas needed)">,
    Option<"toolkit", "toolkit", "std::string", /*default=*/"\"\"",
           "CUDA toolkit root (default: $CUDA_HOME, else /usr/local/cuda)">,
  ];
}

#endif  // HEXIR_CUDA_PASSES_TD
