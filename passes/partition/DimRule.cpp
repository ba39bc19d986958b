// tensor.dim of a partitioned tensor: the global extent, computed from the local shard
// (local extent * count along the split dimension), so shape arithmetic never gathers.
//
//   %n = tensor.dim %x, %c0 : tensor<?x8xf32>     (%x split 0)
//   ==> %l = tensor.dim %x_local, %c0 ; %n = arith.muli %l, %count
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "passes/partition/Partitioner.h"

namespace hexir::partition {

FailureOr<bool> PartitionDim(Operation* op, Partitioner& p) {
  auto dim = dyn_cast<tensor::DimOp>(op);
  if (!dim) return p.notMatched(op, "not a tensor.dim");
  std::optional<int64_t> index = dim.getConstantIndex();
  if (!index) return p.notMatched(op, "tensor.dim with a dynamic index");
  p.map(dim.getResult(), {p.globalDim(op->getLoc(), dim.getSource(), *index), Sharding::replicated()});
  return true;
}

}  // namespace hexir::partition
