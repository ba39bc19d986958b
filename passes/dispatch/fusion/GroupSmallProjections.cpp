// hexir-group-small-projections: the contractions reading the copies of one chain of
// hexir-fuse-small-reductions (q/k/v after one RMSNorm; w1/w3 after the other), the copies and
// the elementwise ops reading those contractions (rotary, SiLU * mul) become one dispatch
// group, `hexir.dispatch_group = "small_layer.N"`, which hexir-form-dispatch-regions forms into
// one region: one kernel that computes the norm once (the copies are equal: the target's CSE
// merges them) and every projection after it. Rule and cost model: README.md beside this file.
#include <optional>
#include <string>

#include "dialects/hexir/IR/HexirAttributes.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "passes/dispatch/fusion/FusionPasses.h"

namespace hexir {
#define GEN_PASS_DEF_GROUPSMALLPROJECTIONS
#include "passes/dispatch/fusion/FusionPasses.h.inc"

namespace {
using namespace mlir;

// The group's kind on its region and executable (no target lowers it specially).
constexpr char kGroupKind[] = "small_layer";

// The product of `op`'s static loop extents, or nullopt when one is dynamic.
std::optional<int64_t> StaticWork(linalg::LinalgOp op) {
  int64_t work = 1;
  for (int64_t n : op.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(n) || n > (int64_t{1} << 30) / std::max<int64_t>(work, 1)) return std::nullopt;
    work *= n;
  }
  return work;
}

// No hexir.* statement other than the chain mark and a block-matvec kernel choice.
bool Unmarked(Operation* op) {
  for (NamedAttribute a : op->getDiscardableAttrDictionary()) {
    StringRef name = a.getName().getValue();
    if (name.starts_with("hexir.") && name != kRecomputeInConsumerAttr && name != kBlockMatvecAttr)
      return false;
  }
  return true;
}

class GroupSmallProjections : public impl::GroupSmallProjectionsBase<GroupSmallProjections> {
 public:
  using GroupSmallProjectionsBase::GroupSmallProjectionsBase;

  void runOnOperation() override {
    if (maxWork <= 0) return;
    llvm::MapVector<int64_t, SmallVector<Operation*>> chains;  // copies by chain number
    getOperation().walk([&](linalg::GenericOp g) {
      if (auto n = g->getAttrOfType<IntegerAttr>(kRecomputeInConsumerAttr))
        chains[n.getInt()].push_back(g);
    });
    IRRewriter rewriter(&getContext());
    for (auto& [id, copies] : chains)
      if (std::optional<SmallVector<Operation*>> members = groupOf(copies)) mark(rewriter, id, *members);
  }

 private:
  // The copies, their consumers (at least two) and the elementwise ops reading those, in
  // block order; nullopt when they are not one block's static ops of at most maxWork
  // iterations in all, or when a value they compute is used before the last of them (the
  // group's region is placed there).
  std::optional<SmallVector<Operation*>> groupOf(ArrayRef<Operation*> copies) const {
    llvm::SetVector<Operation*> members(copies.begin(), copies.end());
    SmallVector<Operation*> consumers;
    for (Operation* c : copies)
      for (Operation* user : c->getUsers())
        if (!members.contains(user) && !llvm::is_contained(consumers, user)) consumers.push_back(user);
    if (consumers.size() < 2) return std::nullopt;  // one projection: its region holds the chain
    members.insert(consumers.begin(), consumers.end());
    for (Operation* c : consumers)
      for (Operation* user : c->getUsers())
        if (auto g = dyn_cast<linalg::GenericOp>(user);
            g && g->getNumResults() == 1 && linalg::isElementwise(g) && Unmarked(g))
          members.insert(g);
    Block* block = copies.front()->getBlock();
    Operation* last = copies.front();
    int64_t work = 0;
    for (Operation* m : members) {
      auto l = dyn_cast<linalg::LinalgOp>(m);
      std::optional<int64_t> w = l ? StaticWork(l) : std::nullopt;
      if (!w || m->getBlock() != block || !Unmarked(m)) return std::nullopt;
      work += *w;
      if (last->isBeforeInBlock(m)) last = m;
    }
    if (work > maxWork) return std::nullopt;
    for (Operation* m : members)
      for (Operation* user : m->getUsers()) {
        Operation* top = block->findAncestorOpInBlock(*user);
        if (top && !members.contains(top) && top->isBeforeInBlock(last)) return std::nullopt;
      }
    SmallVector<Operation*> ordered(members.begin(), members.end());
    llvm::sort(ordered, [](Operation* a, Operation* b) { return a->isBeforeInBlock(b); });
    return ordered;
  }

  // Named contractions become generics (a dispatch group holds generics); then every member
  // gets the group's name and loses the chain mark.
  void mark(IRRewriter& rewriter, int64_t id, ArrayRef<Operation*> members) const {
    SmallVector<Operation*> generics;
    for (Operation* m : members) {
      if (isa<linalg::GenericOp>(m)) {
        generics.push_back(m);
        continue;
      }
      rewriter.setInsertionPoint(m);
      FailureOr<linalg::GenericOp> g = linalg::generalizeNamedOp(rewriter, cast<linalg::LinalgOp>(m));
      if (failed(g)) return;  // left ungrouped: its region still holds the chain
      generics.push_back(*g);
    }
    StringAttr name = rewriter.getStringAttr(std::string(kGroupKind) + "." + std::to_string(id));
    for (Operation* g : generics) {
      g->removeAttr(kRecomputeInConsumerAttr);
      g->setAttr(kDispatchGroupAttr, name);
    }
  }
};

}  // namespace
}  // namespace hexir
