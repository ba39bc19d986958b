// The block edge is one 64-byte cache line of the output's element type (16 f32): the lines
// of a block's input columns and output rows (2 x 16 lines) fit L1 with room to spare, even
// when a power-of-two row pitch maps them all to the same sets.
#include "passes/codegen/CPUTransposeTiling.h"

#include <optional>

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"

namespace hexir::codegen {
namespace {
using namespace mlir;

constexpr int64_t kCacheLineBytes = 64;

// The loop that walks the contiguous dimension of an input the innermost loop also moves
// through, when it is not the innermost loop; none for ops outside the pattern above.
std::optional<unsigned> StridedInputLoop(linalg::LinalgOp op) {
  const unsigned loops = op.getNumLoops();
  if (loops < 2 || op.getNumParallelLoops() != loops || op.getNumDpsInits() != 1 ||
      !op.hasPureTensorSemantics())
    return std::nullopt;
  if (!op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity()) return std::nullopt;
  const unsigned inner = loops - 1;
  for (OpOperand* input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (map.getNumResults() < 2 || !map.isProjectedPermutation() || !map.isFunctionOfDim(inner))
      continue;
    unsigned last = cast<AffineDimExpr>(map.getResults().back()).getPosition();
    if (last != inner) return last;
  }
  return std::nullopt;
}

}  // namespace

LogicalResult TileTransposingLoops(func::FuncOp kernel) {
  SmallVector<std::pair<linalg::LinalgOp, unsigned>> targets;
  kernel.walk([&](linalg::LinalgOp op) {
    if (std::optional<unsigned> loop = StridedInputLoop(op)) targets.push_back({op, *loop});
  });
  IRRewriter rewriter(kernel.getContext());
  for (auto [op, strided] : targets) {
    Type element = getElementTypeOrSelf(op.getDpsInits()[0].getType());
    int64_t bytes = std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
    int64_t block = std::max<int64_t>(1, kCacheLineBytes / bytes);
    const unsigned loops = op.getNumLoops();
    // Both block loops must be longer than a block to gain anything.
    SmallVector<int64_t> extents = op.getStaticLoopRanges();
    auto longer = [&](unsigned l) { return ShapedType::isDynamic(extents[l]) || extents[l] > block; };
    if (!longer(strided) || !longer(loops - 1)) continue;
    SmallVector<OpFoldResult> sizes(loops, rewriter.getIndexAttr(1));
    sizes[strided] = rewriter.getIndexAttr(block);
    sizes[loops - 1] = rewriter.getIndexAttr(block);
    scf::SCFTilingOptions options;
    options.setTileSizes(sizes);
    rewriter.setInsertionPoint(op);
    FailureOr<scf::SCFTilingResult> tiled =
        scf::tileUsingSCF(rewriter, cast<TilingInterface>(op.getOperation()), options);
    if (failed(tiled)) return op->emitError("could not tile a transposing loop nest into blocks");
    rewriter.replaceOp(op, tiled->replacements);
  }
  return success();
}

}  // namespace hexir::codegen
