// hexir-merge-sibling-projections (FusionPasses.td, README.md): after
// hexir-form-dispatch-regions, the regions of one block that each compute one projection of
// the same vector (a llama decode layer's q, k and v GEMVs of the normed row; v's region also
// writes its KV-cache row in place) become one region with all their results, kind
// kSiblingProjectionsGroup, which CUDA runs as one kernel whose blocks are partitioned over
// the projections' rows (passes/codegen/CUDADistributeThreads.cpp).
//   %q = region { q = W_q x }   %k = region { k = W_k x }   %r = region { rot(k) }
//   %vc = region { vc[pos] = W_v x }
// ==> %q, %k, %vc = region { q = W_q x; k = W_k x; vc[pos] = W_v x }   %r = region { rot(k) }
// A region qualifies when its only op with reduction loops has one reduction loop of at least
// kMinProjectionReduction, read contiguously (k only as every input's last index), at least
// kMinProjectionRows rows, static extents, no hexir.* mark, inputs from above the region (no
// recomputed norm), and the region yields one value and carries no mark; members share the
// vector (read along the reduction loop only) and the reduced extent. The merged region sits at
// the last member; what lies between the first and the last member and reads an earlier
// member's result (the k rotary's own dispatch) moves after it, unless a member reads it (then
// nothing is merged).
#include "dialects/hexir/IR/HexirOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "passes/dispatch/fusion/FusionPasses.h"

namespace hexir {
#define GEN_PASS_DEF_MERGESIBLINGPROJECTIONS
#include "passes/dispatch/fusion/FusionPasses.h.inc"

namespace {
using namespace mlir;

// The kind CUDADistributeThreads partitions over blocks: cuda::kSiblingProjectionsGroup
// (passes/codegen/CUDAWholeReductions.h, a header of the CUDA passes' own library).
constexpr char kSiblingProjectionsGroup[] = "sibling_projections";
// The shortest reduction a CUDA warp reduces (cuda::kMinWarpReduction, CUDAWarpReduce.h):
// CUDADistributeThreads partitions only chains it distributes a warp a row, in blocks of two
// warps (so at least two rows each).
constexpr int64_t kMinProjectionReduction = 64;
constexpr int64_t kMinProjectionRows = 2;

// The vector `region`'s projection reads along its reduction loop, or null when the region is
// no projection that may be merged (the rule above).
Value projectedVector(DispatchRegionOp region) {
  if (region->getNumResults() != 1 || region->hasAttr(kDispatchGroupAttr) ||
      region->hasAttr(kDeviceAttr))
    return Value();
  linalg::LinalgOp reduction;
  for (Operation& op : region.getBody().front()) {
    auto l = dyn_cast<linalg::LinalgOp>(op);
    if (!l || l.getNumReductionLoops() == 0) continue;
    if (reduction) return Value();
    reduction = l;
  }
  if (!reduction || reduction.getNumReductionLoops() != 1 || reduction->getNumResults() != 1 ||
      ShapedType::isDynamicShape(reduction.getStaticLoopRanges()))
    return Value();
  for (NamedAttribute a : reduction->getDiscardableAttrs())
    if (a.getName().getValue().starts_with("hexir.")) return Value();
  SmallVector<unsigned> reduced;
  reduction.getReductionDims(reduced);
  SmallVector<int64_t> ranges = reduction.getStaticLoopRanges();
  int64_t rows = 1;
  for (auto [d, n] : llvm::enumerate(ranges))
    if (d != reduced[0]) rows *= n;
  if (ranges[reduced[0]] < kMinProjectionReduction || rows < kMinProjectionRows) return Value();
  AffineExpr k = getAffineDimExpr(reduced[0], reduction.getContext());
  Value vector;
  for (OpOperand* in : reduction.getDpsInputOperands()) {
    if (region.getBody().isAncestor(in->get().getParentRegion()))
      return Value();  // computed in the region
    AffineMap map = reduction.getMatchingIndexingMap(in);
    // Rows contiguous along k (a warp's lanes read them coalesced): k only as the last index.
    for (unsigned r = 0; r < map.getNumResults(); ++r)
      if (map.getResult(r).isFunctionOfDim(reduced[0]) &&
          (r + 1 != map.getNumResults() || map.getResult(r) != k))
        return Value();
    if (map.getNumResults() == 1 && map.getResult(0) == k) vector = in->get();
  }
  return vector;
}

int64_t reducedExtent(DispatchRegionOp region) {
  for (Operation& op : region.getBody().front())
    if (auto l = dyn_cast<linalg::LinalgOp>(op); l && l.getNumReductionLoops() == 1) {
      SmallVector<unsigned> reduced;
      l.getReductionDims(reduced);
      return l.getStaticLoopRanges()[reduced[0]];
    }
  return -1;
}

// Merges `members` (regions of one block, in order) into one region at the last of them.
LogicalResult mergeRegions(ArrayRef<DispatchRegionOp> members) {
  Operation* first = members.front();
  Operation* last = members.back();
  llvm::SmallPtrSet<Operation*, 8> isMember;
  for (DispatchRegionOp m : members) isMember.insert(m);
  // Ops between the first and the last member that read an earlier member's result (or
  // such an op's) move after the last member.
  llvm::SetVector<Value> produced;
  for (DispatchRegionOp m : members)
    if (m != last) produced.insert(m->getResults().begin(), m->getResults().end());
  SmallVector<Operation*> moved;
  auto reads = [&](Operation* op) {
    llvm::SetVector<Value> used(op->getOperands().begin(), op->getOperands().end());
    getUsedValuesDefinedAbove(op->getRegions(), used);
    return llvm::any_of(used, [&](Value v) { return produced.contains(v); });
  };
  for (Operation* op = first->getNextNode(); op != last; op = op->getNextNode()) {
    if (isMember.contains(op)) {
      if (reads(op)) return failure();  // a member reads an op that must move after it
      continue;
    }
    if (!reads(op)) continue;
    moved.push_back(op);
    produced.insert(op->getResults().begin(), op->getResults().end());
  }
  if (reads(last)) return failure();
  for (Operation* op : llvm::reverse(moved)) op->moveAfter(last);

  SmallVector<Type> types;
  for (DispatchRegionOp m : members) types.append(m->getResultTypes().begin(), m->getResultTypes().end());
  OpBuilder b(last);
  auto merged = DispatchRegionOp::create(b, last->getLoc(), types);
  merged->setAttr(kDispatchGroupAttr, b.getStringAttr(kSiblingProjectionsGroup));
  Block* body = new Block();
  merged.getBody().push_back(body);
  b.setInsertionPointToStart(body);
  SmallVector<Value> yielded;
  for (DispatchRegionOp m : members) {
    IRMapping map;
    for (Operation& op : m.getBody().front()) {
      if (auto yield = dyn_cast<YieldOp>(op)) {
        for (Value v : yield.getValues()) yielded.push_back(map.lookupOrDefault(v));
        continue;
      }
      b.clone(op, map);
    }
  }
  YieldOp::create(b, merged.getLoc(), yielded);
  unsigned at = 0;
  for (DispatchRegionOp m : members) {
    for (Value r : m->getResults()) r.replaceAllUsesWith(merged->getResult(at++));
    m->erase();
  }
  return success();
}

// Every group of two or more mergeable regions of a block reading one vector.
void mergeSiblingProjections(func::FuncOp func) {
  SmallVector<Block*> blocks;
  func.walk([&](Block* b) {  // not the regions' own bodies, which merging erases
    Operation* parent = b->getParentOp();
    if (!isa<DispatchRegionOp>(parent) && !parent->getParentOfType<DispatchRegionOp>())
      blocks.push_back(b);
  });
  for (Block* block : blocks) {
    llvm::MapVector<std::pair<Value, int64_t>, SmallVector<DispatchRegionOp>> groups;
    for (Operation& op : *block)
      if (auto region = dyn_cast<DispatchRegionOp>(op))
        if (Value v = projectedVector(region)) groups[{v, reducedExtent(region)}].push_back(region);
    for (auto& [key, members] : groups)
      if (members.size() > 1) (void)mergeRegions(members);
  }
}

class MergeSiblingProjections : public impl::MergeSiblingProjectionsBase<MergeSiblingProjections> {
 public:
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal()) mergeSiblingProjections(func);
  }
};

}  // namespace
}  // namespace hexir
