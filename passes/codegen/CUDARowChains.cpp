// One block per row for row chains (CUDARowChains.h).
#include "passes/codegen/CUDARowChains.h"

#include "dialects/hexir/IR/HexirAttributes.h"
#include "llvm/Support/MathExtras.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "passes/codegen/CPURowChains.h"
#include "passes/codegen/CUDABlockLevels.h"
#include "passes/codegen/CUDAWarpReduce.h"
#include "passes/codegen/KernelLoweringUtils.h"

namespace hexir::cuda {
using namespace mlir;

namespace {

// Elements each thread of a row's block takes.
constexpr int64_t kElementsPerThread = 8;
// Temporaries a row's block may keep in shared memory: the one-block lowering's limit less room
// for the reductions' partials.
constexpr int64_t kMaxTemporaryBytes = kMaxBlockLevelsSharedBytes - 8 * 1024;

// Step 1: all-parallel generics fused into the generics reading them, until none is left that
// another generic reads (linalg::fuseElementwiseOps one operand at a time; the readers keep
// their own outputs, so the chain's last op still writes the kernel's output argument).
void FuseElementwiseProducers(func::FuncOp kernel) {
  IRRewriter rw(kernel.getContext());
  for (bool changed = true; changed;) {
    changed = false;
    kernel.walk([&](linalg::GenericOp consumer) {
      for (OpOperand* operand : consumer.getDpsInputOperands()) {
        auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
        if (!producer || producer.getNumParallelLoops() != producer.getNumLoops() ||
            !linalg::areElementwiseOpsFusable(operand))
          continue;
        rw.setInsertionPoint(consumer);
        FailureOr<linalg::ElementwiseOpFusionResult> fused = linalg::fuseElementwiseOps(rw, operand);
        if (failed(fused)) continue;
        for (auto [from, to] : fused->replacements)
          if (from.getDefiningOp() == consumer.getOperation()) rw.replaceAllUsesWith(from, to);
        rw.eraseOp(consumer);
        if (producer->use_empty()) rw.eraseOp(producer);
        changed = true;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
  }
  // A producer fused into a reader while another still read it stays one of the fused op's
  // results (the softmax's exp beside its sum); once fused everywhere that result is dead.
  RewritePatternSet patterns(kernel.getContext());
  linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
  (void)applyPatternsGreedily(kernel, std::move(patterns));
}

// Inlines `loop`, which runs once (from its lower bound), at its place.
void InlineSingleIteration(RewriterBase& rw, scf::ForOp loop) {
  Block* body = loop.getBody();
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  SmallVector<Value> results(yield.getOperands());
  SmallVector<Value> arguments = {loop.getLowerBound()};
  llvm::append_range(arguments, loop.getInitArgs());
  rw.inlineBlockBefore(body, loop, arguments);
  rw.eraseOp(yield);
  rw.replaceOp(loop, results);
}

// Step 2 on `kernel` (a clone the caller erases on failure): the grid, or failure.
FailureOr<RowChainGrid> DistributeClone(func::FuncOp kernel, int64_t maxThreads) {
  FuseElementwiseProducers(kernel);
  TilingInterface last = codegen::KernelRoot(kernel);
  auto root = last ? dyn_cast<linalg::GenericOp>(last.getOperation()) : linalg::GenericOp();
  if (!root || root.getNumLoops() < 2 || root.getNumParallelLoops() != root.getNumLoops() ||
      !root.getMatchingIndexingMap(root.getDpsInitOperand(0)).isIdentity())
    return failure();
  SmallVector<int64_t> extents = root.getStaticLoopRanges();
  if (llvm::any_of(extents, ShapedType::isDynamic)) return failure();
  const int64_t loops = extents.size(), length = extents.back();
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < loops; ++d) rows *= extents[d];
  if (rows < 1 || rows >= (int64_t(1) << 31)) return failure();

  IRRewriter rw(kernel.getContext());
  SmallVector<OpFoldResult> sizes(loops, rw.getIndexAttr(1));
  sizes.back() = rw.getIndexAttr(0);
  FailureOr<scf::SCFTileAndFuseResult> tiled =
      codegen::TileRootAndFuseProducers(rw, cast<TilingInterface>(root.getOperation()), sizes);
  if (failed(tiled) || (int64_t)tiled->loops.size() != loops - 1) return failure();

  // The block's row: its id delinearized over the row loops (the last fastest).
  Location loc = kernel.getLoc();
  rw.setInsertionPointToStart(&kernel.getBody().front());
  Value rest = gpu::BlockIdOp::create(rw, loc, gpu::Dimension::x);
  SmallVector<Value> coordinate(loops - 1);
  for (int64_t d = loops - 2; d >= 0; --d) {
    Value n = arith::ConstantIndexOp::create(rw, loc, extents[d]);
    coordinate[d] = d > 0 ? arith::RemUIOp::create(rw, loc, rest, n).getResult() : rest;
    if (d > 0) rest = arith::DivUIOp::create(rw, loc, rest, n);
  }
  SmallVector<scf::ForOp> nest;
  for (auto [d, loopLike] : llvm::enumerate(tiled->loops)) {
    auto loop = dyn_cast<scf::ForOp>(loopLike.getOperation());
    if (!loop) return failure();
    rw.setInsertionPoint(loop);
    loop.setLowerBound(coordinate[d]);
    loop.setUpperBound(arith::AddIOp::create(rw, loc, coordinate[d], arith::ConstantIndexOp::create(rw, loc, 1)));
    loop.setStep(arith::ConstantIndexOp::create(rw, loc, 1));
    nest.push_back(loop);
  }
  for (scf::ForOp loop : nest) InlineSingleIteration(rw, loop);  // outermost first
  codegen::CleanUpTiledKernel(kernel);
  DominanceInfo dominance(kernel);
  eliminateCommonSubExpressions(rw, dominance, kernel);
  // Every op that computes is now the row's: none may be left over whole tensors. What stays
  // a temporary (the row scalars; a member the fusion could not take, a row) lives in the
  // block's shared memory, within the one-block lowering's static limit.
  int64_t temporaryBytes = 0;
  kernel.walk([&](tensor::EmptyOp empty) {
    RankedTensorType type = empty.getType();
    temporaryBytes += type.hasStaticShape() && type.getElementType().isIntOrFloat()
                          ? type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8)
                          : kMaxTemporaryBytes + 1;
  });
  if (temporaryBytes > kMaxTemporaryBytes) return failure();
  for (Operation& op : kernel.getBody().front())
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      int64_t points = 1;
      for (auto [n, it] : llvm::zip(linalgOp.getStaticLoopRanges(), linalgOp.getIteratorTypesArray()))
        if (it == utils::IteratorType::parallel) points *= n;
      if (points > length) return failure();
    } else if (isa<scf::ForOp>(op)) {
      return failure();
    }
  return RowChainGrid{rows, RowChainThreads(length, maxThreads)};
}

}  // namespace

bool IsRowChainGroup(ExecutableOp exe) {
  auto kind = exe->getAttrOfType<StringAttr>(kDispatchGroupAttr);
  return kind && kind.getValue() == codegen::kRowChainGroup;
}

int64_t RowChainThreads(int64_t rowLength, int64_t maxThreads) {
  int64_t limit = std::max<int64_t>(kWarpSize, std::min<int64_t>(1024, maxThreads) / kWarpSize * kWarpSize);
  int64_t threads = llvm::alignTo((rowLength + kElementsPerThread - 1) / kElementsPerThread, kWarpSize);
  return std::clamp<int64_t>(threads, kWarpSize, limit);
}

FailureOr<RowChainGrid> DistributeRowChain(func::FuncOp kernel, int64_t maxThreads) {
  OpBuilder cloner(kernel);
  auto clone = cast<func::FuncOp>(cloner.clone(*kernel));
  clone.setSymName((kernel.getSymName() + "_rows").str());
  FailureOr<RowChainGrid> grid = DistributeClone(clone, maxThreads);
  if (failed(grid)) {
    clone.erase();
    return failure();
  }
  StringAttr name = kernel.getSymNameAttr();
  kernel.erase();
  clone.setSymNameAttr(name);
  return grid;
}

}  // namespace hexir::cuda
