// Each op becomes one elementwise-shaped generic over its result: the body computes the
// source coordinates from linalg.index and reads them with tensor.extract, so the kernels are
// ordinary parallel loops (tiled, distributed, fused like any other generic). One pattern per
// op, applied once per op by a walk (no folding, no fixpoint): what they produce is what the
// rest of dispatch formation sees.
#include "passes/dispatch/LowerTensorOps.h"
#include "passes/dispatch/InPlaceUpdates.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace hexir {
namespace {
using namespace mlir;

bool unitStrides(ArrayRef<OpFoldResult> strides) {
  for (OpFoldResult s : strides) {
    std::optional<int64_t> c = getConstantIntValue(s);
    if (!c || *c != 1) return false;
  }
  return true;
}

// The forms the patterns rewrite (IsLowerableHostTensorOp: the legality VerifyInput checks).
bool isLowerable(tensor::ExtractSliceOp op) { return unitStrides(op.getMixedStrides()); }
// The slice dims a rank-reducing insert drops (unit sizes whose removal leaves the source's
// shape), or none.
std::optional<llvm::SmallDenseSet<unsigned>> droppedDims(tensor::InsertSliceOp op) {
  return computeRankReductionMask(op.getStaticSizes(), op.getSourceType().getShape(), /*matchDynamic=*/true);
}
bool isLowerable(tensor::InsertSliceOp op) {
  return unitStrides(op.getMixedStrides()) && op.getSourceType().getRank() == op.getDestType().getRank();
}
// A rank-reducing insert expandRankReducingInsert turns into a lowerable one.
bool isExpandable(tensor::InsertSliceOp op) {
  return unitStrides(op.getMixedStrides()) && op.getSourceType().getRank() != op.getDestType().getRank() &&
         droppedDims(op);
}

/// A rank-reducing insert (the source lacks unit dims of the slice) becomes an expand_shape
/// of the source to the slice's shape and an insert of the same rank, which the in-place
/// analysis and LowerInsertSlice take:
///
///   tensor.insert_slice %row into %t[%i, 0] [1, 8] [1, 1] : tensor<8xf32> into tensor<?x8xf32>
/// becomes
///   %e = tensor.expand_shape %row [[0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
///   tensor.insert_slice %e into %t[%i, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<?x8xf32>
void expandRankReducingInsert(tensor::InsertSliceOp op) {
  if (!isExpandable(op)) return;
  std::optional<llvm::SmallDenseSet<unsigned>> dropped = droppedDims(op);
  const int64_t rank = op.getDestType().getRank();
  // Each source dim with the dropped dims before it; trailing dropped dims join the last.
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices pending;
  for (int64_t d = 0; d < rank; ++d) {
    pending.push_back(d);
    if (!dropped->contains(d)) groups.push_back(std::exchange(pending, {}));
  }
  if (!pending.empty() && !groups.empty()) groups.back().append(pending.begin(), pending.end());
  OpBuilder b(op);
  auto sliceType = RankedTensorType::get(op.getStaticSizes(), op.getSourceType().getElementType());
  Value expanded = tensor::ExpandShapeOp::create(b, op.getLoc(), sliceType, op.getSource(), groups, op.getMixedSizes());
  op.getSourceMutable().assign(expanded);
}
bool isLowerable(tensor::PadOp op) { return op.getConstantPaddingValue() && !op.getNofold(); }
bool isLowerable(tensor::FromElementsOp op) { return op.getType().hasStaticShape(); }

// Ops inside a linalg body are kernel code already; only host ops are rewritten.
bool insideLinalgBody(Operation* op) { return op->getParentOfType<linalg::LinalgOp>() != nullptr; }

// Host values (created before `op`) for the dynamic dims of `type`, taken from `sizes`.
SmallVector<Value> dynamicSizes(OpBuilder& b, Location loc, RankedTensorType type,
                                ArrayRef<OpFoldResult> sizes) {
  SmallVector<Value> dyn;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d)) dyn.push_back(getValueOrCreateConstantIndexOp(b, loc, sizes[d]));
  return dyn;
}

// A generic over `type` (outs: a fresh empty) whose body is built by `body(b, loc, indices)`.
Value buildGeneric(OpBuilder& b, Location loc, RankedTensorType type, ValueRange dynSizes,
                   ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                   function_ref<Value(OpBuilder&, Location, ValueRange, ValueRange)> body) {
  int64_t rank = type.getRank();
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType(), dynSizes);
  SmallVector<AffineMap> maps(inputMaps.begin(), inputMaps.end());
  maps.push_back(b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{type}, inputs, ValueRange{empty}, maps, iterators,
      [&](OpBuilder& nb, Location nl, ValueRange args) {
        SmallVector<Value> indices;
        for (int64_t d = 0; d < rank; ++d) indices.push_back(linalg::IndexOp::create(nb, nl, d));
        Value v = body(nb, nl, indices, args.drop_back());
        linalg::YieldOp::create(nb, nl, v);
      });
  return generic->getResult(0);
}

// Inside a kernel body at point `idx`: the element of `source` at `idx - origin` where that
// lies in [0, extent) in every dim, else `outside`. Points outside read the source at 0 (never
// out of bounds) and discard it.
Value readShiftedOr(OpBuilder& b, Location loc, Value source, ValueRange idx,
                    ArrayRef<Value> origin, ArrayRef<Value> extent, Value outside) {
  Value inside = arith::ConstantIntOp::create(b, loc, 1, 1);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  SmallVector<Value> at;
  for (unsigned d = 0; d < idx.size(); ++d) {
    Value s = arith::SubIOp::create(b, loc, idx[d], origin[d]);
    Value ge = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, s, zero);
    Value lt = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, s, extent[d]);
    inside = arith::AndIOp::create(b, loc, inside, arith::AndIOp::create(b, loc, ge, lt));
    at.push_back(s);
  }
  for (Value& a : at) a = arith::SelectOp::create(b, loc, inside, a, zero);
  Value v = tensor::ExtractOp::create(b, loc, source, at);
  return arith::SelectOp::create(b, loc, inside, v, outside).getResult();
}

/// A unit-stride slice (maybe rank-reducing) reads its source at offset + index; dynamic
/// offsets and sizes are not verified, so coordinates are clamped into the source.
///
///   %s = tensor.extract_slice %src[%o, 0] [4, 8] [1, 1]
///       : tensor<?x8xf32> to tensor<4x8xf32>
/// becomes
///   %e = tensor.empty() : tensor<4x8xf32>
///   %s = linalg.generic {indexing_maps = [id], iterator_types = [parallel, parallel]}
///       outs(%e) { %i = linalg.index 0 ... %v = tensor.extract %src[min/max-clamped
///                  %i + %o, %j] ... linalg.yield %v }
struct LowerExtractSlice : OpRewritePattern<tensor::ExtractSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::ExtractSliceOp op, PatternRewriter& b) const override {
    if (insideLinalgBody(op)) return b.notifyMatchFailure(op, "inside a linalg body");
    if (!isLowerable(op)) return b.notifyMatchFailure(op, "a stride is not 1");
    Location loc = op.getLoc();
    SmallVector<Value> offsets;
    for (OpFoldResult o : op.getMixedOffsets()) offsets.push_back(getValueOrCreateConstantIndexOp(b, loc, o));
    llvm::SmallBitVector dropped = op.getDroppedDims();
    SmallVector<OpFoldResult> resultSizes;
    for (auto [d, s] : llvm::enumerate(op.getMixedSizes()))
      if (!dropped.test(d)) resultSizes.push_back(s);
    RankedTensorType type = op.getType();
    Value source = op.getSource();
    bool dynamic = !op.getOffsets().empty() || !op.getSizes().empty();
    SmallVector<Value> lastIndex;
    if (dynamic)
      for (int64_t d = 0; d < op.getSourceType().getRank(); ++d) {
        Value dim = getValueOrCreateConstantIndexOp(b, loc, tensor::getMixedSize(b, loc, source, d));
        lastIndex.push_back(arith::SubIOp::create(b, loc, dim, arith::ConstantIndexOp::create(b, loc, 1)));
      }
    Value r = buildGeneric(
        b, loc, type, dynamicSizes(b, loc, type, resultSizes), {}, {},
        [&](OpBuilder& nb, Location nl, ValueRange idx, ValueRange) {
          SmallVector<Value> at;
          unsigned k = 0;
          Value zero = arith::ConstantIndexOp::create(nb, nl, 0);
          for (unsigned d = 0; d < offsets.size(); ++d) {
            Value c = dropped.test(d) ? offsets[d]
                                      : arith::AddIOp::create(nb, nl, idx[k++], offsets[d]);
            if (dynamic)
              c = arith::MaxSIOp::create(nb, nl, arith::MinSIOp::create(nb, nl, c, lastIndex[d]), zero);
            at.push_back(c);
          }
          return tensor::ExtractOp::create(nb, nl, source, at).getResult();
        });
    b.replaceOp(op, r);
    return success();
  }
};

/// A unit-stride, same-rank insert makes a new tensor: inside the slice each point reads the
/// source at index - offset, elsewhere it keeps the destination's value. (In-place updates,
/// marked kInPlaceAttr beforehand, stay insert_slice ops: their own dispatches.)
///
///   %r = tensor.insert_slice %src into %dst[%o] [4] [1] : tensor<4xf32> into tensor<16xf32>
/// becomes
///   %r = linalg.generic {indexing_maps = [id, id]} ins(%dst) outs(%e) {
///     ^bb0(%d: f32, %out: f32): %s = %i - %o; %in = 0 <= %s < 4
///       %v = tensor.extract %src[select(%in, %s, 0)]; linalg.yield select(%in, %v, %d) }
struct LowerInsertSlice : OpRewritePattern<tensor::InsertSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::InsertSliceOp op, PatternRewriter& b) const override {
    if (insideLinalgBody(op)) return b.notifyMatchFailure(op, "inside a linalg body");
    if (op->hasAttr(kInPlaceAttr)) return b.notifyMatchFailure(op, "an in-place update");
    if (!isLowerable(op))
      return b.notifyMatchFailure(op, "a stride is not 1, or the source has another rank");
    Location loc = op.getLoc();
    SmallVector<Value> offsets, sizes;
    for (auto [o, s] : llvm::zip(op.getMixedOffsets(), op.getMixedSizes())) {
      offsets.push_back(getValueOrCreateConstantIndexOp(b, loc, o));
      sizes.push_back(getValueOrCreateConstantIndexOp(b, loc, s));
    }
    RankedTensorType type = op.getDestType();
    SmallVector<OpFoldResult> destSizes = tensor::getMixedSizes(b, loc, op.getDest());
    Value source = op.getSource();
    Value r = buildGeneric(
        b, loc, type, dynamicSizes(b, loc, type, destSizes), {op.getDest()},
        {b.getMultiDimIdentityMap(type.getRank())},
        [&](OpBuilder& nb, Location nl, ValueRange idx, ValueRange args) {
          return readShiftedOr(nb, nl, source, idx, offsets, sizes, args[0]);
        });
    b.replaceOp(op, r);
    return success();
  }
};

/// A constant-value pad reads the source at index - low inside it and yields the value
/// elsewhere.
///
///   %p = tensor.pad %src low[1] high[2] { tensor.yield %cst } : tensor<4xf32> to tensor<7xf32>
/// becomes
///   %p = linalg.generic outs(%e : tensor<7xf32>) {
///     %s = %i - 1; %in = 0 <= %s < 4
///     %v = tensor.extract %src[select(%in, %s, 0)]; linalg.yield select(%in, %v, %cst) }
struct LowerPad : OpRewritePattern<tensor::PadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::PadOp op, PatternRewriter& b) const override {
    if (insideLinalgBody(op)) return b.notifyMatchFailure(op, "inside a linalg body");
    if (!isLowerable(op))
      return b.notifyMatchFailure(op, "the padding value is not a constant, or nofold is set");
    Value pad = op.getConstantPaddingValue();
    Location loc = op.getLoc();
    RankedTensorType type = op.getResultType();
    Value source = op.getSource();
    SmallVector<Value> lows, srcDims;
    SmallVector<OpFoldResult> sizes;
    for (auto [d, l, h] : llvm::enumerate(op.getMixedLowPad(), op.getMixedHighPad())) {
      lows.push_back(getValueOrCreateConstantIndexOp(b, loc, l));
      srcDims.push_back(tensor::getMixedSize(b, loc, source, d).is<Value>()
                            ? tensor::DimOp::create(b, loc, source, d).getResult()
                            : arith::ConstantIndexOp::create(
                                  b, loc, op.getSourceType().getDimSize(d)).getResult());
      Value hv = getValueOrCreateConstantIndexOp(b, loc, h);
      sizes.push_back(arith::AddIOp::create(b, loc, srcDims.back(),
                                            arith::AddIOp::create(b, loc, lows.back(), hv))
                          .getResult());
    }
    Value r = buildGeneric(
        b, loc, type, dynamicSizes(b, loc, type, sizes), {}, {},
        [&](OpBuilder& nb, Location nl, ValueRange idx, ValueRange) {
          return readShiftedOr(nb, nl, source, idx, lows, srcDims, pad);
        });
    b.replaceOp(op, r);
    return success();
  }
};

/// Static-shape from_elements selects its element by the linear index (a 0-element tensor
/// is just an empty one).
///
///   %t = tensor.from_elements %a, %b : tensor<2xf32>
/// becomes
///   %t = linalg.generic outs(%e : tensor<2xf32>) {
///     %l = %i * 1; linalg.yield select(%l == 1, %b, %a) }
struct LowerFromElements : OpRewritePattern<tensor::FromElementsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::FromElementsOp op, PatternRewriter& b) const override {
    if (insideLinalgBody(op)) return b.notifyMatchFailure(op, "inside a linalg body");
    if (!isLowerable(op)) return b.notifyMatchFailure(op, "the shape is dynamic");
    RankedTensorType type = op.getType();
    Location loc = op.getLoc();
    SmallVector<Value> elements(op.getElements());
    if (elements.empty()) {  // a 0-element tensor: nothing to compute
      b.replaceOp(op, tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType()));
      return success();
    }
    SmallVector<int64_t> strides(type.getRank(), 1);
    for (int64_t d = type.getRank() - 2; d >= 0; --d) strides[d] = strides[d + 1] * type.getDimSize(d + 1);
    Value r = buildGeneric(
        b, loc, type, {}, {}, {}, [&](OpBuilder& nb, Location nl, ValueRange idx, ValueRange) {
          Value linear = arith::ConstantIndexOp::create(nb, nl, 0);
          for (unsigned d = 0; d < idx.size(); ++d)
            linear = arith::AddIOp::create(
                nb, nl, linear,
                arith::MulIOp::create(nb, nl, idx[d], arith::ConstantIndexOp::create(nb, nl, strides[d])));
          Value v = elements[0];
          for (unsigned j = 1; j < elements.size(); ++j) {
            Value is = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq, linear,
                                             arith::ConstantIndexOp::create(nb, nl, j));
            v = arith::SelectOp::create(nb, nl, is, elements[j], v);
          }
          return v;
        });
    b.replaceOp(op, r);
    return success();
  }
};

}  // namespace

bool IsLowerableHostTensorOp(Operation* op) {
  if (auto s = dyn_cast<tensor::ExtractSliceOp>(op)) return isLowerable(s);
  if (auto s = dyn_cast<tensor::InsertSliceOp>(op)) return isLowerable(s) || isExpandable(s);
  if (auto p = dyn_cast<tensor::PadOp>(op)) return isLowerable(p);
  if (auto f = dyn_cast<tensor::FromElementsOp>(op)) return isLowerable(f);
  return false;
}

std::string UnsupportedHostTensorOpForm(Operation* op) {
  if (IsLowerableHostTensorOp(op)) return "";
  if (auto s = dyn_cast<tensor::ExtractSliceOp>(op); s && !unitStrides(s.getMixedStrides()))
    return "a stride is not 1 (host slices need unit strides)";
  if (auto s = dyn_cast<tensor::InsertSliceOp>(op)) {
    if (!unitStrides(s.getMixedStrides())) return "a stride is not 1 (host slices need unit strides)";
    return "its source is not the slice with unit dims dropped";
  }
  if (auto p = dyn_cast<tensor::PadOp>(op))
    return p.getNofold() ? "nofold is set" : "the padding value is not a constant (it depends on the position)";
  if (isa<tensor::FromElementsOp>(op)) return "its result has a dynamic shape";
  return "";
}

void PopulateLowerHostTensorOpsPatterns(RewritePatternSet& patterns) {
  patterns.add<LowerExtractSlice, LowerInsertSlice, LowerPad, LowerFromElements>(
      patterns.getContext());
}

void LowerHostTensorOps(func::FuncOp func) {
  func.walk([&](tensor::InsertSliceOp insert) {
    if (!insideLinalgBody(insert)) expandRankReducingInsert(insert);
  });
  // In-place updates stay insert_slice ops (their own dispatches, result tied to the
  // destination); decided in program order, before anything is rewritten, so that a chain of
  // updates sees earlier marks.
  func.walk([&](tensor::InsertSliceOp insert) {
    if (!insideLinalgBody(insert) && CanInsertInPlace(insert))
      insert->setAttr(kInPlaceAttr, UnitAttr::get(insert->getContext()));
  });
  RewritePatternSet patterns(func.getContext());
  PopulateLowerHostTensorOpsPatterns(patterns);
  walkAndApplyPatterns(func, std::move(patterns));
}

}  // namespace hexir
