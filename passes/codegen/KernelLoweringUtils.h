// Kernel-lowering steps shared by the CPU and CUDA code generators (passes/codegen/CPU*.cpp,
// CUDA*.cpp), so both targets tile, clean up and lower executables the same way.
//
// Everything here works on one executable's kernel (a func.func in the executable's inner
// module) and is not thread-safe beyond what MLIR guarantees for the IR it is given.
#pragma once

#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"

namespace hexir::codegen {

// The executable's kernel: the func.func of its inner module named like the executable.
// Null (with the error "executable has no kernel named like it" at the executable) if none.
mlir::func::FuncOp LookupKernel(ExecutableOp exe);

// Registers the dialects the passes of each textual pipeline ("builtin.module(...)") need,
// for a pass that runs those pipelines itself (getDependentDialects).
void AddPipelineDialects(mlir::DialectRegistry& registry,
                         std::initializer_list<const char*> pipelines);

// The op a kernel is distributed over: the producer of the returned value, or, for an
// in-place update (the kernel returns `tensor.insert_slice %x into %out[...]` with %out its
// output argument, passes/dispatch/InPlaceUpdates.h), a linalg.copy of %x into the slice of
// %out that replaces the direct insert (created here on first call), so that the update is
// tiled over the slice and writes only it. Null when the kernel has no such op.
mlir::TilingInterface KernelRoot(mlir::func::FuncOp kernel);

// After KernelRoot's copy was tiled: `op` is the in-place update's final write-back,
// `return insert_slice %v into %out[s]` with %out the kernel's output argument and %v the
// tiled loops' result over `extract_slice %out[s]` (same offsets, sizes and strides). Its
// bufferized form copies the slot onto itself and folds away, so it is no whole-tensor
// work a distributed kernel would repeat in every thread: the tiles already wrote the slot.
bool IsSlotWriteBack(mlir::Operation* op);

// Tiles `root` into scf.for loops with `tileSizes` (0: that loop is not tiled), fusing every
// producer of its operands into the tile loops, and replaces root's uses with the tiled
// results. Failure: the op does not tile (the IR is unchanged).
mlir::FailureOr<mlir::scf::SCFTileAndFuseResult> TileRootAndFuseProducers(
    mlir::RewriterBase& rewriter, mlir::TilingInterface root,
    llvm::ArrayRef<mlir::OpFoldResult> tileSizes);

// After tiling: the untiled ops are dead and erased; extract_slice(tensor.empty) becomes a
// tile-sized tensor.empty (temporaries of fused producers are per tile); tensor.dim of a
// computed tensor is rewritten into the extent it was built from (a kernel argument), so no
// untiled op survives only to provide a loop bound.
void CleanUpTiledKernel(mlir::func::FuncOp kernel);

// ---- bufferized kernels ------------------------------------------------------------------------

// The bufferization both targets run on an executable's inner module: tensors become
// identity-layout memrefs, function boundaries included.
inline constexpr const char* kBufferizePipeline =
    "builtin.module(canonicalize,cse,one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},canonicalize,cse)";

// After kBufferizePipeline: finds the executable's kernel, drops results that are (casts of)
// arguments (the caller owns those buffers) and checks that no other result is left and that
// every memref argument has the identity layout the dispatch ABIs assume. Returns the kernel;
// errors name the executable or the argument.
mlir::FailureOr<mlir::func::FuncOp> FinishBufferizedKernel(ExecutableOp exe);

// Moves reduction loops outside the last parallel loop when that loop walks the output's
// contiguous (last) dimension: (parallel..., reductions..., last parallel). Named ops are
// generalized first. The innermost loop then writes consecutive elements (CPU: LLVM's loop
// vectorizer; CUDA: a per-thread output strip kept in registers). `wanted` can veto an op.
mlir::LogicalResult MoveReductionsOutsideLastParallel(
    mlir::func::FuncOp kernel,
    llvm::function_ref<bool(mlir::linalg::LinalgOp, int64_t lastParallel)> wanted);

// ---- dispatch ABI entries ---------------------------------------------------------------------

// The lowered kernel (LLVM func named like the executable) becomes `<name>_impl`, internal
// (inlined into the ABI entry). Each memref's aligned pointer is marked noalias: outputs are
// fresh buffers, so no binding aliases one the kernel writes. Returns the memref count;
// `hasParams` (optional) tells whether any value comes from the parameter buffer (a dynamic
// dim or a scalar).
int64_t PrepareLoweredKernel(mlir::LLVM::LLVMFuncOp impl, llvm::ArrayRef<mlir::Type> signature,
                             bool* hasParams = nullptr);

// Builds the lowered kernel's arguments from the ABI shared by both targets: memref argument
// i is binding i (`binding()` returns the next one's pointer), described with static sizes as
// constants and dynamic ones, in argument order, from the parameter buffer (`param()` returns
// the next i64 word), row-major strides; then each scalar from one parameter word (f32: low
// 32 bits; narrower integers truncated). Unsupported types: an error naming `target`.
mlir::LogicalResult AppendKernelArguments(mlir::OpBuilder& b, mlir::Location loc,
                                          ExecutableOp exe, llvm::StringRef target,
                                          llvm::ArrayRef<mlir::Type> signature,
                                          llvm::function_ref<mlir::Value()> binding,
                                          llvm::function_ref<mlir::Value()> param,
                                          llvm::SmallVectorImpl<mlir::Value>& args);

// The memref indices that `map`'s results give at loop coordinates `dims`: one affine.apply
// of each result (a linalg operand's element at a loop point).
llvm::SmallVector<mlir::Value> IndicesAt(mlir::OpBuilder& b, mlir::Location loc,
                                         mlir::AffineMap map, mlir::ValueRange dims);

// Tiles `op` by 1 in every loop but the innermost, which is tiled by `innermost`, at `op`'s
// place; erases `op` and returns the tiled op (failure, `op` untouched, when linalg cannot
// tile it).
mlir::FailureOr<mlir::linalg::LinalgOp> TileInnermostLoop(mlir::RewriterBase& rewriter,
                                                         mlir::linalg::LinalgOp op,
                                                         int64_t innermost);

}  // namespace hexir::codegen
