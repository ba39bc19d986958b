// What a run-time extent on the host is known to be, so that two index values can be told
// equal without evaluating them: a constant, else (tensor, dim) after looking through
// `tensor.dim` of a static dim (the constant), of a `tensor.cast` (its source), of a
// `tensor.collapse_shape` dim that is one source dim alone, of a `tensor.expand_shape` dim
// (its output-shape operand), of a `hexir.dispatch` result (its `dims` operand) and of a
// specialization switch's result (either branch computes the same tensor; the generic one
// is tried first; an index result likewise), of an scf.for iteration argument (its initial
// value's, when each iteration yields a tensor of the same dim), or the index value itself. Used by hexir-specialize-dispatches (a result dim equal to a specialized
// operand dim) and hexir-merge-specialization-switches (switches testing one value).
#pragma once

#include <cstdint>
#include <optional>

#include "mlir/IR/Value.h"

namespace hexir {

struct DimKey {
  std::optional<int64_t> constant;
  mlir::Value tensor;  // with dim >= 0: dim `dim` of this tensor; dim -1: this index value
  int64_t dim = -1;
  bool operator==(const DimKey& o) const {
    return constant == o.constant && tensor == o.tensor && dim == o.dim;
  }
  bool known() const { return constant || tensor; }
};

// The key of index value `v`.
DimKey KeyOfIndex(mlir::Value v);
// The key of dim `dim` of ranked tensor `tensor`.
DimKey KeyOfDim(mlir::Value tensor, int64_t dim);

}  // namespace hexir
