#include "passes/codegen/KernelLoweringUtils.h"

#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hexir::codegen {
using namespace mlir;

FailureOr<scf::SCFTileAndFuseResult> TileRootAndFuseProducers(RewriterBase& rewriter,
                                                              TilingInterface root,
                                                              ArrayRef<OpFoldResult> tileSizes) {
  scf::SCFTilingOptions tiling;
  tiling.setTileSizes(tileSizes);
  tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
  scf::SCFTileAndFuseOptions options;
  options.setTilingOptions(tiling);
  rewriter.setInsertionPoint(root);
  FailureOr<scf::SCFTileAndFuseResult> tiled =
      scf::tileConsumerAndFuseProducersUsingSCF(rewriter, root, options);
  if (failed(tiled)) return failure();
  for (OpResult r : root->getResults()) rewriter.replaceAllUsesWith(r, tiled->replacements[r]);
  return tiled;
}

void CleanUpTiledKernel(func::FuncOp kernel) {
  MLIRContext* ctx = kernel.getContext();
  RewritePatternSet patterns(ctx);
  tensor::populateFoldTensorEmptyPatterns(patterns);
  // A dynamic loop bound taken from the root's iteration domain is a tensor.dim of the
  // untiled producer chain (dim(matmul) -> dim(fill) -> dim(empty(%n)) -> %n). Unresolved, it
  // keeps the whole untiled chain alive: computed in full by every workgroup on the CPU, a
  // dynamic allocation the CUDA lowering rejects.
  tensor::DimOp::getCanonicalizationPatterns(patterns, ctx);
  memref::populateResolveRankedShapedTypeResultDimsPatterns(patterns);
  (void)applyPatternsGreedily(kernel, std::move(patterns));
}

}  // namespace hexir::codegen
