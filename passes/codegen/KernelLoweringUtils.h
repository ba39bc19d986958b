// Kernel-lowering steps shared by the CPU and CUDA code generators (passes/codegen/CPU*.cpp,
// CUDA*.cpp), so both targets tile, clean up and lower executables the same way.
//
// Everything here works on one executable's kernel (a func.func in the executable's inner
// module) and is not thread-safe beyond what MLIR guarantees for the IR it is given.
#pragma once

#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"

namespace hexir::codegen {

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

}  // namespace hexir::codegen
