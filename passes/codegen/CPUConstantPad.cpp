// Rewrites the constant pads described in CPUConstantPad.h.
#include "passes/codegen/CPUConstantPad.h"
#include "passes/codegen/CPUPadReads.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace hexir::codegen {
using namespace mlir;

namespace {

using pad_reads::Conjuncts;
using pad_reads::ConstantOf;
using pad_reads::IsIndexOf;

bool IsConstant(Value v, int64_t want) {
  std::optional<int64_t> c = ConstantOf(v);
  return c && *c == want;
}

struct ConstantPad {
  Value source, value;  // value: defined above the generic, or a constant inside its body
  SmallVector<int64_t> low;
};

// One dim of the source read: at = index (not padded) or min(max(s, 0), extent - 1) of
// s = index - low (or the index itself: a low of 0 folded away), which equals s wherever the pad's condition holds. LowerTensorOps' form
// (select(inside, s, 0)) is left alone: LLVM vectorizes it as it is (a 1 x 144 x 16 x 16
// pad: 1.7 us, against 2.7 us as a fill and a copy; the clamped form took 20 us).
struct Coordinate {
  Value shifted;  // s; null when the index is read as it is
  int64_t low = 0;
};
std::optional<Coordinate> MatchCoordinate(Value at, unsigned dim, int64_t extent, Region& body) {
  if (IsIndexOf(at, dim)) return Coordinate{};
  std::optional<pad_reads::ClampedRead> read = pad_reads::MatchClampedRead(at, dim, body);
  std::optional<int64_t> low = read ? getConstantIntValue(read->low) : std::nullopt;
  if (!read || read->tile || !IsIndexOf(read->position, dim) || !low || *low < 0 ||
      !IsConstant(read->last, extent - 1))
    return std::nullopt;
  return Coordinate{read->shifted, *low};
}

std::optional<ConstantPad> MatchConstantPad(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 0 || op.getNumDpsInits() != 1 || op->getNumResults() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops() || !op.getIndexingMapsArray()[0].isIdentity())
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !type.hasStaticShape()) return std::nullopt;
  Region& body = op.getRegion();
  auto yield = cast<linalg::YieldOp>(body.front().getTerminator());
  auto select = yield.getValues()[0].getDefiningOp<arith::SelectOp>();
  if (!select) return std::nullopt;
  auto extract = select.getTrueValue().getDefiningOp<tensor::ExtractOp>();
  Value value = select.getFalseValue();
  if (!extract || body.isAncestor(extract.getTensor().getParentRegion())) return std::nullopt;
  if (body.isAncestor(value.getParentRegion()) && !value.getDefiningOp<arith::ConstantOp>()) return std::nullopt;
  auto sourceType = cast<RankedTensorType>(extract.getTensor().getType());
  if (!sourceType.hasStaticShape() || sourceType.getRank() != type.getRank() ||
      sourceType.getElementType() != type.getElementType())
    return std::nullopt;
  Value inside = select.getCondition();
  ConstantPad pad{extract.getTensor(), value, {}};
  SmallVector<Value> shifted;
  for (auto [d, at] : llvm::enumerate(extract.getIndices())) {
    std::optional<Coordinate> c = MatchCoordinate(at, d, sourceType.getDimSize(d), body);
    if (!c) return std::nullopt;
    // The source must lie inside the result (an unshifted dim: exactly).
    if (c->shifted ? c->low + sourceType.getDimSize(d) > type.getDimSize(d)
                   : sourceType.getDimSize(d) != type.getDimSize(d))
      return std::nullopt;
    pad.low.push_back(c->low);
    shifted.push_back(c->shifted);
  }
  // `inside` must be exactly 0 <= s < extent for every shifted dim (and constant trues).
  SmallVector<Value> conjuncts;
  Conjuncts(inside, conjuncts);
  SmallVector<bool> above(shifted.size(), false), below(shifted.size(), false);
  for (Value c : conjuncts) {
    if (std::optional<int64_t> k = ConstantOf(c)) {
      if (*k == 0) return std::nullopt;
      continue;
    }
    auto cmp = c.getDefiningOp<arith::CmpIOp>();
    auto dim = cmp ? llvm::find(shifted, cmp.getLhs()) : shifted.end();
    if (!cmp || !cmp.getLhs() || dim == shifted.end()) return std::nullopt;
    size_t d = dim - shifted.begin();
    if (cmp.getPredicate() == arith::CmpIPredicate::sge && IsConstant(cmp.getRhs(), 0))
      above[d] = true;
    else if (cmp.getPredicate() == arith::CmpIPredicate::slt && IsConstant(cmp.getRhs(), sourceType.getDimSize(d)))
      below[d] = true;
    else
      return std::nullopt;
  }
  for (size_t d = 0; d < shifted.size(); ++d)
    if (shifted[d] && !(above[d] && below[d])) return std::nullopt;
  return pad;
}

}  // namespace

int LowerConstantPadsToCopies(func::FuncOp kernel) {
  SmallVector<std::pair<linalg::GenericOp, ConstantPad>> pads;
  kernel.walk([&](linalg::GenericOp op) {
    if (std::optional<ConstantPad> pad = MatchConstantPad(op)) pads.push_back({op, *pad});
  });
  for (auto& [op, pad] : pads) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value value = pad.value;
    if (op.getRegion().isAncestor(value.getParentRegion())) value = b.clone(*value.getDefiningOp())->getResult(0);
    Value filled = linalg::FillOp::create(b, loc, ValueRange{value}, ValueRange{op.getDpsInits()[0]}).getResult(0);
    auto sourceType = cast<RankedTensorType>(pad.source.getType());
    SmallVector<OpFoldResult> offsets, sizes, strides;
    for (auto [d, low] : llvm::enumerate(pad.low)) {
      offsets.push_back(b.getIndexAttr(low));
      sizes.push_back(b.getIndexAttr(sourceType.getDimSize(d)));
      strides.push_back(b.getIndexAttr(1));
    }
    Value padded = tensor::InsertSliceOp::create(b, loc, pad.source, filled, offsets, sizes, strides);
    op->getResult(0).replaceAllUsesWith(padded);
    op->erase();
  }
  return static_cast<int>(pads.size());
}

}  // namespace hexir::codegen
