#include "passes/dispatch/KernelExtents.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace hexir {
using namespace mlir;

namespace {
// A tensor dim (the value's opaque pointer, dim >= 0), an index value (dim -1), or a loop of a
// linalg op (the op's pointer, loop + 1 negated: never a value's key).
std::pair<const void*, int64_t> ValueKey(Value v, int64_t dim) { return {v.getAsOpaquePointer(), dim}; }
std::pair<const void*, int64_t> LoopKey(Operation* op, unsigned loop) { return {op, -2 - int64_t(loop)}; }
}  // namespace

KernelExtents::KernelExtents(func::FuncOp kernel) {
  llvm::append_range(arguments_, kernel.getArguments());
  if (kernel.getBody().hasOneBlock())
    if (auto ret = dyn_cast<func::ReturnOp>(kernel.getBody().front().getTerminator()))
      llvm::append_range(returned_, ret.getOperands());
  kernel.walk([&](Operation* op) {
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      for (OpOperand& operand : op->getOpOperands()) {
        if (!isa<RankedTensorType>(operand.get().getType())) continue;
        AffineMap map = linalgOp.getMatchingIndexingMap(&operand);
        for (auto [k, e] : llvm::enumerate(map.getResults()))
          if (auto d = dyn_cast<AffineDimExpr>(e))
            Unite(ValueKey(operand.get(), k), LoopKey(op, d.getPosition()));
      }
      for (auto [r, result] : llvm::enumerate(linalgOp->getResults())) {
        auto type = dyn_cast<RankedTensorType>(result.getType());
        if (!type) continue;
        for (int64_t k = 0; k < type.getRank(); ++k)
          Unite(ValueKey(result, k), ValueKey(linalgOp.getDpsInits()[r], k));
      }
    } else if (auto cast = dyn_cast<tensor::CastOp>(op)) {
      for (int64_t k = 0; k < cast.getType().getRank(); ++k)
        Unite(ValueKey(cast.getSource(), k), ValueKey(cast.getResult(), k));
    } else if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
      for (int64_t k = 0; k < empty.getType().getRank(); ++k)
        if (empty.getType().isDynamicDim(k))
          Unite(ValueKey(empty.getResult(), k), ValueKey(empty.getDynamicSize(k), -1));
    }
  });
}

void KernelExtents::Unite(Key a, Key b) { classes_.unionSets(a, b); }

KernelExtents::Key KernelExtents::ArgKey(unsigned arg, int64_t dim) const {
  return ValueKey(arguments_[arg], dim);
}

bool KernelExtents::Equal(unsigned a, int64_t dim, unsigned b, int64_t dim_b) const {
  if (a >= arguments_.size() || b >= arguments_.size()) return false;
  return classes_.isEquivalent(ArgKey(a, dim), ArgKey(b, dim_b));
}

bool KernelExtents::ResultEqual(unsigned result, int64_t dim, unsigned b, int64_t dim_b) const {
  return result < returned_.size() && b < arguments_.size() &&
         classes_.isEquivalent(ValueKey(returned_[result], dim), ArgKey(b, dim_b));
}

}  // namespace hexir
