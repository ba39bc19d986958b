// Which extents of a kernel's arguments and results its linalg ops force equal: two tensor dims
// indexed by the same loop of one linalg op (an elementwise residual's rows and the matmul's
// M rows it adds to), a linalg result dim and its init's, a cast's source and result, and a
// `tensor.empty` dim and the index value giving it. A kernel whose operands disagree on such an
// extent is already undefined, so a dispatch specialized on one member of a class may take
// every other member as static with the same value (hexir-specialize-dispatches: the clone of
// a projection at M = 1 gets static residual and output rows, which codegen needs to spread
// the kernel over threads). Built once per kernel; answers for its block arguments.
#pragma once

#include <cstdint>
#include <utility>

#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/SmallVector.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir {

class KernelExtents {
 public:
  explicit KernelExtents(mlir::func::FuncOp kernel);

  // True when dim `dim` of kernel argument `a` and dim `dim_b` of argument `b` are one extent.
  // A scalar (index) argument is its own extent: pass dim -1.
  bool Equal(unsigned a, int64_t dim, unsigned b, int64_t dim_b) const;
  // True when dim `dim` of the kernel's returned value `result` is dim `dim_b` of argument `b`.
  bool ResultEqual(unsigned result, int64_t dim, unsigned b, int64_t dim_b) const;

 private:
  using Key = std::pair<const void*, int64_t>;
  Key ArgKey(unsigned arg, int64_t dim) const;
  void Unite(Key a, Key b);

  llvm::SmallVector<mlir::Value> arguments_;
  llvm::SmallVector<mlir::Value> returned_;  // the operands of the kernel's one return
  llvm::EquivalenceClasses<Key> classes_;
};

}  // namespace hexir
