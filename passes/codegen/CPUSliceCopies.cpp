// Rewrites the slices described in CPUSliceCopies.h.
#include "passes/codegen/CPUSliceCopies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "passes/codegen/CPUPadReads.h"

namespace hexir::codegen {
using namespace mlir;

namespace {

// i_d plus the terms of its offset (none: the index itself): `index`, `a + b` or the affine
// d0 + s0 of a tiled generic, with one side holding the index and the other a constant or a
// value outside the body.
bool MatchShiftedPosition(Value p, unsigned dim, Region& body, SmallVectorImpl<OpFoldResult>& terms) {
  if (std::optional<OpFoldResult> offset = pad_reads::MatchPosition(p, dim, body)) {
    if (*offset) terms.push_back(*offset);
    return true;
  }
  auto add = p.getDefiningOp<arith::AddIOp>();
  if (!add) return false;
  for (auto [inner, outer] : {std::pair(add.getLhs(), add.getRhs()), std::pair(add.getRhs(), add.getLhs())}) {
    std::optional<OpFoldResult> term = pad_reads::Outside(outer, body);
    if (!term) continue;
    SmallVector<OpFoldResult> innerTerms;
    if (!MatchShiftedPosition(inner, dim, body, innerTerms)) continue;
    terms.append(innerTerms);
    terms.push_back(*term);
    return true;
  }
  return false;
}

struct Slice {
  Value source;
  SmallVector<SmallVector<OpFoldResult>> offsets;  // per dim: the terms of its offset
};

std::optional<Slice> MatchSlice(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 0 || op.getNumDpsInits() != 1 || op->getNumResults() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops() || !op.getIndexingMapsArray()[0].isIdentity())
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || type.hasStaticShape()) return std::nullopt;
  Region& body = op.getRegion();
  Value v = cast<linalg::YieldOp>(body.front().getTerminator()).getValues()[0];
  auto extract = v.getDefiningOp<tensor::ExtractOp>();
  if (!extract || body.isAncestor(extract.getTensor().getParentRegion())) return std::nullopt;
  auto sourceType = cast<RankedTensorType>(extract.getTensor().getType());
  if (sourceType.getRank() != type.getRank() || sourceType.getElementType() != type.getElementType())
    return std::nullopt;
  Slice s{extract.getTensor(), {}};
  for (auto [d, at] : llvm::enumerate(extract.getIndices())) {
    SmallVector<OpFoldResult> terms;
    if (!MatchShiftedPosition(at, static_cast<unsigned>(d), body, terms)) return std::nullopt;
    s.offsets.push_back(std::move(terms));
  }
  return s;
}

}  // namespace

int LowerSlicesToCopies(func::FuncOp kernel) {
  SmallVector<std::pair<linalg::GenericOp, Slice>> found;
  kernel.walk([&](linalg::GenericOp op) {
    if (std::optional<Slice> s = MatchSlice(op)) found.push_back({op, *s});
  });
  for (auto& [op, s] : found) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value init = op.getDpsInits()[0];
    auto index = [&](OpFoldResult v) { return getValueOrCreateConstantIndexOp(b, loc, v); };
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value inside = arith::ConstantIntOp::create(b, loc, 1, 1);
    SmallVector<OpFoldResult> offsets, sizes, strides;
    for (auto [d, terms] : llvm::enumerate(s.offsets)) {
      Value offset = zero;
      for (OpFoldResult t : terms) offset = b.createOrFold<arith::AddIOp>(loc, offset, index(t));
      OpFoldResult extent = tensor::getMixedSize(b, loc, init, d);
      // 0 <= off_d and off_d + extent_d <= the source's extent (the generic's reads were
      // bound-checked; a copy's are not).
      Value end = b.createOrFold<arith::AddIOp>(loc, offset, index(extent));
      Value low = b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, offset, zero);
      Value high = b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sle, end,
                                                 index(tensor::getMixedSize(b, loc, s.source, d)));
      inside = b.createOrFold<arith::AndIOp>(loc, inside, b.createOrFold<arith::AndIOp>(loc, low, high));
      offsets.push_back(getAsOpFoldResult(offset));
      sizes.push_back(extent);
      strides.push_back(b.getIndexAttr(1));
    }
    pad_reads::ReplaceWhereInside(op, b, inside, [&](OpBuilder& at) -> Value {
      Value slice = tensor::ExtractSliceOp::create(at, loc, s.source, offsets, sizes, strides);
      SmallVector<OpFoldResult> origin(offsets.size(), at.getIndexAttr(0));
      return tensor::InsertSliceOp::create(at, loc, slice, init, origin, sizes, strides);
    });
  }
  return static_cast<int>(found.size());
}

}  // namespace hexir::codegen
