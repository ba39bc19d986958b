// hexir-hoist-vm-loop-invariants: loop-invariant code motion on the VM form (after
// hexir-convert-to-vm, whose loops are CFG cycles of hexir_vm.br / cond_br).
//
// Host work that ConvertToVM emits inside a lowered scf.for / scf.while body (constants, shape
// arithmetic, buffer-view metadata queries, executable lookups) is recomputed at every
// iteration although its operands come from outside the loop. This pass moves such an op to
// the end of the loop's preheader (the one block outside the loop that branches to its
// header), innermost loops first, so an op hoisted out of an inner loop may leave the outer one
// too.
//
//   ^pre:  br ^head(%c0)                        ^pre:  %v = call.import "hal.buffer_view.dim"(%x, %c1)
//   ^head(%i): cond_br %p, ^body, ^exit    =>          br ^head(%c0)
//   ^body: %v = call.import "hal.buffer_view.dim"(%x, %c1)   ^head(%i): ...
//          ... br ^head(%n)                                   ^body: ... br ^head(%n)
//
// An op is hoisted when every operand is defined outside the loop or by a constant (copied
// next to it: constants are never hoisted on their own, each would hold a register across the
// loop) and the op is one of:
//   - a hexir_vm op with no memory effects: rodata, ref.is_null, trunc, `inst`. One that is
//     not speculatable (an `inst` division or remainder, vmir::InstTraps: they trap on a zero
//     divisor, which may only occur on iterations that never run; not one by a positive
//     constant or max.s.i64 with one, InstOp::getSpeculatability) is hoisted only when the
//     loop is known to reach it (its block dominates every block that exits the loop: it
//     runs before any exit can be taken);
//   - a call of a HAL import in kPureImports: a query of an immutable object's metadata or an
//     executable lookup (cached per context), which neither writes state another op reads nor
//     fails on a valid ref;
//   - an import cached in a ref global (kCachedInGlobal: load, import, store, moved together).
// A header argument that receives one value on every edge is replaced by that value first.
// Never hoisted: any other import (allocation, queue operations, command-buffer recording,
// waits, reads: effects or per-iteration lifetimes), calls, other global loads/stores (a store
// in the loop may change them), asserts, terminators. Loops without a preheader are left
// alone. Tests: tests/lit/vm/hoist_loop_invariants.mlir.
#include "dialects/vm/IR/VMOps.h"
#include "llvm/ADT/STLExtras.h"
#include "mlir/Analysis/CFGLoopInfo.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

namespace hexir {
namespace {
using namespace mlir;

// Imports without effects that cannot fail on valid operands (hal/module/hal_imports.def).
constexpr const char* kPureImports[] = {
    "hal.buffer.length",        "hal.buffer_view.buffer", "hal.buffer_view.dim",
    "hal.buffer_view.element_type", "hal.buffer_view.rank", "hal.device.default",
    "hal.executable.lookup",
};

bool IsPureImport(vmir::CallImportOp call) {
  return llvm::is_contained(llvm::ArrayRef(kPureImports), call.getCallee());
}

bool ReachedWheneverLoopRuns(Operation* op, CFGLoop* loop, DominanceInfo& dom);

// Whether `op` may run once before the loop instead of at each iteration (its operands aside).
bool Hoistable(Operation* op, CFGLoop* loop, DominanceInfo& dom) {
  if (op->hasTrait<OpTrait::IsTerminator>() || op->getNumRegions()) return false;
  if (auto call = dyn_cast<vmir::CallImportOp>(op)) return IsPureImport(call);
  if (!isa<vmir::VMDialect>(op->getDialect()) || !isMemoryEffectFree(op)) return false;
  return isSpeculatable(op) || ReachedWheneverLoopRuns(op, loop, dom);
}

// A header argument that receives the same value (or itself) on every edge is that value:
// ConvertToVM passes a tensor's unchanged dynamic dims through the loop this way.
void ForwardUnchangedHeaderArguments(CFGLoop* loop) {
  Block* header = loop->getHeader();
  for (BlockArgument arg : header->getArguments()) {
    Value same;
    bool unique = true;
    for (auto it = header->pred_begin(); it != header->pred_end() && unique; ++it) {
      auto branch = dyn_cast<BranchOpInterface>((*it)->getTerminator());
      if (!branch) { unique = false; break; }
      for (unsigned s = 0; s < branch->getNumSuccessors(); ++s) {
        if (branch->getSuccessor(s) != header) continue;
        Value in = branch.getSuccessorOperands(s)[arg.getArgNumber()];
        if (!in || in == arg) continue;
        if (same && same != in) unique = false;
        same = in;
      }
    }
    if (unique && same) arg.replaceAllUsesWith(same);
  }
}

// Imports that keep their result in a ref global and return it again while their other
// operands are unchanged: `%g = global.load.ref N; %r = import(%dev, %g, sizes...);
// global.store.ref %r, N`. With invariant operands only the first iteration can allocate, so
// the three ops run once before the loop, when no other op of the loop touches global N.
// hal.device.transient fails when its size cannot be allocated: like a trapping
// instruction, it leaves the loop only when the loop is known to reach it.
constexpr const char* kCachedInGlobal[] = {"hal.allocator.reuse_uniform", "hal.device.transient"};

// The load/import/store triple around `call` when it is such a cached import, else nothing.
std::optional<std::pair<vmir::GlobalLoadRefOp, vmir::GlobalStoreRefOp>> CachedInGlobal(
    vmir::CallImportOp call) {
  if (!llvm::is_contained(llvm::ArrayRef(kCachedInGlobal), call.getCallee()) ||
      call.getNumOperands() < 2 || call->getNumResults() != 1)
    return std::nullopt;
  auto load = call.getOperand(1).getDefiningOp<vmir::GlobalLoadRefOp>();
  if (!load || !load->hasOneUse() || load->getBlock() != call->getBlock()) return std::nullopt;
  auto store = dyn_cast_or_null<vmir::GlobalStoreRefOp>(call->getNextNode());
  if (!store || store->getOperand(0) != call->getResult(0) || store.getGlobal() != load.getGlobal())
    return std::nullopt;
  return std::make_pair(load, store);
}

// Whether any op of `loop` but `load` and `store` reads or writes the global they access.
bool GlobalUsedElsewhere(CFGLoop* loop, vmir::GlobalLoadRefOp load, vmir::GlobalStoreRefOp store) {
  for (Block* block : loop->getBlocks())
    for (Operation& op : *block) {
      if (&op == load.getOperation() || &op == store.getOperation()) continue;
      auto global = op.getAttrOfType<IntegerAttr>("global");
      if (global && global.getInt() == load.getGlobal()) return true;
    }
  return false;
}

bool ReachedWheneverLoopRuns(Operation* op, CFGLoop* loop, DominanceInfo& dom) {
  SmallVector<Block*> exiting;
  loop->getExitingBlocks(exiting);
  return llvm::all_of(exiting, [&](Block* e) { return dom.dominates(op->getBlock(), e); });
}

bool IsConstant(Operation* op) {
  return isa_and_nonnull<vmir::ConstI64Op, vmir::ConstF64Op, vmir::NullRefOp>(op);
}

// Moves `op` to the end of `preheader`, its constant operands defined in `loop` copied there.
void Rematerialize(Operation* op, Block* preheader, CFGLoop* loop) {
  op->moveBefore(preheader->getTerminator());
  for (OpOperand& use : op->getOpOperands()) {
    Operation* def = use.get().getDefiningOp();
    if (!IsConstant(def) || !loop->contains(def->getBlock())) continue;
    OpBuilder b(op);
    use.set(b.clone(*def)->getResult(0));
  }
}

// Hoists the invariant ops of `loop` into `preheader`; returns how many moved.
int HoistOutOf(CFGLoop* loop, Block* preheader, DominanceInfo& dom) {
  // Constants are not hoisted on their own (hundreds would stay live across the loop, one
  // register each); a hoisted op takes a copy of each constant operand (Rematerialize).
  auto invariant = [&](Value v) {
    return !loop->contains(v.getParentBlock()) || IsConstant(v.getDefiningOp());
  };
  auto loadInLoop = [&](Value v) {  // a cached import's global operand, checked separately
    auto load = v.getDefiningOp<vmir::GlobalLoadRefOp>();
    return load && loop->contains(load->getBlock());
  };
  int moved = 0;
  for (bool changed = true; changed;) {  // an op may become invariant once its producer moved
    changed = false;
    for (Block* block : loop->getBlocks()) {
      // A snapshot: a cached import moves its neighbours (the load and the store) with it.
      auto ops = llvm::to_vector(llvm::make_pointer_range(*block));
      for (Operation* op : ops) {
        if (op->getBlock() != block) continue;  // moved with a cached import
        bool allInvariant = llvm::all_of(op->getOperands(), invariant);
        if (allInvariant && !IsConstant(op) && Hoistable(op, loop, dom)) {
          Rematerialize(op, preheader, loop);
          changed = true;
          ++moved;
          continue;
        }
        auto call = dyn_cast<vmir::CallImportOp>(op);
        if (allInvariant || !call || call->getNumOperands() < 2 || !loadInLoop(call.getOperand(1)))
          continue;
        auto cached = CachedInGlobal(call);
        if (!cached) continue;
        auto [load, store] = *cached;
        auto others = llvm::drop_begin(call->getOperands(), 2);
        if (!invariant(call.getOperand(0)) || !llvm::all_of(others, invariant) ||
            GlobalUsedElsewhere(loop, load, store) ||
            (call.getCallee() == "hal.device.transient" && !ReachedWheneverLoopRuns(call, loop, dom)))
          continue;
        for (Operation* o : {load.getOperation(), call.getOperation(), store.getOperation()})
          Rematerialize(o, preheader, loop);
        changed = true;
        moved += 3;
      }
    }
  }
  return moved;
}

// The one block outside `loop` that branches to its header, when that is its only successor
// (LoopBase::getLoopPreheader refuses every mlir::Block: it has no isLegalToHoistInto).
Block* Preheader(CFGLoop* loop) {
  Block* pred = loop->getLoopPredecessor();
  return pred && pred->getNumSuccessors() == 1 ? pred : nullptr;
}

class HoistVMLoopInvariants
    : public PassWrapper<HoistVMLoopInvariants, OperationPass<func::FuncOp>> {
 public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(HoistVMLoopInvariants)
  StringRef getArgument() const override { return "hexir-hoist-vm-loop-invariants"; }
  StringRef getDescription() const override {
    return "Moves loop-invariant, effect-free host work of VM-form loops to their preheaders";
  }
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || func.getBody().hasOneBlock()) return;
    DominanceInfo dom(func);
    CFGLoopInfo loops(dom.getDomTree(&func.getBody()));
    // Innermost first: what leaves an inner loop lands in its preheader, inside the outer one.
    SmallVector<CFGLoop*> preorder = loops.getLoopsInPreorder();
    for (CFGLoop* loop : llvm::reverse(preorder))
      if (Block* preheader = Preheader(loop)) {
        ForwardUnchangedHeaderArguments(loop);
        HoistOutOf(loop, preheader, dom);
      }
  }
};

}  // namespace

// Declared in compiler/Pipeline.cpp (a new header or Passes.td entry would make Bazel
// recompile all of //passes).
std::unique_ptr<mlir::Pass> CreateHoistVMLoopInvariants() {
  return std::make_unique<HoistVMLoopInvariants>();
}
void RegisterHoistVMLoopInvariants() { mlir::registerPass(&CreateHoistVMLoopInvariants); }

}  // namespace hexir
