// The value patterns of the ONNX importer's pad and concat bodies (compiler/importers/onnx
// Context::Pad, LowerConcat), as CPUConstantPad.h's static rewrite, CPUDynamicPad.h's
// fill-and-copy rewrite and CPUConcatCopies.h match them: integer constants the importer
// leaves unfolded (`extent - 1`), a `linalg.index` of one dim (maybe offset by a workgroup's
// tile), values defined outside the body, and the and-tree of the inside-the-source
// conditions.
#pragma once

#include <cstdint>
#include <optional>

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace hexir::codegen::pad_reads {

// `v` when it is an integer constant or a sum or difference of such.
inline std::optional<int64_t> ConstantOf(mlir::Value v) {
  if (std::optional<int64_t> c = mlir::getConstantIntValue(v)) return c;
  if (auto add = v.getDefiningOp<mlir::arith::AddIOp>()) {
    std::optional<int64_t> l = ConstantOf(add.getLhs()), r = ConstantOf(add.getRhs());
    if (l && r) return *l + *r;
  }
  if (auto sub = v.getDefiningOp<mlir::arith::SubIOp>()) {
    std::optional<int64_t> l = ConstantOf(sub.getLhs()), r = ConstantOf(sub.getRhs());
    if (l && r) return *l - *r;
  }
  return std::nullopt;
}

inline bool IsIndexOf(mlir::Value v, unsigned dim) {
  auto index = v.getDefiningOp<mlir::linalg::IndexOp>();
  return index && index.getDim() == dim;
}

// `v` as a value the rewrite can use before the generic: a constant, or a value defined
// outside its body.
inline std::optional<mlir::OpFoldResult> Outside(mlir::Value v, mlir::Region& body) {
  if (std::optional<int64_t> c = ConstantOf(v))
    return mlir::OpFoldResult(mlir::IntegerAttr::get(mlir::IndexType::get(v.getContext()), *c));
  if (body.isAncestor(v.getParentRegion())) return std::nullopt;
  return mlir::OpFoldResult(v);
}

// i_d, or i_d + off as an addi or as the affine.apply a tiled generic's index becomes
// (d0 + s0 over the tile offset and the index). Returns the offset (null: none).
inline std::optional<mlir::OpFoldResult> MatchPosition(mlir::Value p, unsigned dim, mlir::Region& body) {
  if (IsIndexOf(p, dim)) return mlir::OpFoldResult();
  mlir::Value a, b;
  if (auto add = p.getDefiningOp<mlir::arith::AddIOp>()) {
    a = add.getLhs();
    b = add.getRhs();
  } else if (auto apply = p.getDefiningOp<mlir::affine::AffineApplyOp>()) {
    mlir::AffineMap map = apply.getAffineMap();
    auto sum = map.getNumResults() == 1 ? mlir::dyn_cast<mlir::AffineBinaryOpExpr>(map.getResult(0)) : nullptr;
    if (!sum || sum.getKind() != mlir::AffineExprKind::Add) return std::nullopt;
    auto operand = [&](mlir::AffineExpr e) -> mlir::Value {
      if (auto d = mlir::dyn_cast<mlir::AffineDimExpr>(e)) return apply.getOperand(d.getPosition());
      if (auto s = mlir::dyn_cast<mlir::AffineSymbolExpr>(e)) return apply.getOperand(map.getNumDims() + s.getPosition());
      return nullptr;
    };
    a = operand(sum.getLHS());
    b = operand(sum.getRHS());
    if (!a || !b) return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (IsIndexOf(b, dim)) std::swap(a, b);
  if (!IsIndexOf(a, dim)) return std::nullopt;
  return Outside(b, body);
}

// `last` is `extent - 1`: both constants, or extent - 1 / extent + -1 written out.
inline bool IsOneBelow(mlir::Value last, mlir::OpFoldResult extent) {
  std::optional<int64_t> e = mlir::getConstantIntValue(extent);
  std::optional<int64_t> l = ConstantOf(last);
  if (e && l) return *l == *e - 1;
  auto value = mlir::dyn_cast<mlir::Value>(extent);
  if (!value) return false;
  if (auto sub = last.getDefiningOp<mlir::arith::SubIOp>())
    return sub.getLhs() == value && ConstantOf(sub.getRhs()) == 1;
  if (auto add = last.getDefiningOp<mlir::arith::AddIOp>())
    return (add.getLhs() == value && ConstantOf(add.getRhs()) == -1) ||
           (add.getRhs() == value && ConstantOf(add.getLhs()) == -1);
  return false;
}

// A clamped read of dim `dim`, min(max(s, 0), last), with s = p - low (p the position: the
// index, maybe offset by a workgroup's tile) or p itself (a low of 0 folded away: an end-only
// pad, a concatenation's first source).
struct ClampedRead {
  mlir::Value shifted;      // s
  mlir::Value position;     // p
  mlir::OpFoldResult tile;  // p's tile offset; null: none
  mlir::OpFoldResult low;   // a constant or a value outside the body
  mlir::Value last;         // the clamp's upper bound
};
inline std::optional<ClampedRead> MatchClampedRead(mlir::Value at, unsigned dim, mlir::Region& body) {
  auto upper = at.getDefiningOp<mlir::arith::MinSIOp>();
  auto lower = upper ? upper.getLhs().getDefiningOp<mlir::arith::MaxSIOp>() : nullptr;
  if (!lower || ConstantOf(lower.getRhs()) != 0) return std::nullopt;
  ClampedRead read{lower.getLhs(), lower.getLhs(), {}, {}, upper.getRhs()};
  std::optional<mlir::OpFoldResult> tile = MatchPosition(read.shifted, dim, body), low;
  if (tile) {
    low = mlir::OpFoldResult(mlir::IntegerAttr::get(mlir::IndexType::get(at.getContext()), 0));
  } else if (auto shift = read.shifted.getDefiningOp<mlir::arith::SubIOp>()) {
    read.position = shift.getLhs();
    tile = MatchPosition(read.position, dim, body);
    low = Outside(shift.getRhs(), body);
  }
  if (!tile || !low) return std::nullopt;
  read.tile = *tile;
  read.low = *low;
  return read;
}

// The leaves of an and-tree of i1 values.
inline void Conjuncts(mlir::Value v, llvm::SmallVectorImpl<mlir::Value>& out) {
  if (auto both = v.getDefiningOp<mlir::arith::AndIOp>()) {
    Conjuncts(both.getLhs(), out);
    Conjuncts(both.getRhs(), out);
    return;
  }
  out.push_back(v);
}

// Replaces `op` (one result) by `scf.if (inside) {copies(b)} else {op as it was}`: a copy
// rewrite (CPUConcatCopies.h, CPUSliceCopies.h) where its run-time test holds, the generic's
// bound-checked reads otherwise. `copies` builds the then branch's result at `b`.
inline void ReplaceWhereInside(mlir::linalg::GenericOp op, mlir::OpBuilder& b, mlir::Value inside,
                               llvm::function_ref<mlir::Value(mlir::OpBuilder&)> copies) {
  mlir::Location loc = op.getLoc();
  auto branch = mlir::scf::IfOp::create(b, loc, op->getResultTypes(), inside, /*withElseRegion=*/true);
  b.setInsertionPointToStart(branch.thenBlock());
  mlir::scf::YieldOp::create(b, loc, copies(b));
  b.setInsertionPointToStart(branch.elseBlock());
  mlir::Operation* original = b.clone(*op);
  mlir::scf::YieldOp::create(b, loc, original->getResults());
  op->getResult(0).replaceAllUsesWith(branch.getResult(0));
  op->erase();
}

}  // namespace hexir::codegen::pad_reads
