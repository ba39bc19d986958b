// Puts a run of specialization switches that test one run-time value behind one switch, so
// each branch is one segment (one command buffer, one submission per call) instead of two
// per specialized dispatch:
//
//   %a = scf.if (%m == 1) {S1(%x)} else {G1(%x)}      %a, %c = scf.if (%m == 1) {
//   %b = hexir.dispatch @relu(%a) dims(%m)        =>     %b1 = relu(S1(%x)); yield .., S2(%b1)
//   %c = scf.if (dim(%b, 0) == 1) {S2(%b)} else         } else {
//          {G2(%b)}                                       %b2 = relu(G1(%x)); yield .., G2(%b2)
//                                                      }
//
// Terms: a switch's condition is a conjunction of `d == v` tests (v a constant). Two dims are
// the same when their keys are (DimKeys.h).
// First, loops are unswitched: a switch at the top of an scf.for body whose tested dims are
// all known before the loop by key (a carried tensor whose rows no iteration changes) gets
// one switch before the loop, testing those dims there, with the loop cloned into both
// branches and the switches the test decides replaced by their branch in each clone.
// The run: from a switch S to the last switch L of its block that S's terms decide (all of
// L's terms are S's), with no op holding regions between them other than switches. Every op
// of the run is cloned into both branches of a new `scf.if` on S's condition; in the then
// branch a switch whose terms are all S's is replaced by its then branch; in the else branch
// a switch holding all of S's terms (and maybe more) is replaced by its else branch; other
// switches are cloned as they are. Values of the run used after it are yielded.
// The run is widened to the ops around it, back to the block's start, an op with regions or
// an op other than host arithmetic that a tested dim's key is computed from (the new switch
// tests the keys: S's own test may read a tensor of the run, a dispatch's reshaped result;
// the key's arithmetic stays before it) and on to the block's end or an op with regions, each
// side where it holds a dispatch: a batch = 1 switch in the middle of a
// network then leaves one segment per branch, not three (a dynamic ViT's call: 3 submissions
// -> 1). A switch alone is merged this way too.
#include "dialects/hexir/IR/HexirOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "passes/Passes.h"
#include "passes/dispatch/DimKeys.h"
#include "passes/dispatch/SpecializationSwitch.h"

namespace hexir {
#define GEN_PASS_DEF_MERGESPECIALIZATIONSWITCHES
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

struct Term {
  DimKey dim;
  int64_t value;
  bool operator==(const Term& o) const { return dim == o.dim && value == o.value; }
};

// The `d == v` tests whose conjunction `cond` is; failure for any other form.
LogicalResult collectTerms(Value cond, SmallVectorImpl<Term>& terms) {
  if (auto a = cond.getDefiningOp<arith::AndIOp>())
    return success(succeeded(collectTerms(a.getLhs(), terms)) &&
                   succeeded(collectTerms(a.getRhs(), terms)));
  auto cmp = cond.getDefiningOp<arith::CmpIOp>();
  if (!cmp || cmp.getPredicate() != arith::CmpIPredicate::eq) return failure();
  APInt c;
  Value dim = cmp.getLhs();
  if (!matchPattern(cmp.getRhs(), m_ConstantInt(&c))) {
    if (!matchPattern(cmp.getLhs(), m_ConstantInt(&c))) return failure();
    dim = cmp.getRhs();
  }
  terms.push_back({KeyOfIndex(dim), c.getSExtValue()});
  return success();
}

// The terms of switch `s`, or none when its condition is not a conjunction of tests.
SmallVector<Term> termsOf(scf::IfOp s) {
  SmallVector<Term> terms;
  if (failed(collectTerms(s.getCondition(), terms))) terms.clear();
  return terms;
}

bool isSwitch(Operation* op) {
  return isa<scf::IfOp>(op) && op->hasAttr(kSpecializationSwitchAttr);
}

// Which branch of `s` runs where the outer switch's condition `outer` (terms `facts`) is
// `holds`: 1 then, 0 else, -1 unknown.
int decide(scf::IfOp s, Value outer, ArrayRef<Term> facts, bool holds) {
  if (s.getCondition() == outer) return holds ? 1 : 0;
  SmallVector<Term> terms = termsOf(s);
  if (terms.empty()) return -1;
  if (holds)
    return llvm::all_of(terms, [&](const Term& t) {
             return llvm::is_contained(facts, t) || (t.dim.constant && *t.dim.constant == t.value);
           })
               ? 1
               : -1;
  // The facts' conjunction fails: so does that of a switch testing all of them (and more).
  if (llvm::all_of(facts, [&](const Term& t) { return llvm::is_contained(terms, t); })) return 0;
  return -1;
}

// Erases the ops of `block` left unused (the tests of switches replaced by a branch).
void eraseDeadOps(Block* block) {
  SmallVector<Operation*> ops;
  for (Operation& op : block->without_terminator()) ops.push_back(&op);
  for (Operation* op : llvm::reverse(ops))
    if (isOpTriviallyDead(op)) op->erase();
}

// Clones `run` into `block` (which ends with no terminator yet) where the outer terms `facts`
// are `holds`, replacing decided switches by their branch; yields `escaping`. Returns the
// number of switches it replaced.
unsigned buildBranch(Block* block, ArrayRef<Operation*> run, Value outer, ArrayRef<Term> facts, bool holds,
                     ArrayRef<Value> escaping, Location loc) {
  OpBuilder b = OpBuilder::atBlockEnd(block);
  IRMapping map;
  unsigned replaced = 0;
  for (Operation* op : run) {
    auto s = dyn_cast<scf::IfOp>(op);
    int branch = s && isSwitch(op) ? decide(s, outer, facts, holds) : -1;
    if (branch < 0) {
      b.clone(*op, map);
      continue;
    }
    Block& taken = branch ? s.getThenRegion().front() : s.getElseRegion().front();
    for (Operation& inner : taken.without_terminator()) b.clone(inner, map);
    for (auto [result, yielded] : llvm::zip(s.getResults(), taken.getTerminator()->getOperands()))
      map.map(result, map.lookupOrDefault(yielded));
    ++replaced;
  }
  SmallVector<Value> yielded;
  for (Value v : escaping) yielded.push_back(map.lookupOrDefault(v));
  scf::YieldOp::create(b, loc, yielded);
  eraseDeadOps(block);
  return replaced;
}

// The conjunction of `terms`, computed at `b` from their keys.
Value testTerms(OpBuilder& b, Location loc, ArrayRef<Term> terms) {
  Value cond;
  for (const Term& t : terms) {
    Value dim = t.dim.dim >= 0 ? tensor::DimOp::create(b, loc, t.dim.tensor, t.dim.dim).getResult() : t.dim.tensor;
    Value test = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, dim,
                                       arith::ConstantIndexOp::create(b, loc, t.value));
    cond = cond ? arith::AndIOp::create(b, loc, cond, test).getResult() : test;
  }
  return cond;
}

bool holdsDispatch(ArrayRef<Operation*> ops) {
  return llvm::any_of(ops, [](Operation* op) { return isa<DispatchOp>(op); });
}

// Pure host code: constants, dims, index arithmetic, reshapes.
bool hostArithmetic(Operation* op) {
  return op->getNumRegions() == 0 && isMemoryEffectFree(op) && !isa<DispatchOp>(op);
}

// The ops around a run [first, last] that join it (the header's widening), and the test of
// the merged switch: S's own, or the facts' keys where S's reads an op that joins.
struct Widening {
  SmallVector<Operation*> before, after;
  Value cond;
};

Widening widen(scf::IfOp first, Operation* last, ArrayRef<Term> facts) {
  Widening w{{}, {}, first.getCondition()};
  Block* block = first->getBlock();
  // The ops of the block the keys are computed from: other than host arithmetic (a dispatch,
  // whose result's dim is a key), one ends the widening backwards.
  const bool keyed = llvm::all_of(facts, [](const Term& t) { return !t.dim.constant && t.dim.tensor; });
  llvm::SmallPtrSet<Operation*, 16> keyOps;
  SmallVector<Value> work;
  if (keyed)
    for (const Term& t : facts) work.push_back(t.dim.tensor);
  while (!work.empty()) {
    Operation* op = work.pop_back_val().getDefiningOp();
    if (op && op->getBlock() == block && keyOps.insert(op).second) llvm::append_range(work, op->getOperands());
  }
  // An op joins when it is not host arithmetic (a dispatch, a check, a host read) or reads an
  // op that joined; host arithmetic stays outside, before the switch, where later passes still
  // see it (a loop's constant bounds).
  llvm::SmallPtrSet<Operation*, 32> joined;
  auto joins = [&](Operation* op) {
    return !hostArithmetic(op) || llvm::any_of(op->getOperands(), [&](Value v) {
             return v.getDefiningOp() && joined.contains(v.getDefiningOp());
           });
  };
  Operation* start = first;
  for (Operation* op = first->getPrevNode(); keyed && op && op->getNumRegions() == 0; op = op->getPrevNode()) {
    if (keyOps.contains(op) && !hostArithmetic(op)) break;
    start = op;
  }
  for (Operation* op = start; op != first.getOperation(); op = op->getNextNode())
    if (joins(op)) {
      w.before.push_back(op);
      joined.insert(op);
    }
  if (!holdsDispatch(w.before)) {
    w.before.clear();
    joined.clear();
  }
  // S's test reading an op that joined (a dim of a dispatch's reshaped result): the keys'.
  // Each op once: host index arithmetic reuses values, and a walk of every path through it
  // is exponential in its depth (torchvision's Faster R-CNN: minutes in this loop).
  SmallVector<Value> condWork{w.cond};
  llvm::SmallPtrSet<Operation*, 32> condSeen;
  bool readsRun = false;
  while (!condWork.empty() && !readsRun) {
    Operation* op = condWork.pop_back_val().getDefiningOp();
    if (!op || op->getBlock() != block || !condSeen.insert(op).second) continue;
    readsRun = joined.contains(op);
    llvm::append_range(condWork, op->getOperands());
  }
  if (readsRun) {
    OpBuilder at(first);
    w.cond = testTerms(at, first.getLoc(), facts);
  }
  for (Operation* op = first; op != last->getNextNode(); op = op->getNextNode()) joined.insert(op);
  SmallVector<Operation*> stays;  // after the run, hoisted before the switch
  for (Operation* op = last->getNextNode(); op && !op->hasTrait<OpTrait::IsTerminator>() && op->getNumRegions() == 0;
       op = op->getNextNode()) {
    if (!joins(op)) {
      stays.push_back(op);
      continue;
    }
    w.after.push_back(op);
    joined.insert(op);
  }
  if (!holdsDispatch(w.after)) w.after.clear();
  else
    for (Operation* op : stays) op->moveBefore(first);
  return w;
}

// Merges the run starting at switch `first`; returns the op after the new switch, or the op
// after `first` when there is nothing to merge.
Operation* mergeFrom(scf::IfOp first) {
  Operation* next = first->getNextNode();
  SmallVector<Term> facts = termsOf(first);
  if (facts.empty()) return next;
  // The run's end: the last switch the facts decide, before any other op with regions.
  Operation* last = first;
  for (Operation* op = next; op && !op->hasTrait<OpTrait::IsTerminator>(); op = op->getNextNode()) {
    if (isSwitch(op)) {
      if (decide(cast<scf::IfOp>(op), first.getCondition(), facts, true) == 1) last = op;
      continue;
    }
    if (op->getNumRegions() > 0) break;
  }
  Block* block = first->getBlock();
  auto [before, after, cond] = widen(first, last, facts);
  if (last == first.getOperation() && before.empty() && after.empty()) return next;
  SmallVector<Operation*> run(before);
  for (Operation* op = first; op != last->getNextNode(); op = op->getNextNode()) run.push_back(op);
  llvm::append_range(run, after);
  llvm::SmallPtrSet<Operation*, 16> inRun(run.begin(), run.end());
  SmallVector<Value> escaping;
  for (Operation* op : run)
    for (Value r : op->getResults())
      if (llvm::any_of(r.getUsers(), [&](Operation* user) {
            return !inRun.contains(block->findAncestorOpInBlock(*user));
          }))
        escaping.push_back(r);

  OpBuilder b(first);
  Location loc = first.getLoc();
  auto merged = scf::IfOp::create(b, loc, ValueRange(escaping).getTypes(), cond,
                                  /*addThenBlock=*/false, /*addElseBlock=*/false);
  merged->setAttr(kSpecializationSwitchAttr, b.getUnitAttr());
  buildBranch(&merged.getThenRegion().emplaceBlock(), run, cond, facts, true, escaping, loc);
  buildBranch(&merged.getElseRegion().emplaceBlock(), run, cond, facts, false, escaping, loc);
  for (auto [v, result] : llvm::zip(escaping, merged.getResults()))
    v.replaceUsesWithIf(result, [&](OpOperand& use) {
      return !inRun.contains(block->findAncestorOpInBlock(*use.getOwner()));
    });
  Operation* resume = run.back()->getNextNode();
  for (Operation* op : llvm::reverse(run)) op->erase();
  return resume;
}

// Loops unswitched per function at most, and the ops a loop may have to be cloned.
constexpr int kMaxUnswitchedLoops = 16;
constexpr int64_t kMaxUnswitchedLoopOps = 4096;

// Whether every term tests a run-time dim known before `loop` (a value dominating it).
bool invariantIn(ArrayRef<Term> terms, scf::ForOp loop, DominanceInfo& dominance) {
  return !terms.empty() && llvm::all_of(terms, [&](const Term& t) {
    return !t.dim.constant && t.dim.tensor && dominance.properlyDominates(t.dim.tensor, loop);
  });
}

// Replaces switch `s` by the ops of its then (`then`) or else branch.
void inlineBranch(scf::IfOp s, bool then) {
  Block& taken = then ? s.getThenRegion().front() : s.getElseRegion().front();
  SmallVector<Value> yielded(taken.getTerminator()->getOperands());
  for (Operation& op : llvm::make_early_inc_range(taken.without_terminator())) op.moveBefore(s);
  s->replaceAllUsesWith(yielded);
  s->erase();
}

// Unswitches `loop` on `facts` (the terms of a switch of its body, known before it): the
// loop is cloned into both branches of a new switch testing them before it, and in each
// clone the switches of the body that the facts decide are replaced by their branch.
void unswitch(scf::ForOp loop, ArrayRef<Term> facts) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  Value cond = testTerms(b, loc, facts);
  auto outer = scf::IfOp::create(b, loc, loop.getResultTypes(), cond, /*addThenBlock=*/false,
                                 /*addElseBlock=*/false);
  outer->setAttr(kSpecializationSwitchAttr, b.getUnitAttr());
  for (bool holds : {true, false}) {
    OpBuilder branch = OpBuilder::atBlockEnd(&(holds ? outer.getThenRegion() : outer.getElseRegion()).emplaceBlock());
    auto clone = cast<scf::ForOp>(branch.clone(*loop));
    scf::YieldOp::create(branch, loc, clone.getResults());
    // The switch unswitched on is decided in both clones (decide: where the facts' conjunction
    // fails, a switch testing all of them takes its else branch).
    for (Operation& op : llvm::make_early_inc_range(clone.getBody()->without_terminator())) {
      auto inner = dyn_cast<scf::IfOp>(&op);
      int taken = inner && isSwitch(inner) ? decide(inner, cond, facts, holds) : -1;
      if (taken >= 0) inlineBranch(inner, taken == 1);
    }
    eraseDeadOps(clone.getBody());
  }
  loop->replaceAllUsesWith(outer.getResults());
  loop->erase();
}

// Unswitches the loops of `func` holding a switch (at the top of their body) whose tests are
// loop-invariant by key (a decode loop's M = 1, a recurrent network's batch = 1): each
// iteration's dispatches are then one segment instead of one before, one in and one after
// the switch. Inner loops first; a clone may be unswitched again, up to kMaxUnswitchedLoops.
void unswitchLoops(func::FuncOp func) {
  for (int round = 0; round < kMaxUnswitchedLoops; ++round) {
    DominanceInfo dominance(func);
    scf::ForOp loop;
    SmallVector<Term> facts;
    func.walk([&](scf::IfOp s) {
      auto parent = dyn_cast<scf::ForOp>(s->getParentOp());
      if (!isSwitch(s) || !parent) return WalkResult::advance();
      SmallVector<Term> terms = termsOf(s);
      if (!invariantIn(terms, parent, dominance)) return WalkResult::advance();
      int64_t ops = 0;
      parent->walk([&](Operation*) { ++ops; });
      if (ops > kMaxUnswitchedLoopOps) return WalkResult::advance();
      loop = parent;
      facts = terms;
      return WalkResult::interrupt();
    });
    if (!loop) return;
    unswitch(loop, facts);
  }
}

class MergeSpecializationSwitches
    : public impl::MergeSpecializationSwitchesBase<MergeSpecializationSwitches> {
 public:
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) unswitchLoops(func);
    SmallVector<Block*> blocks;
    for (auto func : getOperation().getOps<func::FuncOp>())
      func.walk([&](Block* block) {
        // A switch's own blocks go with it when a run holding it is merged.
        if (!isSwitch(block->getParentOp())) blocks.push_back(block);
      });
    for (Block* block : blocks) {
      for (Operation* op = block->empty() ? nullptr : &block->front(); op;) {
        auto s = dyn_cast<scf::IfOp>(op);
        op = s && isSwitch(s) ? mergeFrom(s) : op->getNextNode();
      }
    }
  }
};

}  // namespace
}  // namespace hexir
