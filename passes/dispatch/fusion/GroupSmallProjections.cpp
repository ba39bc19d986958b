// hexir-group-small-projections: the contractions reading the copies of one chain of
// hexir-fuse-small-reductions (q/k/v after one RMSNorm; w1/w3 after the other), the copies, the
// elementwise ops reading those contractions (rotary, SiLU * mul, a KV-cache row written in
// place), and one contraction after those with its elementwise consumers (w2 + residual)
// become one dispatch group, `hexir.dispatch_group = "small_layer.N"`, which
// hexir-form-dispatch-regions forms into one region: one kernel that computes the norm once
// (the copies are equal: the target's CSE merges them) and every op after it. With
// max-norm-extent (CUDA), a norm too wide to copy becomes a group of its one-point sum and its
// scaling ("small_layer.normK": one block instead of two kernels). Groups then take their
// heads (group-heads), their tails (group-tails) and chain (chain-groups). Rule and cost
// model: README.md beside this file.
#include <optional>
#include <string>

#include "dialects/hexir/IR/HexirAttributes.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "passes/dispatch/InPlaceUpdates.h"
#include "passes/dispatch/fusion/FusionPasses.h"
#include "passes/dispatch/fusion/RowInsertSelects.h"

namespace hexir {
#define GEN_PASS_DEF_GROUPSMALLPROJECTIONS
#include "passes/dispatch/fusion/FusionPasses.h.inc"

namespace {
using namespace mlir;

// The product of `op`'s static loop extents, or nullopt when one is dynamic.
std::optional<int64_t> StaticWork(linalg::LinalgOp op) {
  int64_t work = 1;
  for (int64_t n : op.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(n) || n > (int64_t{1} << 30) / std::max<int64_t>(work, 1)) return std::nullopt;
    work *= n;
  }
  return work;
}

// No hexir.* statement other than the chain mark, a block-matvec kernel choice, where
// `inPlace`, an in-place update of the init (its kernel result is tied to that operand) and,
// where `grouped`, this pass's own group (chain-groups joins marked groups).
bool Unmarked(Operation* op, bool inPlace = false, bool grouped = false) {
  for (NamedAttribute a : op->getDiscardableAttrDictionary()) {
    StringRef name = a.getName().getValue();
    if (name.starts_with("hexir.") && name != kRecomputeInConsumerAttr && name != kBlockMatvecAttr &&
        !(inPlace && name == kInPlaceAttr) && !(grouped && name == kDispatchGroupAttr))
      return false;
  }
  return true;
}

// A member after the projections: a one-result generic of all-parallel loops whose init map
// is the identity and whose other maps are projected permutations (rotary, SiLU * mul, a
// residual add; a KV-cache write over the whole cache reading its row as a broadcast, marked
// in place), not a copy of any chain.
bool IsElementwiseMember(Operation* op) {
  auto g = dyn_cast<linalg::GenericOp>(op);
  if (!g || g->getNumResults() != 1 || g.getNumReductionLoops() != 0 ||
      g->hasAttr(kRecomputeInConsumerAttr) || !Unmarked(g, /*inPlace=*/true))
    return false;
  if (!g.getMatchingIndexingMap(g.getDpsInitOperand(0)).isIdentity()) return false;
  return llvm::all_of(g.getIndexingMapsArray(), [](AffineMap m) { return m.isProjectedPermutation(); });
}

// A contraction after the elementwise members (w2 reading SiLU * mul): a one-result linalg
// op with reduction loops, not a copy of any chain.
bool IsTailContraction(Operation* op) {
  auto l = dyn_cast<linalg::LinalgOp>(op);
  return l && op->getNumResults() == 1 && l.getNumReductionLoops() > 0 &&
         !op->hasAttr(kRecomputeInConsumerAttr) && Unmarked(op);
}

// A reduction into one point (every parallel loop of extent 1: a norm's sum of squares, an
// argmax): nothing to spread over blocks.
bool IsOnePointReduction(linalg::LinalgOp op) {
  if (op.getNumReductionLoops() == 0) return false;
  for (auto [n, kind] : llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray()))
    if (kind == utils::IteratorType::parallel && n != 1) return false;
  return true;
}

// hexir-form-dispatch-regions computes `e` inside its one consumer anyway (its element read by
// at most 16 of the consumer's points, kMaxProducerRecompute there): a pair would save no
// dispatch.
bool JoinsItsConsumer(linalg::GenericOp e) {
  if (!e->hasOneUse()) return false;
  auto consumer = dyn_cast<linalg::LinalgOp>(*e->getUsers().begin());
  if (!consumer) return false;
  SmallVector<int64_t> ranges = consumer.getStaticLoopRanges();
  int64_t recompute = 1;
  for (OpOperand& use : consumer->getOpOperands()) {
    if (use.get() != e->getResult(0)) continue;
    llvm::SmallBitVector used(ranges.size());
    for (AffineExpr x : consumer.getMatchingIndexingMap(&use).getResults())
      if (auto d = dyn_cast<AffineDimExpr>(x)) used.set(d.getPosition());
    for (size_t d = 0; d < ranges.size(); ++d)
      if (!used.test(d)) {
        if (ShapedType::isDynamic(ranges[d])) return false;
        recompute *= ranges[d];
      }
  }
  return recompute <= 16;
}

// The group's kind on its region and executable; CUDA lowers it as one block
// (passes/codegen/CUDABlockLevels.cpp, kSmallLayerGroupKind there).
constexpr char kGroupKind[] = "small_layer";

class GroupSmallProjections : public impl::GroupSmallProjectionsBase<GroupSmallProjections> {
 public:
  using GroupSmallProjectionsBase::GroupSmallProjectionsBase;

  void runOnOperation() override {
    if (maxWork <= 0) return;
    // The chunked host loop's KV-cache rows as the device loop writes them (RowInsertSelects.h):
    // members of the rows stage below; those left out are insert_slices again at the end.
    SmallVector<linalg::GenericOp> rowSelects;
    for (auto func : getOperation().getOps<func::FuncOp>()) rowSelects.append(RowInsertsAsSelects(func, maxWork));
    llvm::MapVector<int64_t, SmallVector<Operation*>> chains;  // copies by chain number
    getOperation().walk([&](linalg::GenericOp g) {
      if (auto n = g->getAttrOfType<IntegerAttr>(kRecomputeInConsumerAttr))
        chains[n.getInt()].push_back(g);
    });
    IRRewriter rewriter(&getContext());
    SmallVector<SmallVector<Operation*>> groups;  // marked, as generics
    for (auto& [id, copies] : chains)
      if (std::optional<SmallVector<Operation*>> members = groupOf(copies)) {
        SmallVector<Operation*> generics = mark(rewriter, id, *members);
        if (!generics.empty()) groups.push_back(std::move(generics));
      }
    if (groupHeads)
      for (SmallVector<Operation*>& g : groups) absorbProducers(rewriter, g);
    if (maxNormExtent > 0) {
      int64_t pair = 0;
      getOperation().walk([&](linalg::GenericOp r) {
        if (std::optional<SmallVector<Operation*>> members = normPairOf(r)) {
          markAs(rewriter, "norm" + std::to_string(pair++), *members);
          if (groupTails) groups.push_back(*members);  // they take tails, then chain too
        }
      });
    }
    // Each block's groups in block order: a group takes the ops reading it before a later
    // group could, and chains with the group before it.
    llvm::MapVector<Block*, SmallVector<SmallVector<Operation*>*>> byBlock;
    for (SmallVector<Operation*>& g : groups) byBlock[g.front()->getBlock()].push_back(&g);
    for (auto& [block, inBlock] : byBlock) {
      llvm::sort(inBlock, [](const SmallVector<Operation*>* a, const SmallVector<Operation*>* b) {
        return a->front()->isBeforeInBlock(b->front());
      });
      if (groupTails)
        for (SmallVector<Operation*>* g : inBlock) absorbConsumers(rewriter, *g);
      if (chainGroups) chainInBlock(inBlock);
    }
    UngroupedSelectsToRowInserts(rowSelects);
  }

 private:
  // The largest of these candidate groups that is valid (validGroup), in block order: the
  // copies, their consumers (at least two) and the elementwise ops reading those that are
  // not in place (rotary, SiLU * mul); plus the in-place ones and those reading the first
  // (cache rows, one written from a rotated row); plus the contractions reading the
  // elementwise members with their own elementwise consumers (w2 + residual). A stage over
  // the cost model (a long cache's rows) so leaves the smaller group as it was.
  std::optional<SmallVector<Operation*>> groupOf(ArrayRef<Operation*> copies) const {
    llvm::SetVector<Operation*> members(copies.begin(), copies.end());
    SmallVector<Operation*> consumers;
    for (Operation* c : copies)
      for (Operation* user : c->getUsers())
        if (!members.contains(user) && !llvm::is_contained(consumers, user)) consumers.push_back(user);
    if (consumers.size() < 2) return std::nullopt;  // one projection: its region holds the chain
    members.insert(consumers.begin(), consumers.end());
    // Elementwise users of `ops` (in place or not, as `inPlace` says), added to the members.
    auto addElementwiseUsers = [&](ArrayRef<Operation*> ops, bool inPlace) {
      SmallVector<Operation*> added;
      for (Operation* op : ops)
        for (Operation* user : op->getUsers())
          if (IsElementwiseMember(user) && user->hasAttr(kInPlaceAttr) == inPlace && members.insert(user))
            added.push_back(user);
      return added;
    };
    SmallVector<llvm::SetVector<Operation*>> stages;
    SmallVector<Operation*> elementwise = addElementwiseUsers(consumers, /*inPlace=*/false);
    stages.push_back(members);
    SmallVector<Operation*> rows = addElementwiseUsers(consumers, /*inPlace=*/true);
    rows.append(addElementwiseUsers(elementwise, /*inPlace=*/true));
    if (!rows.empty()) stages.push_back(members);
    SmallVector<Operation*> tail;
    for (Operation* e : elementwise)
      for (Operation* user : e->getUsers())
        if (IsTailContraction(user) && members.insert(user)) tail.push_back(user);
    (void)addElementwiseUsers(tail, /*inPlace=*/false);
    if (!tail.empty()) stages.push_back(members);
    for (const llvm::SetVector<Operation*>& stage : llvm::reverse(stages)) {
      if (!validGroup(stage)) continue;
      SmallVector<Operation*> ordered(stage.begin(), stage.end());
      llvm::sort(ordered, [](Operation* a, Operation* b) { return a->isBeforeInBlock(b); });
      return ordered;
    }
    return std::nullopt;
  }

  // A norm too wide for hexir-fuse-small-reductions' copies (TinyLlama's 2048): `r`, a
  // one-point reduction (every parallel loop of extent 1: the sum of squares) of at most
  // maxNormExtent iterations, and its users, all elementwise members (not in place) of at
  // most maxNormExtent points (the scaling), none of them marked. Two dependent dispatches
  // become one (CUDA: the block-wide sum, a barrier, the scaling by all threads).
  std::optional<SmallVector<Operation*>> normPairOf(linalg::GenericOp r) const {
    if (r->getNumResults() != 1 || r.getNumReductionLoops() == 0 ||
        r->getDiscardableAttrDictionary().size() != 0 || r->getResult(0).use_empty())
      return std::nullopt;
    std::optional<int64_t> work = StaticWork(r);
    if (!work || *work > maxNormExtent || !IsOnePointReduction(r)) return std::nullopt;
    llvm::SetVector<Operation*> members;
    members.insert(r);
    for (Operation* user : r->getUsers()) {
      auto e = dyn_cast<linalg::GenericOp>(user);
      if (!e || !IsElementwiseMember(e) || e->getDiscardableAttrDictionary().size() != 0) return std::nullopt;
      std::optional<int64_t> points = StaticWork(e);
      if (!points || *points > maxNormExtent || JoinsItsConsumer(e)) return std::nullopt;
      members.insert(e);
    }
    if (!validGroup(members)) return std::nullopt;
    SmallVector<Operation*> ordered(members.begin(), members.end());
    llvm::sort(ordered, [](Operation* a, Operation* b) { return a->isBeforeInBlock(b); });
    return ordered;
  }

  // One block's static ops within the cost model (withinCostModel), unmarked (`grouped`: but
  // for this pass's groups), each in-place member read outside the group (its result is then
  // a kernel result tied to its operand), and no value they compute used outside before the
  // last of them (the group's region is placed there).
  bool validGroup(const llvm::SetVector<Operation*>& members, bool grouped = false) const {
    Block* block = members.front()->getBlock();
    Operation* last = members.front();
    for (Operation* m : members) {
      if (m->getBlock() != block || !Unmarked(m, /*inPlace=*/true, grouped)) return false;
      if (last->isBeforeInBlock(m)) last = m;
      if (m->hasAttr(kInPlaceAttr) &&
          llvm::all_of(m->getUsers(), [&](Operation* u) { return members.contains(u); }))
        return false;
    }
    if (!withinCostModel(members) || !temporariesFit(members)) return false;
    for (Operation* m : members)
      for (Operation* user : m->getUsers()) {
        Operation* top = block->findAncestorOpInBlock(*user);
        if (top && !members.contains(top) && top->isBeforeInBlock(last)) return false;
      }
    return true;
  }

  // The cost model. A member's level is one more than the deepest member it reads (0: reads
  // none); the ops of one level are what separate dispatches could run side by side, so a
  // level's work is at most maxWork (the CPU runs that much as one workgroup anyway, and the
  // overlap of independent dispatches of one wave is worth less than a dispatch's hand-off at
  // that size), while levels run one after another either way, so the group trades nothing
  // by holding several: it saves a dispatch and a barrier per level. Every member static.
  bool withinCostModel(const llvm::SetVector<Operation*>& members) const {
    llvm::DenseMap<Operation*, int64_t> level;
    llvm::DenseMap<int64_t, int64_t> workOfLevel;
    SmallVector<Operation*> ordered(members.begin(), members.end());
    llvm::sort(ordered, [](Operation* a, Operation* b) { return a->isBeforeInBlock(b); });
    for (Operation* m : ordered) {
      auto l = dyn_cast<linalg::LinalgOp>(m);
      std::optional<int64_t> w = l ? StaticWork(l) : std::nullopt;
      if (!w) return false;
      int64_t depth = 0;
      m->walk([&](Operation* nested) {
        for (Value v : nested->getOperands())
          if (auto it = level.find(v.getDefiningOp()); it != level.end())
            depth = std::max(depth, it->second + 1);
      });
      level[m] = depth;
      if ((workOfLevel[depth] += *w) > maxWork) return false;
    }
    return true;
  }

  // The values only members read (the kernel's temporaries) take at most maxTemporaryBytes
  // (0: any): on CUDA they live in the block's shared memory (passes/codegen/CUDABlockLevels.cpp).
  bool temporariesFit(const llvm::SetVector<Operation*>& members) const {
    if (maxTemporaryBytes <= 0) return true;
    int64_t bytes = 0;
    for (Operation* m : members)
      for (Value r : m->getResults()) {
        if (!llvm::all_of(r.getUsers(), [&](Operation* u) { return members.contains(u); })) continue;
        auto type = dyn_cast<RankedTensorType>(r.getType());
        if (!type || !type.hasStaticShape() || !type.getElementType().isIntOrFloat()) return false;
        bytes += type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
      }
    return bytes <= maxTemporaryBytes;
  }

  // Named contractions become generics (a dispatch group holds generics); then every member
  // gets the group's name and loses the chain mark. Returns the members as marked (none when
  // one could not be generalized: the group is then left unmarked).
  SmallVector<Operation*> mark(IRRewriter& rewriter, int64_t id, ArrayRef<Operation*> members) const {
    SmallVector<Operation*> generics;
    for (Operation* m : members) {
      if (isa<linalg::GenericOp>(m)) {
        generics.push_back(m);
        continue;
      }
      rewriter.setInsertionPoint(m);
      FailureOr<linalg::GenericOp> g = linalg::generalizeNamedOp(rewriter, cast<linalg::LinalgOp>(m));
      if (failed(g)) return {};  // left ungrouped: its region still holds the chain
      generics.push_back(*g);
    }
    markAs(rewriter, std::to_string(id), generics);
    return generics;
  }

  // The head of a group (group-heads): an op of no group whose result a member reads, an
  // elementwise member kind (the residual add after the attention's output projection, the
  // embedding row) or a contraction (wo), joins the group when the union is valid (one
  // member at a time, until none joins): its work then runs in the group's kernel, ahead of
  // the norm, instead of in a dispatch of its own. Named ops are generalized when they join.
  void absorbProducers(IRRewriter& rewriter, SmallVector<Operation*>& group) const {
    Block* block = group.front()->getBlock();
    absorb(rewriter, group, [&](const llvm::SetVector<Operation*>& members) {
      SmallVector<Operation*> candidates;
      for (Operation* m : members)
        for (Value operand : m->getOperands()) {
          Operation* p = operand.getDefiningOp();
          if (p && p->getBlock() == block && !members.contains(p) && !p->hasAttr(kDispatchGroupAttr) &&
              !p->hasAttr(kRecomputeInConsumerAttr) && (IsElementwiseMember(p) || IsTailContraction(p)) &&
              !p->hasAttr(kInPlaceAttr) && !llvm::is_contained(candidates, p))
            candidates.push_back(p);
        }
      return candidates;
    });
  }

  // The tails of a group (group-tails): an op of no group that reads a member's result (also
  // inside its body: a tensor.extract), an elementwise member kind, in place or not (the
  // ids, decode state and stop flag a decode step updates in place), or a one-point
  // reduction (a norm's sum; not a projection: its rows spread over many blocks in a kernel
  // of their own, where the group's one block would read its whole weight after the
  // programmatic wait), joins the group when the union is valid, one at a time in block
  // order until none joins: its work then runs in the group's kernel after the group's own
  // levels instead of in a dispatch of its own. Named ops are generalized when they join.
  void absorbConsumers(IRRewriter& rewriter, SmallVector<Operation*>& group) const {
    Block* block = group.front()->getBlock();
    absorb(rewriter, group, [&](const llvm::SetVector<Operation*>& members) {
      SmallVector<Operation*> candidates;
      for (Operation* m : members)
        for (Operation* user : m->getUsers()) {
          Operation* c = block->findAncestorOpInBlock(*user);
          if (c && !members.contains(c) && !c->hasAttr(kDispatchGroupAttr) &&
              (IsElementwiseMember(c) ||
               (IsTailContraction(c) && IsOnePointReduction(cast<linalg::LinalgOp>(c)))) &&
              !llvm::is_contained(candidates, c))
            candidates.push_back(c);
        }
      llvm::sort(candidates, [](Operation* a, Operation* b) { return a->isBeforeInBlock(b); });
      return candidates;
    });
  }

  // Grows `group` by the first of `candidatesOf(members)` whose union with the members is
  // valid, under the group's name, and looks again, until none joins. Named ops are
  // generalized when they join.
  template <typename CandidatesFn>
  void absorb(IRRewriter& rewriter, SmallVector<Operation*>& group, CandidatesFn candidatesOf) const {
    llvm::SetVector<Operation*> members(group.begin(), group.end());
    Attribute name = group.front()->getAttr(kDispatchGroupAttr);
    for (bool joined = true; joined;) {
      joined = false;
      for (Operation* c : candidatesOf(members)) {
        llvm::SetVector<Operation*> withC = members;
        withC.insert(c);
        if (!validGroup(withC, /*grouped=*/true)) continue;
        if (!isa<linalg::GenericOp>(c)) {
          rewriter.setInsertionPoint(c);
          FailureOr<linalg::GenericOp> g = linalg::generalizeNamedOp(rewriter, cast<linalg::LinalgOp>(c));
          if (failed(g)) continue;
          c = *g;
        }
        c->setAttr(kDispatchGroupAttr, name);
        members.insert(c);
        joined = true;
        break;  // the members changed: look again
      }
    }
    group.assign(members.begin(), members.end());
    llvm::sort(group, [](Operation* a, Operation* b) { return a->isBeforeInBlock(b); });
  }

  // Chains of groups (chain-groups): in block order, a group some member of which reads a
  // result of the group before it (the next layer's norm + q/k/v reading the FFN's residual)
  // joins that one, under its name, when the union is a valid group (validGroup: each level
  // within the cost model, the temporaries within their bound, nothing outside reading a
  // member before the last). The levels of the union are those of the two, one after the
  // other, so a kernel runs both and a dispatch is saved at each layer boundary.
  void chainInBlock(ArrayRef<SmallVector<Operation*>*> ordered) const {
    llvm::SetVector<Operation*> current;
    for (const SmallVector<Operation*>* group : ordered) {
      bool reads = !current.empty() && llvm::any_of(*group, [&](Operation* m) {
                     bool found = false;
                     m->walk([&](Operation* nested) {
                       for (Value v : nested->getOperands())
                         if (current.contains(v.getDefiningOp())) found = true;
                     });
                     return found;
                   });
      if (reads) {
        llvm::SetVector<Operation*> joined = current;
        joined.insert(group->begin(), group->end());
        if (validGroup(joined, /*grouped=*/true)) {
          Attribute name = current.front()->getAttr(kDispatchGroupAttr);
          for (Operation* m : *group) m->setAttr(kDispatchGroupAttr, name);
          current = std::move(joined);
          continue;
        }
      }
      current.clear();
      current.insert(group->begin(), group->end());
    }
  }

  // Every member (generics) gets the group's name `small_layer.INSTANCE` and loses the
  // chain mark.
  void markAs(IRRewriter& rewriter, const std::string& instance, ArrayRef<Operation*> generics) const {
    StringAttr name = rewriter.getStringAttr(std::string(kGroupKind) + "." + instance);
    for (Operation* g : generics) {
      g->removeAttr(kRecomputeInConsumerAttr);
      g->setAttr(kDispatchGroupAttr, name);
    }
  }
};

}  // namespace
}  // namespace hexir
