// hexir-erase-implied-vm-asserts: an assert that a dominating assert implies never fails, and is
// erased (after CSE, on the VM form).
//
// Shape checks are emitted per op (hexir-insert-shape-checks: every tensor.empty of a dynamic
// shape checks that its byte size fits in 63 bits, every reshape that its dims agree); once
// CSE has merged their conditions, a dynamic export asserts the same few conditions over and
// over (the zoo's dynamic encoder: 272 asserts of 27 conditions), one VM instruction each per call.
// An assert is implied by an assert that dominates it (runs first on every path to it) of
//   - the same condition value, or
//   - `cmp.le.u.i64(x, K')` where it asserts `cmp.le.u.i64(x, K)`, K' <= K constants (the
//     first dim of a wider tensor's bound implies a narrower one's);
//   - `cmp.le.u.i64(y, div.u.i64(K', m))` where it asserts `cmp.le.u.i64(y, div.u.i64(K, m))`,
//     K' <= K, the same m (a later dim's bound given the earlier ones' product m).
// The dominating assert traps first whenever the erased one would have, with its own message,
// as it did before: the first failing check in program order is unchanged.
//
//   %a = inst "cmp.le.u.i64"(%d0, %c96bound)           %a = inst "cmp.le.u.i64"(%d0, %c96bound)
//   assert %a, "dimension 0 of tensor<?x96xf32> ..."    assert %a, "dimension 0 of tensor<?x96xf32> ..."
//   %b = inst "cmp.le.u.i64"(%d0, %c32bound)      =>   (%b unused: erased by the canonicalizer)
//   assert %b, "dimension 0 of tensor<?x32xf32> ..."
//   assert %a, "dimension 0 of tensor<?x96xf32> ..."
// Tests: tests/lit/vm/erase_implied_asserts.mlir.
#include <optional>

#include "dialects/vm/IR/VMOps.h"
#include "llvm/ADT/DenseMap.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

namespace hexir {
namespace {
using namespace mlir;

std::optional<int64_t> ConstantOf(Value v) {
  if (auto c = v.getDefiningOp<vmir::ConstI64Op>()) return c.getValue();
  return std::nullopt;
}

// A condition `cmp.le.u.i64(x, bound)` as {x, divided-by (null: none), constant}: bound = K
// or div.u.i64(K, m). Null x when it is neither.
struct UpperBound {
  Value x, divisor;
  int64_t constant = 0;
};

UpperBound AsUpperBound(Value condition) {
  auto cmp = condition.getDefiningOp<vmir::InstOp>();
  if (!cmp || cmp.getMnemonic() != "cmp.le.u.i64" || cmp.getOperands().size() != 2) return {};
  Value x = cmp.getOperands()[0], bound = cmp.getOperands()[1];
  if (std::optional<int64_t> k = ConstantOf(bound)) return {x, Value(), *k};
  auto div = bound.getDefiningOp<vmir::InstOp>();
  if (!div || div.getMnemonic() != "div.u.i64" || div.getOperands().size() != 2) return {};
  if (std::optional<int64_t> k = ConstantOf(div.getOperands()[0])) return {x, div.getOperands()[1], *k};
  return {};
}

// Whether `first` passing means `second` passes (conditions, not asserts).
bool Implies(Value first, Value second) {
  if (first == second) return true;
  UpperBound a = AsUpperBound(first), b = AsUpperBound(second);
  // Unsigned order: constants compared as uint64 (the bounds are below 2^63 anyway).
  return a.x && b.x && a.x == b.x && a.divisor == b.divisor &&
         static_cast<uint64_t>(a.constant) <= static_cast<uint64_t>(b.constant);
}

class EraseImpliedVMAsserts : public PassWrapper<EraseImpliedVMAsserts, OperationPass<func::FuncOp>> {
 public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(EraseImpliedVMAsserts)
  StringRef getArgument() const override { return "hexir-erase-implied-vm-asserts"; }
  StringRef getDescription() const override {
    return "Erases VM asserts that a dominating assert of the same or a stronger condition implies";
  }
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal()) return;
    // Asserts grouped by the value their condition bounds (or the condition itself).
    llvm::DenseMap<Value, SmallVector<vmir::AssertOp>> groups;
    func.walk([&](vmir::AssertOp a) {
      UpperBound b = AsUpperBound(a.getCondition());
      groups[b.x ? b.x : a.getCondition()].push_back(a);
    });
    DominanceInfo dom(func);
    SmallVector<vmir::AssertOp> implied;
    for (auto& [key, asserts] : groups)
      for (vmir::AssertOp a : asserts)
        // Against the original set: a dominator that is itself implied has a dominator of its
        // own that implies it, which (dominance and implication being transitive) implies `a`.
        if (llvm::any_of(asserts, [&](vmir::AssertOp b) {
              return b != a && dom.properlyDominates(b.getOperation(), a.getOperation()) &&
                     Implies(b.getCondition(), a.getCondition());
            }))
          implied.push_back(a);
    for (vmir::AssertOp a : implied) {
      Value condition = a.getCondition();
      a.erase();
      EraseIfUnread(condition);
    }
  }

 private:
  // The computation of an erased condition that nothing else reads: `inst`s that cannot trap
  // (speculatable: a division stays unless its divisor is provably positive) and constants.
  static void EraseIfUnread(Value v) {
    Operation* op = v.getDefiningOp();
    if (!op || !op->use_empty()) return;
    if (!isa<vmir::ConstI64Op>(op) && !(isa<vmir::InstOp>(op) && isSpeculatable(op))) return;
    SmallVector<Value> operands(op->getOperands());
    op->erase();
    for (Value operand : operands) EraseIfUnread(operand);
  }
};

}  // namespace

// Declared in compiler/Pipeline.cpp (a new header or Passes.td entry would make Bazel
// recompile all of //passes).
std::unique_ptr<mlir::Pass> CreateEraseImpliedVMAsserts() { return std::make_unique<EraseImpliedVMAsserts>(); }
void RegisterEraseImpliedVMAsserts() { mlir::registerPass(&CreateEraseImpliedVMAsserts); }

}  // namespace hexir
