#include "passes/dispatch/KeptDimRowReads.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace hexir {
namespace {
using namespace mlir;

// Host generics on tensors with one init; ops inside another linalg op's body are kernel code.
LogicalResult matchHostGeneric(PatternRewriter& rewriter, linalg::GenericOp g) {
  if (!g.hasPureTensorSemantics() || g.getNumDpsInits() != 1 || g->getNumResults() != 1)
    return rewriter.notifyMatchFailure(g, "not a one-result generic on tensors");
  if (g->getParentOfType<linalg::LinalgOp>())
    return rewriter.notifyMatchFailure(g, "inside another linalg op's body");
  if (g.getNumLoops() < 2) return rewriter.notifyMatchFailure(g, "fewer than two loops");
  return success();
}

// The rewrites that create tensor ops run only where the tensor dialect is loaded (always in
// hexir-compile, whose later passes depend on it); without it they are skipped.
LogicalResult matchTensorDialectLoaded(PatternRewriter& rewriter, linalg::GenericOp g) {
  if (!g.getContext()->getLoadedDialect<tensor::TensorDialect>())
    return rewriter.notifyMatchFailure(g, "the tensor dialect is not loaded");
  return success();
}

// (d0, ..., d(n-2)): the rows of an n-loop op.
AffineMap RowsMap(MLIRContext* ctx, unsigned loops) {
  return AffineMap::getMultiDimIdentityMap(loops, ctx).getMajorSubMap(loops - 1);
}

// (d0, ..., d(n-2), 0): the rows of an n-loop op in a tensor that keeps the row axis as 1.
AffineMap KeptDimMap(MLIRContext* ctx, unsigned loops) {
  SmallVector<AffineExpr> results;
  for (unsigned i = 0; i + 1 < loops; ++i) results.push_back(getAffineDimExpr(i, ctx));
  results.push_back(getAffineConstantExpr(0, ctx));
  return AffineMap::get(loops, 0, results, ctx);
}

// [[0], ..., [n-3], [n-2, n-1]]: the reassociation that appends a unit dim to rank n - 1.
SmallVector<ReassociationIndices> AppendUnitDim(int64_t rank) {
  SmallVector<ReassociationIndices> groups;
  for (int64_t i = 0; i + 2 < rank; ++i) groups.push_back({i});
  groups.push_back({rank - 2, rank - 1});
  return groups;
}

// The sizes of the [r..., 1] init of `g` (a tensor.empty's operands: no new use of a row value,
// which would keep it out of a chain).
SmallVector<OpFoldResult> KeptDimSizes(OpBuilder& b, Location loc, linalg::GenericOp g) {
  return tensor::getMixedSizes(b, loc, g.getDpsInits()[0]);
}

bool AppendsUnitDim(tensor::ExpandShapeOp expand) {
  const int64_t rank = expand.getResultType().getRank();
  return rank >= 2 && expand.getSrcType().getRank() == rank - 1 &&
         expand.getResultType().getShape().back() == 1 &&
         expand.getReassociationIndices() == AppendUnitDim(rank);
}

// The value of [r...] that `kept` (of [r..., 1]) reshapes, or null.
Value RowValueOf(Value kept) {
  auto type = dyn_cast<RankedTensorType>(kept.getType());
  if (!type || type.getRank() < 2 || type.getShape().back() != 1) return {};
  if (auto expand = kept.getDefiningOp<tensor::ExpandShapeOp>(); expand && AppendsUnitDim(expand))
    return expand.getSrc();
  if (!type.hasStaticShape()) return {};
  ArrayRef<int64_t> rows = type.getShape().drop_back();
  for (Value v = kept;;) {
    if (auto expand = v.getDefiningOp<tensor::ExpandShapeOp>()) v = expand.getSrc();
    else if (auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>()) v = collapse.getSrc();
    else return {};
    auto t = cast<RankedTensorType>(v.getType());
    if (!t.hasStaticShape()) return {};
    if (t.getShape() == rows) return v;
  }
}

bool AllParallelWithIdentityOutput(linalg::GenericOp g) {
  return g.getNumParallelLoops() == g.getNumLoops() &&
         g.getMatchingIndexingMap(g.getDpsInitOperand(0)).isIdentity();
}

bool EndsInUnitDim(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getRank() >= 2 && type.getShape().back() == 1;
}

/// A copy that appends a unit dim (the importer's reshape of a dynamic [r...] to [r..., 1]).
///
///   %k = linalg.generic {maps [(d0, d1) -> (d0), identity], all parallel}
///          ins(%s : tensor<?xf32>) outs(%e : tensor<?x1xf32>) { yield %in }
/// becomes
///   %k = tensor.expand_shape %s [[0, 1]] output_shape [%n, 1] : tensor<?xf32> into tensor<?x1xf32>
struct UnitDimCopyToExpand : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp g, PatternRewriter& rewriter) const override {
    if (failed(matchHostGeneric(rewriter, g)) || failed(matchTensorDialectLoaded(rewriter, g))) return failure();
    if (g.getNumDpsInputs() != 1 || !AllParallelWithIdentityOutput(g) || !EndsInUnitDim(g->getResult(0)))
      return rewriter.notifyMatchFailure(g, "not one input into [r..., 1]");
    OpOperand* input = g.getDpsInputOperand(0);
    if (g.getMatchingIndexingMap(input) != RowsMap(g.getContext(), g.getNumLoops()))
      return rewriter.notifyMatchFailure(g, "the input is not read along the rows");
    auto yield = cast<linalg::YieldOp>(g.getBody()->getTerminator());
    if (g.getBody()->getOperations().size() != 1 || yield.getOperand(0) != g.getMatchingBlockArgument(input))
      return rewriter.notifyMatchFailure(g, "the body is not a copy");
    SmallVector<OpFoldResult> sizes = KeptDimSizes(rewriter, g.getLoc(), g);
    rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(g, g->getResult(0).getType(), input->get(),
                                                       AppendUnitDim(g.getNumLoops()), sizes);
    return success();
  }
};

/// An all-parallel generic over [r..., 1] on kept-dims values (and scalars) runs over [r...] on
/// their rows.
///
///   %v = tensor.expand_shape %var [[0], [1, 2]] ... into tensor<2x5x1xf32>
///   %i = linalg.generic {identity maps, 3 parallel} ins(%v) outs(%e : tensor<2x5x1xf32>) { rsqrt }
/// becomes
///   %r = linalg.generic {identity maps, 2 parallel} ins(%var) outs(%e2 : tensor<2x5xf32>) { rsqrt }
///   %i = tensor.expand_shape %r [[0], [1, 2]] output_shape [2, 5, 1]
struct RowGenericOverKeptDims : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp g, PatternRewriter& rewriter) const override {
    if (failed(matchHostGeneric(rewriter, g)) || failed(matchTensorDialectLoaded(rewriter, g))) return failure();
    if (g.getNumDpsInputs() == 0 || !AllParallelWithIdentityOutput(g) || !EndsInUnitDim(g->getResult(0)))
      return rewriter.notifyMatchFailure(g, "not an all-parallel generic into [r..., 1]");
    if (!g.getBody()->getOps<linalg::IndexOp>().empty() || !g.getRegionOutputArgs()[0].use_empty())
      return rewriter.notifyMatchFailure(g, "the body reads its indices or its output");
    const unsigned loops = g.getNumLoops() - 1;
    SmallVector<Value> rows;
    SmallVector<AffineMap> maps;
    for (OpOperand* input : g.getDpsInputOperands()) {
      AffineMap map = g.getMatchingIndexingMap(input);
      if (map.getNumResults() == 0) {  // a scalar (torch's LayerNorm epsilon as a tensor<f32>)
        rows.push_back(input->get());
        maps.push_back(AffineMap::get(loops, 0, g.getContext()));
        continue;
      }
      Value row = map.isIdentity() ? RowValueOf(input->get()) : Value();
      if (!row) return rewriter.notifyMatchFailure(g, "an input is neither a scalar nor a kept-dims value read whole");
      rows.push_back(row);
      maps.push_back(AffineMap::getMultiDimIdentityMap(loops, g.getContext()));
    }
    if (llvm::all_of(maps, [](AffineMap m) { return m.getNumResults() == 0; }))
      return rewriter.notifyMatchFailure(g, "no input is a kept-dims value");
    Location loc = g.getLoc();
    auto resultType = cast<RankedTensorType>(g->getResult(0).getType());
    SmallVector<OpFoldResult> sizes = KeptDimSizes(rewriter, loc, g);
    Value init = tensor::EmptyOp::create(rewriter, loc, ArrayRef(sizes).drop_back(), resultType.getElementType());
    maps.push_back(AffineMap::getMultiDimIdentityMap(loops, g.getContext()));
    auto rowGeneric = linalg::GenericOp::create(
        rewriter, loc, TypeRange{init.getType()}, rows, ValueRange{init}, maps,
        SmallVector<utils::IteratorType>(loops, utils::IteratorType::parallel));
    rowGeneric->setDiscardableAttrs(g->getDiscardableAttrDictionary());
    rewriter.inlineRegionBefore(g.getRegion(), rowGeneric.getRegion(), rowGeneric.getRegion().end());
    rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(g, resultType, rowGeneric->getResult(0),
                                                       AppendUnitDim(resultType.getRank()), sizes);
    return success();
  }
};

/// An input read at (d0, ..., d(n-2), 0) from a kept-dims value is read from its row value.
///
///   %k = tensor.expand_shape %max [[0, 1]] output_shape [4, 1] : tensor<4xf32> into tensor<4x1xf32>
///   linalg.generic {maps [(d0, d1) -> (d0, d1), (d0, d1) -> (d0, 0), ...]} ins(%x, %k ...)
/// becomes
///   linalg.generic {maps [(d0, d1) -> (d0, d1), (d0, d1) -> (d0), ...]} ins(%x, %max ...)
struct ReadKeptDimRowsDirectly : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp g, PatternRewriter& rewriter) const override {
    if (failed(matchHostGeneric(rewriter, g))) return failure();
    MLIRContext* ctx = g.getContext();
    const unsigned loops = g.getNumLoops();
    SmallVector<std::pair<OpOperand*, Value>> reads;
    for (OpOperand* input : g.getDpsInputOperands())
      if (g.getMatchingIndexingMap(input) == KeptDimMap(ctx, loops))
        if (Value row = RowValueOf(input->get())) reads.push_back({input, row});
    if (reads.empty()) return rewriter.notifyMatchFailure(g, "no input is a kept-dims row read");
    SmallVector<AffineMap> maps = g.getIndexingMapsArray();
    rewriter.modifyOpInPlace(g, [&] {
      for (auto [input, row] : reads) {
        maps[input->getOperandNumber()] = RowsMap(ctx, loops);
        input->set(row);
      }
      g.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
    });
    return success();
  }
};

// A host generic of n - 1 all-parallel loops with identity maps, scalars aside (a generic over
// the rows), whose result only `reader` (n loops) reads, along its rows, through `operand`
// (a result also used elsewhere, LayerNormalization's Mean output, would stay a result of the
// fused op, which then is no chain member).
bool IsRowGenericReadAlongRows(linalg::GenericOp reader, OpOperand& operand) {
  auto rows = operand.get().getDefiningOp<linalg::GenericOp>();
  if (!rows || rows->getParentOfType<linalg::LinalgOp>() || !rows.hasPureTensorSemantics() ||
      rows->getNumResults() != 1 || !rows->hasOneUse() || rows.getNumLoops() + 1 != reader.getNumLoops() ||
      rows.getNumParallelLoops() != rows.getNumLoops() || !rows.getBody()->getOps<linalg::IndexOp>().empty())
    return false;
  if (!llvm::all_of(rows.getIndexingMapsArray(), [](AffineMap m) { return m.isIdentity() || m.getNumResults() == 0; }))
    return false;
  return reader.getMatchingIndexingMap(&operand) == RowsMap(reader.getContext(), reader.getNumLoops());
}

// Fuses each generic over the rows into the n-loop generics that read it along their rows
// (upstream elementwise fusion: its body runs per element of the reader, loop-invariant along
// the row, which LLVM hoists), until none is left; a generic over the rows left unused is erased.
void FuseRowGenericsIntoRowReaders(func::FuncOp func) {
  IRRewriter rewriter(func.getContext());
  // One fusion per walk: a fusion replaces its reader, which may be another pair's producer.
  for (bool changed = true; changed;) {
    changed = false;
    SmallVector<std::pair<linalg::GenericOp, OpOperand*>> candidates;
    func.walk([&](linalg::GenericOp reader) {
      if (reader->getParentOfType<linalg::LinalgOp>() || !reader.hasPureTensorSemantics() || reader.getNumLoops() < 2)
        return;
      for (OpOperand* input : reader.getDpsInputOperands())
        if (IsRowGenericReadAlongRows(reader, *input) && linalg::areElementwiseOpsFusable(input))
          candidates.push_back({reader, input});
    });
    for (auto [reader, input] : candidates) {
      Operation* rows = input->get().getDefiningOp();
      rewriter.setInsertionPoint(reader);
      FailureOr<linalg::ElementwiseOpFusionResult> fused = linalg::fuseElementwiseOps(rewriter, input);
      if (failed(fused)) continue;
      for (auto [original, replacement] : fused->replacements)
        if (original.getDefiningOp() == reader) rewriter.replaceAllUsesWith(original, replacement);
      rewriter.eraseOp(reader);
      if (rows->use_empty()) rewriter.eraseOp(rows);
      changed = true;
      break;
    }
  }
}

// A dim of a tensor.expand_shape's result is its output_shape entry:
//
//   %e = tensor.expand_shape %r [[0], [1, 2]] output_shape [%n, %t, 1] : ... into tensor<?x?x1xf32>
//   %d = tensor.dim %e, %c1                                  ==>  %t
//
// With dynamic dims (a dynamic export) the importer's shape checks read the kept-dims value's
// dims after its readers read the row value directly; folded, the reshape dies and the row
// value has no user outside its chain.
struct DimOfExpandShapeToOutputSize : OpRewritePattern<tensor::DimOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::DimOp dim, PatternRewriter& rewriter) const override {
    auto expand = dim.getSource().getDefiningOp<tensor::ExpandShapeOp>();
    if (!expand) return rewriter.notifyMatchFailure(dim, "not a dim of a tensor.expand_shape");
    std::optional<int64_t> index = dim.getConstantIndex();
    if (!index) return rewriter.notifyMatchFailure(dim, "the dim index is not a constant");
    OpFoldResult size = expand.getMixedOutputShape()[*index];
    rewriter.replaceOp(dim, getValueOrCreateConstantIndexOp(rewriter, dim.getLoc(), size));
    return success();
  }
};

}  // namespace

void PopulateKeptDimRowReadPatterns(RewritePatternSet& patterns) {
  patterns.add<UnitDimCopyToExpand, RowGenericOverKeptDims, ReadKeptDimRowsDirectly>(patterns.getContext());
}

void ReadRowsThroughKeptDims(func::FuncOp func) {
  RewritePatternSet patterns(func.getContext());
  PopulateKeptDimRowReadPatterns(patterns);
  walkAndApplyPatterns(func, std::move(patterns));
  RewritePatternSet dims(func.getContext());
  dims.add<DimOfExpandShapeToOutputSize>(func.getContext());
  walkAndApplyPatterns(func, std::move(dims));
  SmallVector<Operation*> reshapes;
  func.walk([&](Operation* op) {
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::DimOp>(op)) reshapes.push_back(op);
  });
  for (Operation* op : llvm::reverse(reshapes))
    if (op->use_empty()) op->erase();
  FuseRowGenericsIntoRowReaders(func);
}

}  // namespace hexir
