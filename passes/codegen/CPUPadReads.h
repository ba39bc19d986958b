// The value patterns of the ONNX importer's pad body (compiler/importers/onnx Context::Pad), as
// CPUConstantPad.h's static rewrite and CPUDynamicPad.h's fill-and-copy rewrite both match
// them: integer constants the importer leaves unfolded (`extent - 1`), a `linalg.index` of one
// dim, and the and-tree of the inside-the-source conditions.
#pragma once

#include <cstdint>
#include <optional>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
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

// The leaves of an and-tree of i1 values.
inline void Conjuncts(mlir::Value v, llvm::SmallVectorImpl<mlir::Value>& out) {
  if (auto both = v.getDefiningOp<mlir::arith::AndIOp>()) {
    Conjuncts(both.getLhs(), out);
    Conjuncts(both.getRhs(), out);
    return;
  }
  out.push_back(v);
}

}  // namespace hexir::codegen::pad_reads
