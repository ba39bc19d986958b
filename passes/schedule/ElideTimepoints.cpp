// hexir-elide-timepoints: removes awaits that other ordering already implies.
//
//   %a, %t0 = hexir.execute on(0, "compute") {...}
//   %b, %t1 = hexir.execute on(0, "compute") await(%t0) {...}   ==>  ... on(0, "compute") {...}
//
// Two rules, from what is known complete when a region starts (its *happens-before* set:
// the regions it awaits, the regions before it on its queue, and recursively theirs):
// - queue order: a region on the same device and queue that dominates the awaiting region
//   (it was submitted before it on every path) completes before it starts;
// - implied: an await of region R is dropped when another awaited region has R in its
//   happens-before set.
// The happens-before sets are computed from the awaits before any is removed (removing an
// implied await keeps what implies it). What remains is lowered to semaphore waits.
#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dominance.h"
#include "passes/Passes.h"

namespace hexir {
#define GEN_PASS_DEF_ELIDETIMEPOINTS
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

class Elider {
 public:
  Elider(func::FuncOp func) : dominance(func) {
    func.walk([&](ExecuteOp e) { regions.push_back(e); });
  }

  void run() {
    for (ExecuteOp e : regions) happensBefore(e);  // from the original awaits
    for (ExecuteOp e : regions) elide(e);
  }

 private:
  static ExecuteOp signaller(Value timepoint) { return timepoint.getDefiningOp<ExecuteOp>(); }

  SmallVector<ExecuteOp> queuePredecessors(ExecuteOp e) {
    SmallVector<ExecuteOp> before;
    for (ExecuteOp other : regions)
      if (other != e && other.getDevice() == e.getDevice() && other.getQueue() == e.getQueue() &&
          dominance.properlyDominates(other.getOperation(), e.getOperation()))
        before.push_back(other);
    return before;
  }

  const DenseSet<Operation*>& happensBefore(ExecuteOp e) {
    auto it = memo.find(e);
    if (it != memo.end()) return it->second;
    DenseSet<Operation*> set;
    auto add = [&](ExecuteOp r) {
      set.insert(r);
      const DenseSet<Operation*>& inner = happensBefore(r);
      set.insert(inner.begin(), inner.end());
    };
    for (Value t : e.getAwaits())
      if (ExecuteOp r = signaller(t)) add(r);
    for (ExecuteOp r : queuePredecessors(e)) add(r);
    return memo[e] = std::move(set);
  }

  void elide(ExecuteOp e) {
    DenseSet<Operation*> byQueue;
    for (ExecuteOp r : queuePredecessors(e)) {
      byQueue.insert(r);
      const DenseSet<Operation*>& inner = memo[r];
      byQueue.insert(inner.begin(), inner.end());
    }
    SetVector<Value> awaits(e.getAwaits().begin(), e.getAwaits().end());
    SmallVector<Value> kept;
    for (Value t : awaits) {
      ExecuteOp r = signaller(t);
      bool implied = r && (byQueue.contains(r) || llvm::any_of(awaits, [&](Value other) {
                       ExecuteOp o = signaller(other);
                       return other != t && o && memo[o].contains(r);
                     }));
      if (!implied) kept.push_back(t);
    }
    e.getAwaitsMutable().assign(kept);
  }

  DominanceInfo dominance;
  SmallVector<ExecuteOp> regions;
  DenseMap<Operation*, DenseSet<Operation*>> memo;
};

class ElideTimepoints : public impl::ElideTimepointsBase<ElideTimepoints> {
 public:
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal()) Elider(func).run();
  }
};

}  // namespace
}  // namespace hexir
