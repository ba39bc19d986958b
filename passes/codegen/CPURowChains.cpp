// Row chains in blocks of rows that fit L1 (CPURowChains.h).
#include "passes/codegen/CPURowChains.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Transforms/CSE.h"
#include "passes/codegen/KernelLoweringUtils.h"

namespace hexir::codegen {
namespace {
using namespace mlir;

// Bytes a block of rows keeps in cache per element of a row: the input, one temporary (the
// exp of a softmax, the centred x of a layer norm) and the output.
constexpr int64_t kStreamsPerRow = 3;

// The chain's last op: an all-parallel generic with an identity output over rows and the row
// axis whose result no linalg op reads (it is inserted into the workgroup's slice or returned).
bool IsChainEnd(linalg::GenericOp g) {
  if (g.getNumLoops() < 2 || g.getNumDpsInits() != 1 || g.getNumParallelLoops() != g.getNumLoops() ||
      !g.hasPureTensorSemantics() || !g.getMatchingIndexingMap(g.getDpsInitOperand(0)).isIdentity())
    return false;
  return llvm::none_of(g->getUsers(), [](Operation* u) { return isa<linalg::LinalgOp>(u); });
}

// Rows per block: max(1, rowBlockBytes / (kStreamsPerRow * row bytes)), a constant when the row
// length is static, else computed in the kernel from it.
OpFoldResult RowsPerBlock(OpBuilder& b, Location loc, OpFoldResult rowLength, int64_t elementBytes,
                          int64_t rowBlockBytes) {
  const int64_t budget = std::max<int64_t>(1, rowBlockBytes / (kStreamsPerRow * elementBytes));
  if (std::optional<int64_t> n = getConstantIntValue(rowLength))
    return b.getIndexAttr(std::max<int64_t>(1, budget / std::max<int64_t>(1, *n)));
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value length = arith::MaxUIOp::create(b, loc, getValueOrCreateConstantIndexOp(b, loc, rowLength), one);
  Value rows = arith::DivUIOp::create(b, loc, arith::ConstantIndexOp::create(b, loc, budget), length);
  return arith::MaxUIOp::create(b, loc, rows, one).getResult();
}

}  // namespace

LogicalResult TileRowChains(func::FuncOp kernel, int64_t rowBlockBytes) {
  SmallVector<linalg::GenericOp> ends;
  kernel.walk([&](linalg::GenericOp g) {
    if (IsChainEnd(g)) ends.push_back(g);
  });
  IRRewriter rewriter(kernel.getContext());
  for (linalg::GenericOp end : ends) {
    const unsigned loops = end.getNumLoops();
    rewriter.setInsertionPoint(end);
    SmallVector<Range> domain = cast<TilingInterface>(end.getOperation()).getIterationDomain(rewriter);
    Type element = getElementTypeOrSelf(end.getDpsInits()[0].getType());
    int64_t bytes = element.isIntOrFloat() ? std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8) : 4;
    SmallVector<OpFoldResult> sizes(loops, rewriter.getIndexAttr(1));
    sizes[loops - 2] = RowsPerBlock(rewriter, end.getLoc(), domain[loops - 1].size, bytes, rowBlockBytes);
    sizes[loops - 1] = rewriter.getIndexAttr(0);
    if (failed(TileRootAndFuseProducers(rewriter, cast<TilingInterface>(end.getOperation()), sizes)))
      return end->emitError("could not tile a row chain into blocks of rows");
  }
  if (ends.empty()) return success();
  CleanUpTiledKernel(kernel);
  DominanceInfo dominance(kernel);
  eliminateCommonSubExpressions(rewriter, dominance, kernel);
  return success();
}

}  // namespace hexir::codegen
