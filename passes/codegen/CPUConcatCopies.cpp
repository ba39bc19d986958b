// Rewrites the concatenations described in CPUConcatCopies.h.
#include "passes/codegen/CPUConcatCopies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "passes/codegen/CPUPadReads.h"

namespace hexir::codegen {
using namespace mlir;

namespace {

using pad_reads::IsOneBelow;
using pad_reads::MatchPosition;
using pad_reads::Outside;

struct Source {
  Value tensor;
  OpFoldResult offset;  // off_k along the axis
  OpFoldResult size;    // size_k along the axis
};

struct Concatenation {
  int64_t axis = -1;
  SmallVector<OpFoldResult> tileOffsets;  // per dim: the workgroup tile's offset, null: 0
  SmallVector<Source> sources;            // in offset order: src_0 first
};

// One read `extract` = src[.., clamp(p - off, 0, size - 1), ..] (p - 0 folded to p) along
// one dim (the axis, untiled), every other dim at the output's position. Fills `c`'s axis and
// tile offsets (the first read) or checks them (the others); returns the read's p (the axis
// position in the body) and its source.
std::optional<std::pair<Value, Source>> MatchRead(tensor::ExtractOp extract, Region& body, RankedTensorType type,
                                                   Concatenation& c) {
  if (body.isAncestor(extract.getTensor().getParentRegion())) return std::nullopt;
  auto sourceType = cast<RankedTensorType>(extract.getTensor().getType());
  if (sourceType.getRank() != type.getRank() || sourceType.getElementType() != type.getElementType())
    return std::nullopt;
  const bool first = c.axis < 0;
  Source source{extract.getTensor(), {}, {}};
  Value position;
  for (auto [d, at] : llvm::enumerate(extract.getIndices())) {
    if (std::optional<OpFoldResult> offset = MatchPosition(at, d, body)) {
      if (static_cast<int64_t>(d) == c.axis) return std::nullopt;
      if (first) c.tileOffsets.push_back(*offset);
      else if (c.tileOffsets[d] != *offset) return std::nullopt;
      continue;
    }
    // min(max(s, 0), size - 1) with s = p - off, or p itself (an offset of 0 folded away);
    // the axis untiled, the same dim for every source.
    std::optional<pad_reads::ClampedRead> read = pad_reads::MatchClampedRead(at, d, body);
    if (!read || read->tile || (first ? c.axis >= 0 : c.axis != static_cast<int64_t>(d))) return std::nullopt;
    position = read->position;
    if (first) {
      c.axis = static_cast<int64_t>(d);
      c.tileOffsets.push_back(OpFoldResult());
    }
    // size - 1: the source's extent along the axis, as a constant or a value outside the body.
    Value last = read->last;
    std::optional<OpFoldResult> size;
    if (auto sub = last.getDefiningOp<arith::SubIOp>()) size = Outside(sub.getLhs(), body);
    if (std::optional<int64_t> l = pad_reads::ConstantOf(last))
      size = OpFoldResult(IntegerAttr::get(IndexType::get(at.getContext()), *l + 1));
    if (!size || !IsOneBelow(last, *size)) return std::nullopt;
    source.offset = read->low;
    source.size = *size;
  }
  if (c.axis < 0 || !position) return std::nullopt;
  return std::make_pair(position, source);
}

// A source's read: the extract itself, or the importer's form for a source of run-time
// extent along the axis, read only when not empty: scf.if (size > 0) { extract } else
// { a constant }. `guard` gets that size (null: no guard). Where the source is selected its
// size is positive, so the copies (nothing copied from an empty source) are exact.
tensor::ExtractOp SourceRead(Value v, Value& guard) {
  guard = Value();
  if (auto extract = v.getDefiningOp<tensor::ExtractOp>()) return extract;
  auto read = v.getDefiningOp<scf::IfOp>();
  if (!read || read.getNumResults() != 1 || !read.elseBlock()) return {};
  auto positive = read.getCondition().getDefiningOp<arith::CmpIOp>();
  Value thenValue = read.thenYield().getOperand(0), elseValue = read.elseYield().getOperand(0);
  auto extract = thenValue.getDefiningOp<tensor::ExtractOp>();
  if (!positive || positive.getPredicate() != arith::CmpIPredicate::sgt || !matchPattern(positive.getRhs(), m_Zero()) ||
      !extract || extract->getBlock() != read.thenBlock() || !matchPattern(elseValue, m_Constant()))
    return {};
  guard = positive.getLhs();
  return extract;
}

std::optional<Concatenation> MatchConcatenation(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 0 || op.getNumDpsInits() != 1 || op->getNumResults() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops() || !op.getIndexingMapsArray()[0].isIdentity())
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type) return std::nullopt;
  Region& body = op.getRegion();
  Value v = cast<linalg::YieldOp>(body.front().getTerminator()).getValues()[0];
  // The select chain from the last source down to src_0.
  struct Read {
    arith::CmpIOp cmp;  // p >= off_k (null for src_0)
    tensor::ExtractOp extract;
    Value guard;
  };
  SmallVector<Read> later;
  while (auto select = v.getDefiningOp<arith::SelectOp>()) {
    auto cmp = select.getCondition().getDefiningOp<arith::CmpIOp>();
    Value guard;
    tensor::ExtractOp extract = SourceRead(select.getTrueValue(), guard);
    if (!cmp || cmp.getPredicate() != arith::CmpIPredicate::sge || !extract) return std::nullopt;
    later.push_back({cmp, extract, guard});
    v = select.getFalseValue();
  }
  Value guard0;
  tensor::ExtractOp first = SourceRead(v, guard0);
  if (!first || later.empty()) return std::nullopt;
  // A guard tests the size of the source it reads.
  auto guards = [&](Value guard, const Source& source) {
    if (!guard) return true;
    std::optional<OpFoldResult> size = Outside(guard, body);
    return size && *size == source.size;
  };
  Concatenation c;
  std::optional<std::pair<Value, Source>> read0 = MatchRead(first, body, type, c);
  if (!read0 || !guards(guard0, read0->second)) return std::nullopt;
  const Value position = read0->first;
  c.sources.push_back(read0->second);
  for (Read& r : llvm::reverse(later)) {
    std::optional<std::pair<Value, Source>> read = MatchRead(r.extract, body, type, c);
    // Selected where p >= off_k, the same p and off_k as its read.
    std::optional<OpFoldResult> bound = Outside(r.cmp.getRhs(), body);
    if (!read || read->first != position || r.cmp.getLhs() != position || !bound || *bound != read->second.offset ||
        !guards(r.guard, read->second))
      return std::nullopt;
    c.sources.push_back(read->second);
  }
  return c;
}

}  // namespace

int LowerConcatenationsToCopies(func::FuncOp kernel) {
  SmallVector<std::pair<linalg::GenericOp, Concatenation>> found;
  kernel.walk([&](linalg::GenericOp op) {
    if (std::optional<Concatenation> c = MatchConcatenation(op)) found.push_back({op, *c});
  });
  for (auto& [op, c] : found) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value init = op.getDpsInits()[0];
    auto index = [&](OpFoldResult v) { return getValueOrCreateConstantIndexOp(b, loc, v); };
    auto equal = [&](Value x, Value y) {
      return b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, x, y);
    };
    // The run-time test: off_0 = 0, off_{k+1} = off_k + size_k, the last ending at the extent.
    Value end = index(c.sources.front().offset);
    Value exact = equal(end, arith::ConstantIndexOp::create(b, loc, 0));
    for (Source& s : c.sources) {
      exact = b.createOrFold<arith::AndIOp>(loc, exact, equal(index(s.offset), end));
      end = b.createOrFold<arith::AddIOp>(loc, end, index(s.size));
    }
    exact = b.createOrFold<arith::AndIOp>(loc, exact, equal(end, index(tensor::getMixedSize(b, loc, init, c.axis))));
    // And each source holds the positions the output reads along the other dims (the
    // generic's reads were bound-checked; a copy's are not).
    for (Source& s : c.sources)
      for (int64_t d = 0; d < static_cast<int64_t>(c.tileOffsets.size()); ++d) {
        if (d == c.axis) continue;
        Value reach = index(tensor::getMixedSize(b, loc, init, d));
        if (c.tileOffsets[d]) reach = b.createOrFold<arith::AddIOp>(loc, reach, index(c.tileOffsets[d]));
        Value fits = b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sle, reach,
                                                   index(tensor::getMixedSize(b, loc, s.tensor, d)));
        exact = b.createOrFold<arith::AndIOp>(loc, exact, fits);
      }
    pad_reads::ReplaceWhereInside(op, b, exact, [&](OpBuilder& at) -> Value {
      Value result = init;
      for (Source& s : c.sources) {
        SmallVector<OpFoldResult> sourceOffsets, offsets, sizes, strides;
        for (int64_t d = 0; d < static_cast<int64_t>(c.tileOffsets.size()); ++d) {
          strides.push_back(at.getIndexAttr(1));
          if (d == c.axis) {
            sourceOffsets.push_back(at.getIndexAttr(0));
            offsets.push_back(s.offset);
            sizes.push_back(s.size);
            continue;
          }
          sourceOffsets.push_back(c.tileOffsets[d] ? c.tileOffsets[d] : at.getIndexAttr(0));
          offsets.push_back(at.getIndexAttr(0));
          sizes.push_back(tensor::getMixedSize(at, loc, init, d));
        }
        Value slice = tensor::ExtractSliceOp::create(at, loc, s.tensor, sourceOffsets, sizes, strides);
        result = tensor::InsertSliceOp::create(at, loc, slice, result, offsets, sizes, strides);
      }
      return result;
    });
  }
  return static_cast<int>(found.size());
}

}  // namespace hexir::codegen
