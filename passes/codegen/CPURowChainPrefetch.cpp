// Prefetching the next block of rows in row chain kernels (CPURowChainPrefetch.h).
#include "passes/codegen/CPURowChainPrefetch.h"

#include "llvm/ADT/DenseSet.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "passes/codegen/CPUUnitStride.h"
#include "passes/codegen/KernelLoweringUtils.h"

namespace hexir::codegen {
namespace {
using namespace mlir;

// True when `v` is a kernel argument or a view of one (the workgroup's slice of it).
bool ViewsKernelArgument(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>()) v = view.getViewSource();
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && isa<func::FuncOp>(arg.getOwner()->getParentOp());
}

// The input of `g` to prefetch: read through an identity map as a unit-stride, rank-preserving
// `memref.subview` of a kernel argument or of a view of one (the workgroup's rows), of int or
// float elements, at least two dimensions.
OpOperand* RowInput(linalg::GenericOp g) {
  for (OpOperand* input : g.getDpsInputOperands()) {
    if (!g.getMatchingIndexingMap(input).isIdentity()) continue;
    auto view = input->get().getDefiningOp<memref::SubViewOp>();
    if (!view) continue;
    if (!ViewsKernelArgument(view.getSource())) continue;
    MemRefType source = view.getSourceType();
    if (source.getRank() < 2 || view.getType().getRank() != source.getRank() || !HasUnitInnerStride(source) ||
        !source.getElementType().isIntOrFloat() || source.getElementTypeBitWidth() % 8)
      continue;
    if (!llvm::all_of(view.getStaticStrides(), [](int64_t s) { return s == 1; })) continue;
    return input;
  }
  return nullptr;
}

bool Prefetches(linalg::GenericOp g) {
  return g.hasPureBufferSemantics() && g.getNumLoops() >= 2 && g.getNumParallelLoops() == g.getNumLoops() &&
         isa<scf::ForOp>(g->getParentOp()) && RowInput(g);
}

// Tiles `g` into runs along its innermost loop with the next block's prefetches before each.
LogicalResult TileWithPrefetches(RewriterBase& rewriter, linalg::GenericOp g) {
  OpOperand* input = RowInput(g);
  const unsigned inputNumber = input->getOperandNumber();
  auto block = input->get().getDefiningOp<memref::SubViewOp>();
  MemRefType source = block.getSourceType();
  const int64_t rank = source.getRank(), elementBytes = source.getElementTypeBitWidth() / 8;
  const int64_t runElements = std::max<int64_t>(1, kPrefetchRunBytes / elementBytes);
  const int64_t lineElements = std::max<int64_t>(1, kCacheLineBytes / elementBytes);
  FailureOr<linalg::LinalgOp> tiled = codegen::TileInnermostLoop(rewriter, g, runElements);
  if (failed(tiled)) return failure();
  Operation* tile = *tiled;
  Location loc = tile->getLoc();
  rewriter.setInsertionPoint(tile);
  // Absolute offsets of the run: the block's offsets plus the run's within the block.
  SmallVector<Value> at = getValueOrCreateConstantIndexOp(rewriter, loc, block.getMixedOffsets());
  if (auto run = tile->getOperand(inputNumber).getDefiningOp<memref::SubViewOp>()) {
    SmallVector<Value> within = getValueOrCreateConstantIndexOp(rewriter, loc, run.getMixedOffsets());
    for (int64_t d = 0; d < rank; ++d) at[d] = arith::AddIOp::create(rewriter, loc, at[d], within[d]);
  }
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  auto last = [&](int64_t d) {
    Value extent = memref::DimOp::create(rewriter, loc, block.getSource(), d);
    return arith::SubIOp::create(rewriter, loc, extent, one).getResult();
  };
  Value rows = getValueOrCreateConstantIndexOp(rewriter, loc, block.getMixedSizes()[rank - 2]);
  Value next = arith::AddIOp::create(rewriter, loc, at[rank - 2], rows);
  at[rank - 2] = arith::MinUIOp::create(rewriter, loc, next, last(rank - 2));
  Value lastColumn = last(rank - 1);
  Value column = at[rank - 1];
  for (int64_t l = 0; l < runElements; l += lineElements) {
    Value c = arith::AddIOp::create(rewriter, loc, column, arith::ConstantIndexOp::create(rewriter, loc, l));
    at[rank - 1] = arith::MinUIOp::create(rewriter, loc, c, lastColumn);
    memref::PrefetchOp::create(rewriter, loc, block.getSource(), at, rewriter.getBoolAttr(false),
                               rewriter.getI32IntegerAttr(2), rewriter.getBoolAttr(true));
  }
  return success();
}

}  // namespace

int64_t PrefetchNextRowBlocks(func::FuncOp kernel) {
  SmallVector<linalg::GenericOp> generics;
  llvm::DenseSet<Block*> seen;
  kernel.walk([&](linalg::GenericOp g) {
    if (Prefetches(g) && seen.insert(g->getBlock()).second) generics.push_back(g);
  });
  IRRewriter rewriter(kernel.getContext());
  int64_t rewritten = 0;
  for (linalg::GenericOp g : generics)
    if (succeeded(TileWithPrefetches(rewriter, g))) ++rewritten;
  return rewritten;
}

}  // namespace hexir::codegen
