// Elementwise ops on tensors (arith and math ops with the Elementwise trait): every operand
// and the result share one sharding. Candidates: each split operand's dimension, in operand
// order, then the split the result's consumers ask (Partitioner::hint), then replicated; the one needing the fewest collectives wins (a slice of a
// replicated operand is free), ties going to the earlier candidate.
//
//   %y = arith.addf %a, %b : tensor<8x4xf32>      (%a split 1, %b replicated)
//   ==> %b1 = tensor.extract_slice %b[0, rank * 4/N] [8, 4/N] [1, 1]
//       %y = arith.addf %a_local, %b1 : tensor<8x?xf32>      (%y split 1)
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "passes/partition/Partitioner.h"

namespace hexir::partition {

FailureOr<bool> PartitionElementwise(Operation* op, Partitioner& p) {
  if (!op->hasTrait<OpTrait::Elementwise>() || op->getNumRegions() != 0)
    return p.notMatched(op, "not an elementwise op");
  auto isTensor = [](Type t) { return isa<RankedTensorType>(t); };
  if (op->getNumResults() == 0 || !llvm::all_of(op->getOperandTypes(), isTensor) ||
      !llvm::all_of(op->getResultTypes(), isTensor))
    return p.notMatched(op, "elementwise op not on ranked tensors");

  SmallVector<Sharding> candidates;
  for (Value v : op->getOperands())
    if (Sharding s = p.lookup(v).sharding; s.isSplit() && !llvm::is_contained(candidates, s))
      candidates.push_back(s);
  if (Sharding s = p.hint(op->getResult(0)); s.isSplit() && !llvm::is_contained(candidates, s))
    candidates.push_back(s);  // the split its consumers ask (backward propagation)
  candidates.push_back(Sharding::replicated());
  Sharding best = candidates.back();
  int bestCost = INT_MAX;
  for (Sharding c : candidates) {
    int cost = 0;
    for (Value v : op->getOperands()) cost += p.collectivesFor(v, c);
    if (cost < bestCost) bestCost = cost, best = c;
  }

  IRMapping mapping;
  Type firstType;
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    FailureOr<Value> local = p.reshard(op, v, best, "operand " + std::to_string(i) + " of " +
                                                        op->getName().getStringRef().str());
    if (failed(local)) return failure();
    Value l = *local;
    if (!firstType) firstType = l.getType();
    if (l.getType() != firstType) l = tensor::CastOp::create(p.b, op->getLoc(), firstType, l);
    mapping.map(v, l);
  }
  Operation* clone = p.b.clone(*op, mapping);
  auto shape = cast<RankedTensorType>(firstType).getShape();
  for (auto [global, local] : llvm::zip(op->getResults(), clone->getResults())) {
    local.setType(cast<RankedTensorType>(global.getType()).clone(shape));
    p.map(global, {local, best});
  }
  return true;
}

}  // namespace hexir::partition
