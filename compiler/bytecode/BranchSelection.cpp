#include "compiler/bytecode/BranchSelection.h"

namespace hexir::compiler {
using namespace mlir;
using bytecode::Opcode;

namespace {

// Each i64 comparison, its fused branch, and the fused branch of its negation (taken when
// the comparison is false; `negatedSwapped`: with the operands exchanged).
struct CompareBranch {
  llvm::StringLiteral compare;
  Opcode branch;
  Opcode negated;
  bool negatedSwapped;
};
constexpr CompareBranch kCompareBranches[] = {
    {"cmp.eq.i64", Opcode::BrEqI64, Opcode::BrNeI64, false},
    {"cmp.le.s.i64", Opcode::BrLeSI64, Opcode::BrLtSI64, true},  // !(a <= b) == b < a
    {"cmp.le.u.i64", Opcode::BrLeUI64, Opcode::BrLtUI64, true},
    {"cmp.lt.s.i64", Opcode::BrLtSI64, Opcode::BrLeSI64, true},  // !(a < b) == b <= a
    {"cmp.lt.u.i64", Opcode::BrLtUI64, Opcode::BrLeUI64, true},
    {"cmp.ne.i64", Opcode::BrNeI64, Opcode::BrEqI64, false},
};

// `value`'s only use is `user`.
bool onlyUsedBy(Value value, Operation* user) {
  return value.hasOneUse() && *value.user_begin() == user;
}

}  // namespace

std::optional<FusedCompare> MatchFusedCompare(vmir::CondBrOp br) {
  auto compare = dyn_cast_or_null<vmir::InstOp>(br->getPrevNode());
  if (!compare || compare->getNumResults() != 1 || compare->getResult(0) != br.getCondition() ||
      !onlyUsedBy(br.getCondition(), br))
    return std::nullopt;
  for (const CompareBranch& c : kCompareBranches)
    if (compare.getMnemonic() == c.compare)
      return FusedCompare{compare, c.branch, compare.getOperands()[0], compare.getOperands()[1]};
  return std::nullopt;
}

FusedCompare Negated(const FusedCompare& fused) {
  const CompareBranch* c = llvm::find_if(
      kCompareBranches, [&](const CompareBranch& c) { return c.branch == fused.opcode; });
  assert(c != std::end(kCompareBranches) && fused.toTrueDest && "not a plain compare-branch");
  FusedCompare negated = fused;
  negated.opcode = c->negated;
  if (c->negatedSwapped) std::swap(negated.lhs, negated.rhs);
  negated.toTrueDest = false;
  return negated;
}

std::optional<LoopLatch> MatchLoopLatch(vmir::BrOp br) {
  Block* header = br.getDest();
  if (header == br->getBlock() || header->getOperations().size() != 2) return std::nullopt;
  // A back edge (the header laid out before the latch); a forward branch into a loop runs
  // its header once, which rotation would not save.
  Block* later = header->getNextNode();
  while (later && later != br->getBlock()) later = later->getNextNode();
  if (!later) return std::nullopt;
  auto test = dyn_cast<vmir::CondBrOp>(header->getTerminator());
  if (!test || test.getTrueDest() == header || test.getTrueDest() == test.getFalseDest())
    return std::nullopt;
  std::optional<FusedCompare> compare = MatchFusedCompare(test);
  if (!compare) return std::nullopt;
  // What a header value will be once the latch's copies are done.
  auto atLatch = [&](Value v) -> Value {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == header ? br.getDestOperands()[arg.getArgNumber()] : v;
  };
  LoopLatch latch{header, test.getTrueDest(), *compare, {}, {}, {}};
  latch.test.lhs = atLatch(compare->lhs);
  latch.test.rhs = atLatch(compare->rhs);

  auto induction = dyn_cast<BlockArgument>(compare->lhs);
  if (compare->opcode != Opcode::BrLtSI64 || !induction || induction.getOwner() != header ||
      compare->rhs == induction)
    return latch;
  auto increment = latch.test.lhs.getDefiningOp<vmir::InstOp>();
  if (!increment || increment->getBlock() != br->getBlock() ||
      increment.getMnemonic() != "add.i64" || !onlyUsedBy(latch.test.lhs, br))
    return latch;
  // The counter as the body reads it: %i itself (scf.for), or the body argument the
  // header's true edge copies %i into (scf.while's `after` block).
  auto isCounter = [&](Value v) {
    if (v == induction) return true;
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == latch.body &&
           test.getTrueOperands()[arg.getArgNumber()] == induction;
  };
  Value a = increment.getOperands()[0], b = increment.getOperands()[1];
  Value counter = isCounter(a) ? a : isCounter(b) ? b : Value();
  Value step = counter == a ? b : a;
  if (!counter || isCounter(step)) return latch;
  latch.increment = increment;
  latch.induction = induction;
  latch.counter = counter;
  latch.step = step;
  return latch;
}

}  // namespace hexir::compiler
