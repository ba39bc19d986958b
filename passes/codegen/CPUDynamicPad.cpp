// Rewrites the pads described in CPUDynamicPad.h.
#include "passes/codegen/CPUDynamicPad.h"
#include "passes/codegen/CPUConvolutionKernel.h"
#include "passes/codegen/CPUPadReads.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace hexir::codegen {
using namespace mlir;

namespace {

using pad_reads::Conjuncts;
using pad_reads::ConstantOf;
using pad_reads::IsIndexOf;
using pad_reads::IsOneBelow;
using pad_reads::MatchPosition;
using pad_reads::Outside;

struct PadDim {
  OpFoldResult offset;  // the tile's offset along the dim; null: 0
  Value shifted;        // s_d in the body; null when the dim is not padded
  OpFoldResult low, extent;
  Value last;  // the clamp's upper bound, E_d - 1
};

struct DynamicPad {
  Value source, value;  // value: defined above the generic, or a constant inside its body
  SmallVector<PadDim> dims;
};

std::optional<DynamicPad> MatchDynamicPad(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 0 || op.getNumDpsInits() != 1 || op->getNumResults() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops() || !op.getIndexingMapsArray()[0].isIdentity())
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type) return std::nullopt;
  Region& body = op.getRegion();
  auto yield = cast<linalg::YieldOp>(body.front().getTerminator());
  auto select = yield.getValues()[0].getDefiningOp<arith::SelectOp>();
  if (!select) return std::nullopt;
  auto extract = select.getTrueValue().getDefiningOp<tensor::ExtractOp>();
  Value value = select.getFalseValue();
  if (!extract || body.isAncestor(extract.getTensor().getParentRegion())) return std::nullopt;
  if (body.isAncestor(value.getParentRegion()) && !value.getDefiningOp<arith::ConstantOp>()) return std::nullopt;
  auto sourceType = cast<RankedTensorType>(extract.getTensor().getType());
  if (sourceType.getRank() != type.getRank() || sourceType.getElementType() != type.getElementType())
    return std::nullopt;
  DynamicPad pad{extract.getTensor(), value, {}};
  for (auto [d, at] : llvm::enumerate(extract.getIndices())) {
    PadDim dim;
    // A dim of one element on both sides read at 0 (a static batch of 1, whose index a tiled
    // generic folds to the constant): not padded, as i_d would be.
    if (type.getDimSize(d) == 1 && sourceType.getDimSize(d) == 1 && ConstantOf(at) == 0) {
      pad.dims.push_back(dim);
      continue;
    }
    if (std::optional<OpFoldResult> offset = MatchPosition(at, d, body)) {
      dim.offset = *offset;
      pad.dims.push_back(dim);
      continue;
    }
    // min(max(s, 0), last) with s = position - low (or the position: a low of 0 folded away).
    std::optional<pad_reads::ClampedRead> read = pad_reads::MatchClampedRead(at, d, body);
    if (!read) return std::nullopt;
    dim.offset = read->tile;
    dim.low = read->low;
    dim.shifted = read->shifted;
    dim.last = read->last;
    pad.dims.push_back(dim);
  }
  // The condition must be exactly 0 <= s_d < E_d for every padded dim (and constant trues),
  // and each clamp's bound E_d - 1.
  SmallVector<Value> conjuncts;
  Conjuncts(select.getCondition(), conjuncts);
  SmallVector<bool> above(pad.dims.size(), false);
  for (Value c : conjuncts) {
    if (std::optional<int64_t> k = ConstantOf(c)) {
      if (*k == 0) return std::nullopt;
      continue;
    }
    auto cmp = c.getDefiningOp<arith::CmpIOp>();
    PadDim* dim = nullptr;
    for (PadDim& candidate : pad.dims)
      if (cmp && candidate.shifted && candidate.shifted == cmp.getLhs()) dim = &candidate;
    if (!dim) return std::nullopt;
    if (cmp.getPredicate() == arith::CmpIPredicate::sge && ConstantOf(cmp.getRhs()) == 0) {
      above[dim - pad.dims.data()] = true;
    } else if (cmp.getPredicate() == arith::CmpIPredicate::slt && !dim->extent) {
      std::optional<OpFoldResult> extent = Outside(cmp.getRhs(), body);
      if (!extent) return std::nullopt;
      dim->extent = *extent;
    } else {
      return std::nullopt;
    }
  }
  for (auto [d, dim] : llvm::enumerate(pad.dims))
    if (dim.shifted && (!above[d] || !dim.extent || !IsOneBelow(dim.last, dim.extent))) return std::nullopt;
  return pad;
}

// True when `op`'s result is read only as the input x of a depthwise convolution (its
// extents may be read too: workgroup distribution leaves tensor.dim ops of it) and its
// padded dims are the plane's (2 and 3), each untiled with a constant low >= 0: the window
// may then be placed at the static lows (the form CPUConvolutionDepthwise.h reads from).
bool FeedsDepthwiseAtStaticLows(linalg::GenericOp op, const DynamicPad& pad) {
  if (pad.dims.size() != 4) return false;
  Operation* reader = nullptr;
  for (OpOperand& use : op->getResult(0).getUses()) {
    if (isa<tensor::DimOp>(use.getOwner())) continue;
    if (reader || use.getOperandNumber() != 0) return false;
    reader = use.getOwner();
  }
  auto conv = dyn_cast_or_null<linalg::LinalgOp>(reader);
  if (!conv) return false;
  std::optional<ConvolutionGeometry> g = MatchConvolution(conv);
  if (!g || g->kind != ConvolutionKind::kDepthwise) return false;
  for (auto [d, dim] : llvm::enumerate(pad.dims)) {
    if (!dim.shifted) continue;
    std::optional<int64_t> low = getConstantIntValue(dim.low);
    if (d < 2 || dim.offset || !low || *low < 0) return false;
  }
  return true;
}

}  // namespace

int LowerDynamicPadsToCopies(func::FuncOp kernel) {
  SmallVector<std::pair<linalg::GenericOp, DynamicPad>> pads;
  kernel.walk([&](linalg::GenericOp op) {
    if (std::optional<DynamicPad> pad = MatchDynamicPad(op)) pads.push_back({op, *pad});
  });
  for (auto& [op, pad] : pads) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value init = op.getDpsInits()[0];
    auto index = [&](OpFoldResult v) { return getValueOrCreateConstantIndexOp(b, loc, v); };
    auto zero = arith::ConstantIndexOp::create(b, loc, 0);
    auto clamp = [&](Value v, Value lo, Value hi) {
      return b.createOrFold<arith::MinSIOp>(loc, b.createOrFold<arith::MaxSIOp>(loc, v, lo), hi);
    };
    const bool staticLows = FeedsDepthwiseAtStaticLows(op, pad);
    SmallVector<OpFoldResult> sourceOffsets, offsets, sizes, strides;
    for (auto [d, dim] : llvm::enumerate(pad.dims)) {
      OpFoldResult extent = tensor::getMixedSize(b, loc, init, d);
      strides.push_back(b.getIndexAttr(1));
      if (!dim.shifted) {
        sourceOffsets.push_back(dim.offset ? dim.offset : b.getIndexAttr(0));
        offsets.push_back(b.getIndexAttr(0));
        sizes.push_back(extent);
        continue;
      }
      // L = low - off; lo = clamp(L, 0, O); hi = clamp(L + E, lo, O); E within the source.
      Value out = index(extent);
      Value shift = index(dim.low);
      if (dim.offset) shift = b.createOrFold<arith::SubIOp>(loc, shift, index(dim.offset));
      Value e = b.createOrFold<arith::MinSIOp>(loc, index(dim.extent),
                                               index(tensor::getMixedSize(b, loc, pad.source, d)));
      if (staticLows) {
        // Offset L itself (a constant): size = clamp(O - L, 0, E), 0 when L >= O (then
        // nothing is copied), so the same elements as below.
        sourceOffsets.push_back(b.getIndexAttr(0));
        offsets.push_back(dim.low);
        Value room = b.createOrFold<arith::MaxSIOp>(loc, b.createOrFold<arith::SubIOp>(loc, out, shift), zero);
        sizes.push_back(getAsOpFoldResult(b.createOrFold<arith::MinSIOp>(loc, room, e)));
        continue;
      }
      Value lo = clamp(shift, zero, out);
      Value hi = clamp(b.createOrFold<arith::AddIOp>(loc, shift, e), lo, out);
      sourceOffsets.push_back(getAsOpFoldResult(b.createOrFold<arith::SubIOp>(loc, lo, shift)));
      offsets.push_back(getAsOpFoldResult(lo));
      sizes.push_back(getAsOpFoldResult(b.createOrFold<arith::SubIOp>(loc, hi, lo)));
    }
    Value value = pad.value;
    if (op.getRegion().isAncestor(value.getParentRegion())) value = b.clone(*value.getDefiningOp())->getResult(0);
    Value filled = linalg::FillOp::create(b, loc, ValueRange{value}, ValueRange{init}).getResult(0);
    Value slice = tensor::ExtractSliceOp::create(b, loc, pad.source, sourceOffsets, sizes, strides);
    Value padded = tensor::InsertSliceOp::create(b, loc, slice, filled, offsets, sizes, strides);
    op->getResult(0).replaceAllUsesWith(padded);
    op->erase();
  }
  return static_cast<int>(pads.size());
}

}  // namespace hexir::codegen
