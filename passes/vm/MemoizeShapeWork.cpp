// hexir-memoize-vm-shape-work: a host function's shape arithmetic and shape checks run again
// only when the dims of its arguments change (on the VM form, last of the VM passes).
//
// A module with dynamic dims computes, at every call, the same integers from the same input
// dims: each tensor's sizes and byte counts, workgroup counts, the parameter words and the
// command buffer's key, and the shape checks over them (`hexir-insert-shape-checks`). The
// zoo's dynamic ShuffleNet ran 1053 VM instructions a call against its static export's 497.
// This pass computes them once per distinct set of dims:
//
//   ^entry: dims d_i = hal.buffer_view.dim(%arg, k)     ^entry: dims d_i (the key)
//           shape arithmetic over d_i                           same = valid & AND_i (d_i == key_i)
//           ...work...                              =>          cond_br same, ^rest, ^miss
//   ^b: assert c(d), "..."                              ^miss:  shape arithmetic; shape checks
//                                                               store each value used outside
//                                                               store key_i = d_i; valid = 1
//                                                       ^rest:  ...work, each value used there
//                                                               loaded (global.load.i64) where
//                                                               its uses start; no checks
//
// The slice that moves into ^miss: the entry block's `hal.buffer_view.dim` calls on the
// function's arguments (the key; they stay before the compare) and every speculatable
// `inst` with i64 results outside loops whose operands are in the slice or constants
// (constants are copied into ^miss, never moved). An assert moves when its condition and
// message values are in the slice and its block is reached, or not, as a function of the
// slice alone ("determined"): outside loops, and either entered only through `br` or a
// `cond_br` on a slice value from determined blocks, or post-dominating its immediate
// dominator, a determined block (the join after a branch the slice does not decide: a cached
// command buffer or one recorded now). In ^miss it asserts `reached ? condition : 1`,
// `reached` the block's condition over those branches, so a check of a branch not taken does
// not trap; the checks keep their messages and their order along any path. Other asserts stay
// where they were. An i64 argument of a block entered through such edges only, each passing
// a slice value (a dim after a batch-1 switch: 1 on one side, d on the other), is in the slice
// too: ^miss computes it as a select over the edges taken; the argument itself stays.
//
// Why it holds: the slice is a pure function of the key, so on a call with the key of the
// last completed ^miss every value loaded equals the one ^miss would compute, and every check
// that moved passed for that key (^miss stores nothing before its last check). A check that
// fails leaves the stored values and key as they were. Moving the shape checks before the
// function's other work makes a call that fails a shape check fail before any device work
// (where before it might first have failed on another check, e.g. a data-dependent one).
// Functions called by other functions (a call may re-enter with other dims) and the module
// initializer are left alone, and so is a function where the slice would save fewer
// instructions than twice what the compare and the loads add. Globals: `hexir_vm.value_globals`
// grows by one (valid) + one per key dim + one per value used outside the slice; a context is
// single-threaded (vm/README.md), so the memo needs no lock.
// Tests: tests/lit/vm/memoize_shape_work.mlir; e2e: tests/e2e (dynamic shapes changing between
// calls, a failing check leaving the memo intact).
#include <map>

#include "dialects/vm/IR/VMOps.h"
#include "llvm/ADT/PostOrderIterator.h"
#include "llvm/ADT/SetVector.h"
#include "mlir/Analysis/CFGLoopInfo.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/RegionGraphTraits.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

namespace hexir {
namespace {
using namespace mlir;

constexpr llvm::StringLiteral kValueGlobals = "hexir_vm.value_globals";

bool IsConstant(Value v) { return static_cast<bool>(v.getDefiningOp<vmir::ConstI64Op>()); }

// `hal.buffer_view.dim(%arg, ...)` of one of the function's arguments.
bool IsArgumentDim(Operation* op) {
  auto call = dyn_cast<vmir::CallImportOp>(op);
  if (!call || call.getCallee() != "hal.buffer_view.dim" || call.getArgs().empty()) return false;
  auto arg = dyn_cast<BlockArgument>(call.getArgs()[0]);
  return arg && arg.getOwner()->isEntryBlock();
}

// What moves into ^miss, found on the unchanged function.
struct Slice {
  SmallVector<Value> keys;                    // the entry block's argument dims
  Operation* lastKey = nullptr;               // the entry block splits after it
  // In reverse post-order, program order within a block: moved insts, and arguments of
  // determined blocks whose every incoming value is in the slice (computed in ^miss as a
  // select over the incoming edges; the argument itself stays).
  SmallVector<std::pair<Operation*, BlockArgument>> items;
  llvm::DenseSet<Operation*> insts;           // the moved insts
  SmallVector<vmir::AssertOp> asserts;        // in the same order
  // Blocks reached as a function of the slice: through their incoming edges (null), or
  // whenever the block named is (it dominates them and they post-dominate it).
  llvm::DenseMap<Block*, Block*> determined;
  llvm::DenseSet<Value> values;               // keys, moved results, block arguments above
  bool Has(Value v) const { return values.contains(v) || IsConstant(v); }
};

// Whether every edge from `pred` into `block` is taken as a function of the slice, with the
// edge's operands of `block` distinct per edge (a cond_br with both targets `block` is one).
bool DeterminedEdge(const Slice& s, Block* pred) {
  Operation* t = pred->getTerminator();
  if (isa<vmir::BrOp>(t)) return true;
  auto cond = dyn_cast<vmir::CondBrOp>(t);
  return cond && s.Has(cond.getCondition()) && cond.getTrueDest() != cond.getFalseDest();
}

// Calls `fn(pred, value)` for each edge into `arg`'s block with the value it passes to `arg`.
template <typename Fn>
void ForEachIncoming(BlockArgument arg, Fn fn) {
  Block* block = arg.getOwner();
  for (Block* pred : block->getPredecessors()) {
    auto branch = cast<BranchOpInterface>(pred->getTerminator());
    for (unsigned i = 0; i < branch->getNumSuccessors(); ++i)
      if (branch->getSuccessor(i) == block) fn(pred, branch.getSuccessorOperands(i)[arg.getArgNumber()]);
  }
}

// `loops` is null for a function of one block (no loops; MLIR builds no dominator tree then).
Slice FindSlice(func::FuncOp func, const CFGLoopInfo* loops, DominanceInfo& dom,
                PostDominanceInfo& pdom) {
  Slice s;
  Block* entry = &func.getBody().front();
  for (Operation& op : *entry)
    if (IsArgumentDim(&op)) {
      s.keys.push_back(op.getResult(0));
      s.values.insert(op.getResult(0));
      s.lastKey = &op;
    }
  if (s.keys.empty()) return s;
  llvm::ReversePostOrderTraversal<Block*> rpo(entry);
  for (Block* block : rpo) {
    if (loops && loops->getLoopFor(block)) continue;
    bool determined = block == entry;
    bool byEdges = false;
    if (!determined) {
      byEdges = !block->hasNoPredecessors() && llvm::all_of(block->getPredecessors(), [&](Block* pred) {
        return s.determined.contains(pred) && DeterminedEdge(s, pred);
      });
      determined = byEdges;
      // The join of a branch the slice does not decide (a cached command buffer or not):
      // reached whenever the block that dominates it is, which it post-dominates.
      if (!determined && dom.getNode(block) && dom.getNode(block)->getIDom()) {
        Block* idom = dom.getNode(block)->getIDom()->getBlock();
        if (s.determined.contains(idom) && pdom.postDominates(block, idom)) {
          s.determined[block] = idom;
          determined = true;
        }
      }
    }
    if (determined && !s.determined.contains(block)) s.determined[block] = nullptr;
    if (byEdges)
      for (BlockArgument arg : block->getArguments()) {
        if (!arg.getType().isInteger(64)) continue;
        bool all = true;
        ForEachIncoming(arg, [&](Block*, Value in) { all = all && s.Has(in); });
        if (!all) continue;
        s.items.push_back({nullptr, arg});
        s.values.insert(arg);
      }
    for (Operation& op : *block) {
      if (auto inst = dyn_cast<vmir::InstOp>(&op)) {
        if (!isSpeculatable(inst) || !llvm::all_of(inst->getResultTypes(), [](Type t) {
              return t.isInteger(64);
            }))
          continue;
        if (!llvm::all_of(inst->getOperands(), [&](Value v) { return s.Has(v); })) continue;
        s.items.push_back({inst, BlockArgument()});
        s.insts.insert(inst);
        for (Value r : inst->getResults()) s.values.insert(r);
      } else if (auto a = dyn_cast<vmir::AssertOp>(&op)) {
        if (determined && s.Has(a.getCondition()) &&
            llvm::all_of(a.getValues(), [&](Value v) { return s.Has(v); }))
          s.asserts.push_back(a);
      }
    }
  }
  return s;
}

// Results of moved ops read by ops that stay, in the slice's order.
SmallVector<Value> LiveOuts(const Slice& s) {
  llvm::DenseSet<Operation*> moved(s.insts.begin(), s.insts.end());
  for (vmir::AssertOp a : s.asserts) moved.insert(a);
  SmallVector<Value> out;
  for (auto [op, arg] : s.items)
    if (op)
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(), [&](Operation* u) { return !moved.contains(u); }))
          out.push_back(r);
  return out;
}

class Rewriter {
 public:
  Rewriter(func::FuncOp func, Slice& s, int64_t firstGlobal)
      : func_(func), s_(s), b_(func.getContext()), loc_(func.getLoc()), next_(firstGlobal) {}

  // Returns the number of value globals used.
  int64_t Run(ArrayRef<Value> liveOuts) {
    Block* head = &func_.getBody().front();
    rest_ = head->splitBlock(std::next(s_.lastKey->getIterator()));
    miss_ = b_.createBlock(rest_);
    b_.setInsertionPointToEnd(miss_);
    auto branchToRest = vmir::BrOp::create(b_, loc_, ValueRange{}, rest_);
    b_.setInsertionPoint(branchToRest);
    for (auto [op, arg] : s_.items) {
      if (!op) {
        shadows_[arg] = Incoming(arg);
        continue;
      }
      op->moveBefore(branchToRest);
      for (OpOperand& use : op->getOpOperands()) use.set(InMiss(use.get()));
    }
    for (vmir::AssertOp a : s_.asserts) MoveAssert(a);
    const int64_t valid = next_++;
    SmallVector<int64_t> keyGlobals;
    for (Value key : s_.keys) {
      keyGlobals.push_back(next_++);
      vmir::GlobalStoreI64Op::create(b_, loc_, key, b_.getI64IntegerAttr(keyGlobals.back()));
    }
    SmallVector<int64_t> outGlobals;
    for (Value v : liveOuts) {
      outGlobals.push_back(next_++);
      vmir::GlobalStoreI64Op::create(b_, loc_, v, b_.getI64IntegerAttr(outGlobals.back()));
    }
    vmir::GlobalStoreI64Op::create(b_, loc_, MissConstant(1), b_.getI64IntegerAttr(valid));

    // The compare: valid & d_0 == key_0 & ...
    b_.setInsertionPointToEnd(head);
    Value same = Load(valid);
    for (auto [key, global] : llvm::zip(s_.keys, keyGlobals))
      same = Inst("and.i64", {same, Inst("cmp.eq.i64", {key, Load(global)})});
    vmir::CondBrOp::create(b_, loc_, same, ValueRange{}, ValueRange{}, rest_, miss_);

    // Each value used outside ^miss is loaded where its uses start (out of loops).
    DominanceInfo dom(func_);
    CFGLoopInfo loops(dom.getDomTree(&func_.getBody()));
    for (auto [liveOut, global] : llvm::zip(liveOuts, outGlobals)) {
      Value v = liveOut;
      auto outside = [&](OpOperand& use) { return use.getOwner()->getBlock() != miss_; };
      Block* at = nullptr;
      for (OpOperand& use : v.getUses())
        if (outside(use))
          at = at ? dom.findNearestCommonDominator(at, use.getOwner()->getBlock())
                  : use.getOwner()->getBlock();
      while (CFGLoop* loop = loops.getLoopFor(at))
        at = dom.getNode(loop->getOutermostLoop()->getHeader())->getIDom()->getBlock();
      Operation* first = at->getTerminator();
      for (OpOperand& use : v.getUses())
        if (outside(use)) {
          Operation* user = at->findAncestorOpInBlock(*use.getOwner());
          if (user && user->isBeforeInBlock(first)) first = user;
        }
      b_.setInsertionPoint(first);
      Value loaded = Load(global);
      v.replaceUsesWithIf(loaded, outside);
    }
    // Constants only moved ops read (^miss has its own copies) would still run every call.
    func_.walk([](vmir::ConstI64Op c) {
      if (c->use_empty()) c.erase();
    });
    return next_;
  }

 private:
  Value Constant(int64_t v) {
    return vmir::ConstI64Op::create(b_, loc_, b_.getI64Type(), b_.getI64IntegerAttr(v));
  }
  Value Inst(StringRef mnemonic, ValueRange operands) {
    return vmir::InstOp::create(b_, loc_, TypeRange{b_.getI64Type()}, b_.getStringAttr(mnemonic),
                                operands)
        .getResult(0);
  }
  Value Load(int64_t global) {
    return vmir::GlobalLoadI64Op::create(b_, loc_, b_.getI64Type(), b_.getI64IntegerAttr(global));
  }

  // A constant at ^miss's start (one per value).
  Value MissConstant(int64_t v) {
    auto [it, inserted] = constants_.try_emplace(v, Value());
    if (inserted) {
      OpBuilder::InsertionGuard guard(b_);
      b_.setInsertionPointToStart(miss_);
      it->second = Constant(v);
    }
    return it->second;
  }

  // `v` as ^miss may read it: a constant after the compare is copied to ^miss, a block
  // argument of the slice is its value computed there.
  Value InMiss(Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v); arg && shadows_.count(arg)) return shadows_[arg];
    auto c = v.getDefiningOp<vmir::ConstI64Op>();
    if (!c || c->getBlock() == &func_.getBody().front()) return v;
    return MissConstant(c.getValue());
  }

  // 1 when `block` is reached, as a value of ^miss; null when always (the function's entry,
  // whose ops after the key are now in ^rest; asked on the CFG before the compare exists).
  Value Reached(Block* block) {
    if (block->isEntryBlock() || block == rest_) return Value();
    if (auto it = reached_.find(block); it != reached_.end()) return it->second;
    if (Block* same = s_.determined.lookup(block)) return reached_[block] = Reached(same);
    Value any;
    bool always = false;
    for (Block* pred : llvm::SetVector<Block*>(block->pred_begin(), block->pred_end())) {
      Value edge = Edge(pred, block);
      if (!edge) always = true;
      else any = any ? Inst("or.i64", {any, edge}) : edge;
    }
    return reached_[block] = always ? Value() : any;
  }

  // 1 when the edge from `pred` to `block` is taken (null: whenever `pred` is reached and
  // that is always).
  Value Edge(Block* pred, Block* block) {
    Value edge = Reached(pred);
    if (auto cond = dyn_cast<vmir::CondBrOp>(pred->getTerminator());
        cond && cond.getTrueDest() != cond.getFalseDest()) {
      Value taken = Inst(cond.getTrueDest() == block ? "cmp.ne.i64" : "cmp.eq.i64",
                         {InMiss(cond.getCondition()), MissConstant(0)});
      edge = edge ? Inst("and.i64", {edge, taken}) : taken;
    }
    return edge;
  }

  // A block argument of the slice as ^miss computes it: the incoming value of the edge taken
  // (select over the edges but the last; any value where the block is not reached, which no
  // check that runs then reads).
  Value Incoming(BlockArgument arg) {
    Value value;
    ForEachIncoming(arg, [&](Block* pred, Value incoming) {
      Value in = InMiss(incoming);
      if (!value) {
        value = in;
        return;
      }
      Value edge = Edge(pred, arg.getOwner());
      value = edge ? Inst("select.i64", {edge, in, value}) : in;
    });
    return value;
  }

  void MoveAssert(vmir::AssertOp a) {
    Value condition = InMiss(a.getCondition());
    if (Value reached = Reached(a->getBlock()))
      condition = Inst("select.i64", {reached, condition, MissConstant(1)});
    SmallVector<Value> values;
    for (Value v : a.getValues()) values.push_back(InMiss(v));
    vmir::AssertOp::create(b_, a.getLoc(), condition, a.getMessageAttr(), values);
    a.erase();
  }

  func::FuncOp func_;
  Slice& s_;
  OpBuilder b_;
  Location loc_;
  int64_t next_;
  Block* miss_ = nullptr;
  Block* rest_ = nullptr;
  std::map<int64_t, Value> constants_;  // any int64 (DenseMap reserves two as its markers)
  llvm::DenseMap<Block*, Value> reached_;
  llvm::DenseMap<Value, Value> shadows_;  // slice block arguments -> their ^miss values
};

class MemoizeVMShapeWork : public PassWrapper<MemoizeVMShapeWork, OperationPass<ModuleOp>> {
 public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MemoizeVMShapeWork)
  StringRef getArgument() const override { return "hexir-memoize-vm-shape-work"; }
  StringRef getDescription() const override {
    return "Runs a host function's shape arithmetic and shape checks again only when its "
           "arguments' dims change";
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::DenseSet<StringRef> called;
    module.walk([&](vmir::CallOp call) { called.insert(call.getCallee()); });
    auto count = module->getAttrOfType<IntegerAttr>(kValueGlobals);
    int64_t globals = count ? count.getInt() : 0;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || func->hasAttr("hexir_vm.initializer") ||
          called.contains(func.getName()))
        continue;
      DominanceInfo dom(func);
      PostDominanceInfo pdom(func);
      std::optional<CFGLoopInfo> loops;
      if (!func.getBody().hasOneBlock()) loops.emplace(dom.getDomTree(&func.getBody()));
      Slice s = FindSlice(func, loops ? &*loops : nullptr, dom, pdom);
      if (s.keys.empty() || !HeadReadsNoSlice(func, s)) continue;
      SmallVector<Value> liveOuts = LiveOuts(s);
      const int64_t saved = s.insts.size() + s.asserts.size();
      const int64_t added = 3 * s.keys.size() + 2 + liveOuts.size();
      if (saved < 2 * added) continue;
      globals = Rewriter(func, s, globals).Run(liveOuts);
    }
    if (globals) module->setAttr(kValueGlobals, IntegerAttr::get(IntegerType::get(&getContext(), 64), globals));
  }

 private:
  // No op staying before the compare (up to the last key dim) reads a value that moves after it.
  static bool HeadReadsNoSlice(func::FuncOp func, const Slice& s) {
    for (Operation& op : func.getBody().front()) {
      if (!s.insts.contains(&op))
        for (Value v : op.getOperands())
          if (Operation* def = v.getDefiningOp(); def && s.insts.contains(def)) return false;
      if (&op == s.lastKey) break;
    }
    return true;
  }
};

}  // namespace

// Declared in compiler/Pipeline.cpp (a new header or Passes.td entry would make Bazel
// recompile all of //passes).
std::unique_ptr<mlir::Pass> CreateMemoizeVMShapeWork() { return std::make_unique<MemoizeVMShapeWork>(); }
void RegisterMemoizeVMShapeWork() { mlir::registerPass(&CreateMemoizeVMShapeWork); }

}  // namespace hexir
