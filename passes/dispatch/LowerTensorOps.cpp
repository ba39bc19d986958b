// Each op becomes one elementwise-shaped generic over its result: the body computes the
// source coordinates from linalg.index and reads them with tensor.extract, so the kernels are
// ordinary parallel loops (tiled, distributed, fused like any other generic).
#include "passes/dispatch/LowerTensorOps.h"
#include "passes/dispatch/InPlaceUpdates.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/TypeSwitch.h"

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

LogicalResult lowerExtractSlice(tensor::ExtractSliceOp op) {
  if (!unitStrides(op.getMixedStrides())) return failure();
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<Value> offsets;
  for (OpFoldResult o : op.getMixedOffsets()) offsets.push_back(getValueOrCreateConstantIndexOp(b, loc, o));
  llvm::SmallBitVector dropped = op.getDroppedDims();
  SmallVector<OpFoldResult> resultSizes;
  for (auto [d, s] : llvm::enumerate(op.getMixedSizes()))
    if (!dropped.test(d)) resultSizes.push_back(s);
  RankedTensorType type = op.getType();
  Value source = op.getSource();
  // Dynamic offsets/sizes are not verified: clamp coordinates into the source so that a bad
  // offset reads wrong values instead of memory outside the buffer.
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
  op.replaceAllUsesWith(r);
  op->erase();
  return success();
}

LogicalResult lowerInsertSlice(tensor::InsertSliceOp op) {
  if (!unitStrides(op.getMixedStrides()) ||
      op.getSourceType().getRank() != op.getDestType().getRank())
    return failure();
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<Value> offsets, ends;
  for (auto [o, s] : llvm::zip(op.getMixedOffsets(), op.getMixedSizes())) {
    offsets.push_back(getValueOrCreateConstantIndexOp(b, loc, o));
    ends.push_back(arith::AddIOp::create(b, loc, offsets.back(),
                                         getValueOrCreateConstantIndexOp(b, loc, s)));
  }
  RankedTensorType type = op.getDestType();
  SmallVector<OpFoldResult> destSizes = tensor::getMixedSizes(b, loc, op.getDest());
  Value source = op.getSource();
  Value r = buildGeneric(
      b, loc, type, dynamicSizes(b, loc, type, destSizes), {op.getDest()},
      {b.getMultiDimIdentityMap(type.getRank())},
      [&](OpBuilder& nb, Location nl, ValueRange idx, ValueRange args) {
        Value inside = arith::ConstantIntOp::create(nb, nl, 1, 1);
        SmallVector<Value> at;
        Value zero = arith::ConstantIndexOp::create(nb, nl, 0);
        for (unsigned d = 0; d < idx.size(); ++d) {
          Value ge = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sge, idx[d], offsets[d]);
          Value lt = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::slt, idx[d], ends[d]);
          inside = arith::AndIOp::create(nb, nl, inside, arith::AndIOp::create(nb, nl, ge, lt));
          at.push_back(arith::SubIOp::create(nb, nl, idx[d], offsets[d]));
        }
        // Out-of-slice points read the source at 0 (never out of bounds), then discard it.
        for (Value& a : at) a = arith::SelectOp::create(nb, nl, inside, a, zero);
        Value v = tensor::ExtractOp::create(nb, nl, source, at);
        return arith::SelectOp::create(nb, nl, inside, v, args[0]).getResult();
      });
  op.replaceAllUsesWith(r);
  op->erase();
  return success();
}

LogicalResult lowerPad(tensor::PadOp op) {
  Value pad = op.getConstantPaddingValue();
  if (!pad || op.getNofold()) return failure();
  OpBuilder b(op);
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
        Value inside = arith::ConstantIntOp::create(nb, nl, 1, 1);
        Value zero = arith::ConstantIndexOp::create(nb, nl, 0);
        SmallVector<Value> at;
        for (unsigned d = 0; d < idx.size(); ++d) {
          Value s = arith::SubIOp::create(nb, nl, idx[d], lows[d]);
          Value ge = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sge, s, zero);
          Value lt = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::slt, s, srcDims[d]);
          inside = arith::AndIOp::create(nb, nl, inside, arith::AndIOp::create(nb, nl, ge, lt));
          at.push_back(s);
        }
        for (Value& a : at) a = arith::SelectOp::create(nb, nl, inside, a, zero);
        Value v = tensor::ExtractOp::create(nb, nl, source, at);
        return arith::SelectOp::create(nb, nl, inside, v, pad).getResult();
      });
  op.replaceAllUsesWith(r);
  op->erase();
  return success();
}

LogicalResult lowerFromElements(tensor::FromElementsOp op) {
  RankedTensorType type = op.getType();
  if (!type.hasStaticShape()) return failure();
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<Value> elements(op.getElements());
  if (elements.empty()) {  // a 0-element tensor: nothing to compute
    Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
    op.replaceAllUsesWith(empty);
    op->erase();
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
  op.replaceAllUsesWith(r);
  op->erase();
  return success();
}

}  // namespace

bool IsLowerableHostTensorOp(Operation* op) {
  if (auto s = dyn_cast<tensor::ExtractSliceOp>(op)) return unitStrides(s.getMixedStrides());
  if (auto s = dyn_cast<tensor::InsertSliceOp>(op))
    return unitStrides(s.getMixedStrides()) &&
           s.getSourceType().getRank() == s.getDestType().getRank();
  if (auto p = dyn_cast<tensor::PadOp>(op)) return p.getConstantPaddingValue() && !p.getNofold();
  if (auto f = dyn_cast<tensor::FromElementsOp>(op)) return f.getType().hasStaticShape();
  return false;
}

void LowerHostTensorOps(func::FuncOp func) {
  SmallVector<Operation*> ops;
  func.walk([&](Operation* op) {
    if (isa<tensor::ExtractSliceOp, tensor::InsertSliceOp, tensor::PadOp, tensor::FromElementsOp>(op) &&
        !op->getParentOfType<linalg::LinalgOp>())
      ops.push_back(op);
  });
  // In-place updates stay insert_slice ops (their own dispatches, result tied to the
  // destination); decided in program order so that a chain of updates sees earlier marks.
  llvm::erase_if(ops, [](Operation* op) {
    auto insert = dyn_cast<tensor::InsertSliceOp>(op);
    if (!insert || !CanInsertInPlace(insert)) return false;
    insert->setAttr(kInPlaceAttr, UnitAttr::get(op->getContext()));
    return true;
  });
  for (Operation* op : ops) {
    (void)llvm::TypeSwitch<Operation*, LogicalResult>(op)
        .Case([](tensor::ExtractSliceOp o) { return lowerExtractSlice(o); })
        .Case([](tensor::InsertSliceOp o) { return lowerInsertSlice(o); })
        .Case([](tensor::PadOp o) { return lowerPad(o); })
        .Case([](tensor::FromElementsOp o) { return lowerFromElements(o); })
        .Default([](Operation*) { return failure(); });
  }
}

}  // namespace hexir
