// hexir-group-row-chains: a row softmax, layer norm or RMSNorm written as generics over the
// same rows (reductions along each row, elementwise ops reading their results) becomes one
// dispatch group, `hexir.dispatch_group = "row_chain.N"`, which hexir-form-dispatch-regions
// forms into one kernel; the CPU lowering then runs the chain a block of rows at a time
// (passes/codegen/CPURowChains.h), the CUDA lowering a block of threads per row
// (passes/codegen/CUDARowChains.h: static chains of 2+ rows of 32+ elements only, the `cuda`
// option).
//
//   %m = generic reduction(x)                      %y = dispatch {  m = reduction(x)
//   %e = generic parallel(x, %m)          ==>                       e = parallel(x, m)
//   %s = generic reduction(%e)                                      s = reduction(e)
//   %y = generic parallel(%e, %s)                                   y = parallel(e, s) }
//
// First, reads of a reduction's result through the reduced axis kept as a trailing 1 (ONNX
// keepdims reshapes) become direct row reads, and generics over the rows between a reduction
// and its readers (ReduceMean's divide) are fused into those readers
// (dispatch/KeptDimRowReads.h).
// Members: linalg.generic ops with one result, tensor semantics and no hexir.* mark, n >= 2
// loops of which the first n - 1 are parallel; a reduction reduces its last loop into
// (d0, ..., d(n-2)), an elementwise member writes its whole space (identity output). Links: a
// member reading another's result along the same rows (a reduction's as (d0, ..., d(n-2)), an
// elementwise one's as the identity). A linked set is grouped when it holds a reduction read
// by an elementwise member and exactly one of its results is used outside it, that of its
// last member (the region goes there); a member at the start of the chain whose result is
// also used elsewhere (a residual sum feeding a norm) is left out of it. A set that fails is
// split at its members used outside it (splitAtOutsideUses: a transformer's norm, its
// residual sum and the next norm are linked through elementwise reads).
#include <map>
#include <string>

#include "dialects/hexir/IR/HexirAttributes.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "passes/Passes.h"
#include "passes/codegen/CPURowChains.h"
#include "passes/codegen/CUDARowChains.h"
#include "passes/dispatch/KeptDimRowReads.h"

namespace hexir {
#define GEN_PASS_DEF_GROUPROWCHAINS
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

enum class RowKind { kNone, kReduction, kElementwise };

bool HasHexirMark(Operation* op) {
  return llvm::any_of(op->getDiscardableAttrDictionary(), [](NamedAttribute a) {
    return a.getName().getValue().starts_with("hexir.");
  });
}

// The rows' map of an n-loop member: (d0, ..., d(n-2)).
AffineMap RowsMap(MLIRContext* ctx, unsigned loops) {
  return AffineMap::getMultiDimIdentityMap(loops, ctx).getMajorSubMap(loops - 1);
}

// Chains the CUDA lowering takes (CUDARowChains.h): static loops, at least kMinRowChainRows
// rows of at least kMinRowChainLength elements.
bool CudaRowShape(linalg::GenericOp g) {
  SmallVector<int64_t> extents = g.getStaticLoopRanges();
  if (llvm::any_of(extents, ShapedType::isDynamic) || extents.back() < cuda::kMinRowChainLength) return false;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < extents.size(); ++d) rows *= extents[d];
  return rows >= cuda::kMinRowChainRows;
}

RowKind KindOf(Operation* op, bool cuda) {
  auto g = dyn_cast<linalg::GenericOp>(op);
  if (!g || g->getNumResults() != 1 || g.getNumDpsInits() != 1 || !g.hasPureTensorSemantics() ||
      HasHexirMark(g))
    return RowKind::kNone;
  const unsigned loops = g.getNumLoops();
  if (loops < 2 || (cuda && !CudaRowShape(g))) return RowKind::kNone;
  SmallVector<utils::IteratorType> iterators = g.getIteratorTypesArray();
  for (unsigned i = 0; i + 1 < loops; ++i)
    if (iterators[i] != utils::IteratorType::parallel) return RowKind::kNone;
  AffineMap out = g.getMatchingIndexingMap(g.getDpsInitOperand(0));
  if (iterators.back() == utils::IteratorType::reduction)
    return out == RowsMap(g.getContext(), loops) ? RowKind::kReduction : RowKind::kNone;
  return out.isIdentity() ? RowKind::kElementwise : RowKind::kNone;
}

// Whether `consumer` (a member) reads `producer`'s result through `operand` along the same rows.
bool ReadsAlongRows(linalg::GenericOp consumer, OpOperand& operand, linalg::GenericOp producer,
                    RowKind producerKind) {
  if (consumer.getNumLoops() != producer.getNumLoops() || consumer.isDpsInit(&operand)) return false;
  AffineMap map = consumer.getMatchingIndexingMap(&operand);
  if (producerKind == RowKind::kElementwise) return map.isIdentity();
  return map == RowsMap(consumer.getContext(), consumer.getNumLoops());
}

class GroupRowChains : public impl::GroupRowChainsBase<GroupRowChains> {
 public:
  using GroupRowChainsBase::GroupRowChainsBase;

  void runOnOperation() override {
    getOperation().walk([](func::FuncOp f) { ReadRowsThroughKeptDims(f); });
    int64_t next = 0;
    getOperation().walk([&](Block* block) {
      for (SmallVector<Operation*>& chain : chainsOf(*block)) {
        StringAttr name = StringAttr::get(&getContext(), std::string(codegen::kRowChainGroup) + "." +
                                                             std::to_string(next++));
        for (Operation* m : chain) m->setAttr(kDispatchGroupAttr, name);
      }
    });
  }

 private:
  // The block's groupable chains, each in block order.
  SmallVector<SmallVector<Operation*>> chainsOf(Block& block) const {
    std::map<Operation*, RowKind> kinds;
    SmallVector<Operation*> order;
    for (Operation& op : block)
      if (RowKind k = KindOf(&op, cuda); k != RowKind::kNone) {
        kinds[&op] = k;
        order.push_back(&op);
      }
    if (order.size() < 2) return {};
    llvm::EquivalenceClasses<Operation*> linked;
    for (Operation* op : order) linked.insert(op);
    for (Operation* op : order) {
      auto consumer = cast<linalg::GenericOp>(op);
      for (OpOperand& operand : consumer->getOpOperands()) {
        auto producer = operand.get().getDefiningOp<linalg::GenericOp>();
        if (producer && kinds.count(producer) &&
            ReadsAlongRows(consumer, operand, producer, kinds[producer]))
          linked.unionSets(op, producer);
      }
    }
    llvm::MapVector<Operation*, SmallVector<Operation*>> sets;  // leader -> members in order
    for (Operation* op : order) sets[linked.getLeaderValue(op)].push_back(op);
    SmallVector<SmallVector<Operation*>> chains;
    for (auto& [leader, members] : sets) {
      if (std::optional<SmallVector<Operation*>> chain = groupable(members, kinds)) {
        chains.push_back(std::move(*chain));
        continue;
      }
      for (SmallVector<Operation*>& part : splitAtOutsideUses(members, kinds))
        chains.push_back(std::move(part));
    }
    return chains;
  }

  // A set whose inner members are also read outside it (a norm's output feeding a matmul and
  // the residual sum that starts the next norm) is split: each member used outside the set, in
  // block order, ends a chain of its ancestors in the set (through reads along the rows) not
  // in an earlier chain; the groupable ones are returned.
  static SmallVector<SmallVector<Operation*>> splitAtOutsideUses(ArrayRef<Operation*> members,
                                                                 std::map<Operation*, RowKind>& kinds) {
    llvm::SmallPtrSet<Operation*, 16> inSet(members.begin(), members.end()), taken;
    SmallVector<SmallVector<Operation*>> parts;
    for (Operation* end : members) {
      if (llvm::all_of(end->getUsers(), [&](Operation* u) { return inSet.contains(u); })) continue;
      llvm::SmallPtrSet<Operation*, 16> ancestors;
      SmallVector<Operation*> work = {end};
      while (!work.empty()) {
        Operation* op = work.pop_back_val();
        if (taken.contains(op) || !ancestors.insert(op).second) continue;
        auto consumer = cast<linalg::GenericOp>(op);
        for (OpOperand& operand : consumer->getOpOperands()) {
          auto producer = operand.get().getDefiningOp<linalg::GenericOp>();
          if (producer && inSet.contains(producer) && ReadsAlongRows(consumer, operand, producer, kinds[producer]))
            work.push_back(producer);
        }
      }
      SmallVector<Operation*> part;
      for (Operation* m : members)
        if (ancestors.contains(m)) part.push_back(m);
      if (std::optional<SmallVector<Operation*>> chain = groupable(part, kinds)) {
        taken.insert(chain->begin(), chain->end());
        parts.push_back(std::move(*chain));
      }
    }
    return parts;
  }

  // The members that form a group, or nullopt: sources (members reading no member) used
  // outside the set leave it, repeatedly; then one result may be used outside, the last
  // member's, and some reduction must be read by an elementwise member.
  static std::optional<SmallVector<Operation*>> groupable(ArrayRef<Operation*> all,
                                                          std::map<Operation*, RowKind>& kinds) {
    llvm::SetVector<Operation*> members(all.begin(), all.end());
    auto usedOutside = [&](Operation* m) {
      return llvm::any_of(m->getUsers(), [&](Operation* u) { return !members.contains(u); });
    };
    auto readsMember = [&](Operation* m) {
      return llvm::any_of(m->getOperands(), [&](Value v) { return members.contains(v.getDefiningOp()); });
    };
    for (bool changed = true; changed && members.size() > 1;) {
      changed = false;
      for (Operation* m : SmallVector<Operation*>(members.begin(), members.end()))
        if (m != members.back() && !readsMember(m) && usedOutside(m)) {
          members.remove(m);
          changed = true;
        }
    }
    if (members.size() < 2) return std::nullopt;
    for (Operation* m : members)
      if (m != members.back() && usedOutside(m)) return std::nullopt;
    if (kinds[members.back()] != RowKind::kElementwise) return std::nullopt;
    bool normalizes = llvm::any_of(members, [&](Operation* m) {
      return kinds[m] == RowKind::kElementwise && llvm::any_of(m->getOperands(), [&](Value v) {
               Operation* def = v.getDefiningOp();
               return members.contains(def) && kinds[def] == RowKind::kReduction;
             });
    });
    if (!normalizes) return std::nullopt;
    return SmallVector<Operation*>(members.begin(), members.end());
  }
};

}  // namespace
}  // namespace hexir
