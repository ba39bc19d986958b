// Every op no other rule partitions runs on whole tensors: its tensor operands (and the
// tensors its regions capture) are made replicated and it is cloned unchanged, so the
// rank's program computes it exactly as the unpartitioned one (correct for any op; the
// communication is the price). Its tensor results are replicated.
#include "passes/partition/Partitioner.h"

namespace hexir::partition {

FailureOr<bool> PartitionReplicated(Operation* op, Partitioner& p) {
  FailureOr<IRMapping> mapping = p.replicatedMapping(op);
  if (failed(mapping)) return failure();
  Operation* clone = p.b.clone(*op, *mapping);
  for (auto [global, local] : llvm::zip(op->getResults(), clone->getResults()))
    p.map(global, {local, Sharding::replicated()});
  return true;
}

}  // namespace hexir::partition
