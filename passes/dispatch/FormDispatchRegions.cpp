// Forms one hexir.dispatch_region per root linalg op. Producers that are cheap to
// recompute (tensor.empty, linalg.fill of an empty, scalar constants) are cloned into the
// region so that, e.g., a matmul's zero-init is part of the matmul kernel.
#include "dialects/hexir/IR/HexirAttributes.h"
#include "dialects/hexir/IR/HexirOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallBitVector.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"
#include "passes/Passes.h"
#include "passes/codegen/CPUConvolutionKernel.h"
#include "passes/dispatch/CacheRowProducers.h"
#include "passes/dispatch/DispatchFormationFolds.h"
#include "passes/dispatch/InPlaceUpdates.h"
#include "passes/dispatch/LoadTimeValues.h"
#include "passes/dispatch/LowerTensorOps.h"

namespace hexir {
#define GEN_PASS_DEF_FORMDISPATCHREGIONS
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

// One computation spread over several generics that must run as one kernel:
// `hexir.dispatch_group = "KIND.INSTANCE"` on each of them (an importer's statement); the
// region and its executable (OutlineDispatchRegions) carry "KIND", e.g. "decode_attention",
// which the CUDA target lowers to one flash-decoding kernel (passes/codegen/CUDADecodeAttention.h); the name is kDispatchGroupAttr (HexirAttributes.h).

bool isScalarConstant(Operation* op) {
  auto c = dyn_cast_or_null<arith::ConstantOp>(op);
  return c && c.getType().isIntOrIndexOrFloat();
}

// A fill is cloned into its consumers (never its own dispatch) when linalg ops use it only
// as their init. A fill read as an input would become a temporary of its full (maybe
// dynamic) size inside the kernel (a dynamic allocation, unsupported in CUDA kernels):
// generic consumers read its scalar instead (DispatchFormationFolds); others get a fill dispatch.
bool isClonableFill(Operation* op) {
  auto fill = dyn_cast_or_null<linalg::FillOp>(op);
  if (!fill) return false;
  for (OpOperand& use : fill->getResult(0).getUses()) {
    auto user = dyn_cast<linalg::LinalgOp>(use.getOwner());
    if (!user || isa<linalg::FillOp>(user) || !user.isDpsInit(&use)) return false;
  }
  return true;
}

bool isElementwise(linalg::GenericOp op);

// Most times a fused elementwise producer's element may be recomputed (see isFusableProducer).
constexpr int64_t kMaxProducerRecompute = 16;

// A copy hexir-fuse-small-reductions made for its one consumer: computed inside that
// consumer's dispatch, whatever it is (a reduction too): that pass judged the recomputation.
// (A block matvec's copy reaches it through its own reshape to [blocks][B]: the reshape comes
// in with it, ReshapeOfRecomputed.)
bool isMarkedForRecompute(linalg::GenericOp g) {
  if (g->getNumResults() != 1 || !g->hasOneUse()) return false;
  Operation* user = *g->getUsers().begin();
  if (auto reshape = dyn_cast<tensor::ExpandShapeOp>(user); reshape && reshape->hasOneUse()) {
    if (reshape->getBlock() != g->getBlock()) return false;
    user = *reshape->getUsers().begin();
  }
  return isa<linalg::LinalgOp>(user) && user->getBlock() == g->getBlock();
}

// The static reshape of a recompute copy into its one consumer (above), else null.
tensor::ExpandShapeOp ReshapeOfRecomputed(Operation* op) {
  auto reshape = dyn_cast_or_null<tensor::ExpandShapeOp>(op);
  if (!reshape || !reshape->hasOneUse() || !reshape.getResultType().hasStaticShape()) return {};
  auto g = reshape.getSrc().getDefiningOp<linalg::GenericOp>();
  return g && g->hasAttr(kRecomputeInConsumerAttr) && isMarkedForRecompute(g) ? reshape : tensor::ExpandShapeOp();
}

bool isElementwiseGeneric(Operation* op) {
  auto g = dyn_cast_or_null<linalg::GenericOp>(op);
  return g && isElementwise(g);
}

// A dense constant or a parameter argument, seen through static reshapes and casts (what the
// lift pass lifts too: dispatch/LoadTimeValues.h).
bool isDenseConstantOrParameter(Value v) {
  v = ThroughStaticReshapes(v);
  if (auto constant = v.getDefiningOp<arith::ConstantOp>()) return isa<DenseElementsAttr>(constant.getValue());
  return IsParameterArgument(v);
}

// A layout change of constants (transpose(W) of a constant weight: every input a dense
// constant or a parameter argument (maybe reshaped) read through a permutation, so the result holds as many elements
// as each input, static): as a dispatch of its own it is lifted to load
// (hexir-lift-constant-dispatches), computed once (a parameter's: once per weight buffer);
// fused into its consumer it ran per call.
// Static exports fused it (an M = 1 Gemm reads W^T once per output row, recompute 1) where
// dynamic ones, whose dynamic M left the recompute unknown, lifted it: MobileNetV3's
// 576 x 1024 classifier ran 8.7 ms per call static, 10x the whole dynamic network.
// Broadcasts (a bias over rows) still fuse: lifting them would store the expanded copy.
bool isConstantLayoutChange(linalg::GenericOp g) {
  if (!cast<RankedTensorType>(g->getResult(0).getType()).hasStaticShape()) return false;
  if (g.getNumDpsInputs() == 0) return false;
  for (OpOperand* input : g.getDpsInputOperands()) {
    if (!isDenseConstantOrParameter(input->get())) return false;
    if (!g.getMatchingIndexingMap(input).isPermutation()) return false;
  }
  return true;
}

// An elementwise generic whose only user is another linalg op of its block, or the source
// of an in-place insert_slice of its block (a KV-cache row: its update computes the row), is
// computed inside that consumer's dispatch (producer fusion), never as a dispatch of its own;
// so is a reduction computing such a row (a GEMV writing its output straight into the cache
// slot, CacheRowProducers.h).
bool isFusableProducer(Operation* op) {
  if (IsInPlaceRowProducer(op, isElementwiseGeneric)) return true;
  auto g = dyn_cast_or_null<linalg::GenericOp>(op);
  if (g && g->hasAttr(kOperandCastAttr)) return false;  // a tensor-core operand: materialized
  if (g && g->hasAttr(kRecomputeInConsumerAttr)) return isMarkedForRecompute(g);
  if (!g || g->getNumResults() != 1 || !g->hasOneUse() || !isElementwise(g)) return false;
  if (g->hasAttr(kInPlaceAttr)) return false;  // its kernel writes its init's buffer
  if (isConstantLayoutChange(g)) return false;  // lifted to load as a dispatch of its own
  Operation* user = *g->getUsers().begin();
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(user))
    return insert->hasAttr(kInPlaceAttr) && insert.getSource() == g->getResult(0) &&
           user->getBlock() == g->getBlock();
  auto consumer = dyn_cast<linalg::LinalgOp>(user);
  if (!consumer || user->getBlock() != g->getBlock()) return false;
  // A fused producer is recomputed for every consumer point that reads its element: fine for
  // a few (a bias broadcast over 16 columns), not for a normalized vector read by every row
  // of a 32000-row matvec (measured 60x slower than computing it once on the H200).
  SmallVector<int64_t> ranges = consumer.getStaticLoopRanges();
  for (OpOperand& use : user->getOpOperands()) {
    // An init is read once per output element, before the reduction starts.
    if (use.get() != g->getResult(0) || consumer.isDpsInit(&use)) continue;
    llvm::SmallBitVector used(ranges.size());
    for (AffineExpr e : consumer.getMatchingIndexingMap(&use).getResults())
      if (auto d = dyn_cast<AffineDimExpr>(e)) used.set(d.getPosition());
    int64_t recompute = 1;
    for (size_t d = 0; d < ranges.size(); ++d) {
      if (used.test(d)) continue;
      if (ShapedType::isDynamic(ranges[d])) return false;
      recompute *= ranges[d];
    }
    if (recompute > kMaxProducerRecompute) return false;
  }
  // Inside a reducing consumer, each point needs the producer's whole slice along the reduced
  // dims; when such a dim is dynamic that slice is a dynamically sized kernel temporary, which
  // the CUDA target does not allocate (e.g. softmax's normalisation feeding attention's P*V).
  auto type = cast<RankedTensorType>(g->getResult(0).getType());
  SmallVector<utils::IteratorType> iterators = consumer.getIteratorTypesArray();
  for (OpOperand& use : user->getOpOperands()) {
    if (use.get() != g->getResult(0)) continue;
    AffineMap map = consumer.getMatchingIndexingMap(&use);
    for (auto [i, e] : llvm::enumerate(map.getResults())) {
      auto d = dyn_cast<AffineDimExpr>(e);
      if (d && iterators[d.getPosition()] == utils::IteratorType::reduction && type.isDynamicDim(i))
        return false;
    }
  }
  return true;
}

// A convolution: linalg's (named or recognized generic) or the ONNX importer's 2-D form,
// dense, depthwise or grouped (codegen/CPUConvolutionKernel.h).
bool isConvolution(Operation* op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  return linalgOp && (linalg::isaConvolutionOpInterface(linalgOp) ||
                      codegen::MatchConvolution(linalgOp).has_value());
}

// The ONNX importer's constant-zero pad (a generic over the padded result, no inputs, yielding
// select(inside, tensor.extract(source, clamped), 0.0), each coordinate the loop index (a
// constant for a unit dim) or clamped by min(max(., 0), extent - 1); not LowerTensorOps' form
// of a tensor.pad, which
// codegen leaves a generic), of static or run-time extents (a dynamic export's), whose one
// reader is a depthwise convolution of its block, as that convolution's input x: with
// fuse-pads-into-depthwise (CPU) it joins the convolution's dispatch, whose kernel stages its
// planes from the unpadded source writing zero borders (codegen/CPUConvolutionDepthwise.h)
// instead of a pad dispatch writing a padded copy of the whole input first.
bool isZeroPadOfDepthwiseConvolution(Operation* op) {
  auto g = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!g || g.getNumDpsInputs() != 0 || g->getNumResults() != 1 || !g->hasOneUse() ||
      g.getNumReductionLoops() != 0)
    return false;
  auto type = cast<RankedTensorType>(g->getResult(0).getType());
  if (type.getRank() != 4) return false;
  auto yield = cast<linalg::YieldOp>(g.getRegion().front().getTerminator());
  auto select = yield.getValues()[0].getDefiningOp<arith::SelectOp>();
  auto extract = select ? select.getTrueValue().getDefiningOp<tensor::ExtractOp>() : nullptr;
  auto value = select ? select.getFalseValue().getDefiningOp<arith::ConstantOp>() : nullptr;
  auto zero = value ? dyn_cast<FloatAttr>(value.getValue()) : FloatAttr();
  if (!extract || !zero || !zero.getValue().isZero()) return false;
  for (Value at : extract.getIndices())
    if (!at.getDefiningOp<linalg::IndexOp>() && !at.getDefiningOp<arith::MinSIOp>() &&
        !matchPattern(at, m_Constant()))  // a unit dim's index folded to 0
      return false;
  auto conv = dyn_cast<linalg::LinalgOp>(*g->getUsers().begin());
  if (!conv || conv->getBlock() != g->getBlock() || conv->getOperand(0) != g->getResult(0)) return false;
  std::optional<codegen::ConvolutionGeometry> geometry = codegen::MatchConvolution(conv);
  return geometry && geometry->kind == codegen::ConvolutionKind::kDepthwise;
}

bool isClonable(Operation* op) {
  return op && (isa<tensor::EmptyOp>(op) || isScalarConstant(op) || isClonableFill(op));
}

// Elementwise: all loops parallel, every map a projected permutation, identity outputs.
bool isElementwise(linalg::GenericOp op) {
  if (op.getNumReductionLoops() != 0) return false;
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation()) return false;
  for (OpOperand& init : op.getDpsInitsMutable())
    if (!op.getMatchingIndexingMap(&init).isIdentity()) return false;
  return true;
}

class FormDispatchRegions : public impl::FormDispatchRegionsBase<FormDispatchRegions> {
 public:
  using FormDispatchRegionsBase::FormDispatchRegionsBase;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal()) continue;
      LowerHostTensorOps(func);
      if (fuseElementwise) DropUnitReshapesOfInPlaceRows(func);
      ApplyDispatchFormationFolds(func);
      if (failed(formGroupRegions(func))) return signalPassFailure();
      // Roots anywhere in the function (also inside scf bodies), not inside other linalg ops.
      SmallVector<Operation*> roots;
      func.walk([&](Operation* op) {
        if (isa<linalg::LinalgOp>(op) && !isClonableFill(op) &&
            !joinsConsumer(op) && !op->getParentOfType<linalg::LinalgOp>() && !op->getParentOfType<DispatchRegionOp>())
          roots.push_back(op);
        if (isa<tensor::InsertSliceOp>(op) && op->hasAttr(kInPlaceAttr)) roots.push_back(op);
      });
      for (Operation* root : roots)
        if (!fusedAway.contains(root)) formRegion(root);
      // Host copies of cloned producers are dead now.
      IRRewriter rewriter(&getContext());
      (void)eraseUnreachableBlocks(rewriter, func->getRegions());
      SmallVector<Operation*> all;
      func.walk<WalkOrder::PreOrder>([&](Operation* op) {
        if (!op->getParentOfType<DispatchRegionOp>() && !isa<DispatchRegionOp>(op)) all.push_back(op);
      });
      for (Operation* op : llvm::reverse(all))
        if (isOpTriviallyDead(op)) op->erase();
    }
  }

 private:
  llvm::SmallPtrSet<Operation*, 8> fusedAway;  // roots erased by consumer fusion
  // Recompute copies cloned into a region (their mark dropped there) -> the mark: the chain
  // hexir-fuse-small-reductions copied them from.
  llvm::DenseMap<Operation*, int64_t> recomputedCopies;

  // The chain a recompute copy (outside a region, marked, or cloned into one) was copied
  // from, else nullopt.
  std::optional<int64_t> recomputeMark(Operation* op) const {
    if (!op) return std::nullopt;
    if (auto mark = op->getAttrOfType<IntegerAttr>(kRecomputeInConsumerAttr)) return mark.getInt();
    if (auto it = recomputedCopies.find(op); it != recomputedCopies.end()) return it->second;
    return std::nullopt;
  }

  // A producer computed inside its consumer's dispatch, never a dispatch of its own.
  bool joinsConsumer(Operation* op) {
    return (fuseElementwise && isFusableProducer(op)) ||
           (fusePadsIntoDepthwise && isZeroPadOfDepthwiseConvolution(op));
  }

  // Generics marked `hexir.dispatch_group = "KIND.INSTANCE"` (kDispatchGroupAttr) become one
  // region per instance, placed at its last member: the members are cloned in order (their
  // clonable producers with them, the mark dropped), the results used outside the group are
  // yielded, and the region carries KIND. Members must share a block.
  LogicalResult formGroupRegions(func::FuncOp func) {
    llvm::MapVector<StringAttr, SmallVector<Operation*>> groups;
    func.walk([&](linalg::GenericOp g) {
      if (auto name = g->getAttrOfType<StringAttr>(kDispatchGroupAttr)) groups[name].push_back(g);
    });
    for (auto& [name, members] : groups) {
      Operation* last = members.back();
      llvm::SmallPtrSet<Operation*, 8> inGroup(members.begin(), members.end());
      if (llvm::any_of(members, [&](Operation* m) { return m->getBlock() != last->getBlock(); }))
        return last->emitError("dispatch group '") << name.getValue() << "' spans several blocks";
      SmallVector<Value> escaping;
      for (Operation* m : members)
        for (Value r : m->getResults())
          if (llvm::any_of(r.getUsers(), [&](Operation* u) { return !inGroup.contains(u); }))
            escaping.push_back(r);
      OpBuilder b(last);
      auto region = DispatchRegionOp::create(b, last->getLoc(), ValueRange(escaping).getTypes());
      region->setAttr(kDispatchGroupAttr,
                      b.getStringAttr(DispatchGroupKind(name.getValue())));
      Block* body = new Block();
      region.getBody().push_back(body);
      b.setInsertionPointToStart(body);
      IRMapping map;
      for (Operation* m : members) {
        IRMapping local = map;  // outside producers: only the clonable ones come in
        for (Value operand : m->getOperands())
          if (!map.contains(operand) && isClonable(operand.getDefiningOp()))
            local.map(operand, cloneProducers(b, operand, map));
        Operation* clone = b.clone(*m, local);
        clone->removeAttr(kDispatchGroupAttr);
        map.map(m->getResults(), clone->getResults());
      }
      SmallVector<Value> yielded;
      for (Value v : escaping) yielded.push_back(map.lookup(v));
      YieldOp::create(b, region.getLoc(), yielded);
      for (auto [from, to] : llvm::zip(escaping, region.getResults())) from.replaceAllUsesWith(to);
      for (Operation* m : llvm::reverse(members)) m->erase();
    }
    return success();
  }

  // Clones `value`'s producer chain into the region if clonable; returns the value to use.
  Value cloneProducers(OpBuilder& b, Value value, IRMapping& map) {
    Operation* def = value.getDefiningOp();
    if (joinsConsumer(def)) {
      if (Value mapped = map.lookupOrNull(value)) return mapped;
      Operation* clone = cloneInto(b, def, map);
      if (auto mark = clone->getAttrOfType<IntegerAttr>(kRecomputeInConsumerAttr)) {
        recomputedCopies[clone] = mark.getInt();
        clone->removeAttr(kRecomputeInConsumerAttr);
      }
      map.map(value, clone->getResult(0));
      return clone->getResult(0);
    }
    if (fuseElementwise && ReshapeOfRecomputed(def)) {
      if (Value mapped = map.lookupOrNull(value)) return mapped;
      Operation* clone = cloneInto(b, def, map);
      map.map(value, clone->getResult(0));
      return clone->getResult(0);
    }
    if (!isClonable(def)) return value;
    if (isa<tensor::EmptyOp>(def)) {
      // One clone per use, so each becomes its own destination later.
      return b.clone(*def)->getResult(cast<OpResult>(value).getResultNumber());
    }
    if (Value mapped = map.lookupOrNull(value)) return mapped;
    IRMapping local;
    for (Value operand : def->getOperands()) local.map(operand, cloneProducers(b, operand, map));
    Operation* clone = b.clone(*def, local);
    for (auto [from, to] : llvm::zip(def->getResults(), clone->getResults())) map.map(from, to);
    return map.lookup(value);
  }

  void formRegion(Operation* root) {
    OpBuilder b(root);
    auto region = DispatchRegionOp::create(b, root->getLoc(), root->getResultTypes());
    // A device annotation of the root (hexir.device = N) becomes the dispatch's.
    if (Attribute device = root->getAttr(kDeviceAttr)) region->setAttr(kDeviceAttr, device);
    Block* body = new Block();
    region.getBody().push_back(body);
    b.setInsertionPointToStart(body);
    IRMapping map;
    if (auto insert = dyn_cast<tensor::InsertSliceOp>(root); insert && root->hasAttr(kInPlaceAttr)) {
      // An in-place update keeps its destination captured (never a clone of its producer):
      // the outliner ties the result to that capture. Its source's fusable producer chain
      // comes in (a rotary-embedded, rounded K row: one kernel instead of three).
      IRMapping local = map;
      if (fuseElementwise && isFusableProducer(insert.getSource().getDefiningOp()))
        local.map(insert.getSource(), cloneProducers(b, insert.getSource(), map));
      Operation* last = b.clone(*root, local);
      root->replaceAllUsesWith(region.getResults());
      root->erase();
      YieldOp::create(b, region.getLoc(), last->getResults());
      return;
    }
    Operation* last = cloneInto(b, root, map);
    Operation* root0 = last;
    root->replaceAllUsesWith(region.getResults());
    root->erase();

    // Fuse single-user elementwise consumers: the region then yields the consumer. A generic
    // updating its init in place keeps its result (the outliner ties it to the init). A
    // convolution's result may also be read by the consumer's fusable producers (SiLU,
    // x * sigmoid(x): readers = {sigmoid}), which come into the region with it.
    while (fuseElementwise && !root0->hasAttr(kInPlaceAttr) && region->getNumResults() == 1) {
      SmallVector<Operation*> readers;
      auto consumer = dyn_cast_or_null<linalg::GenericOp>(
          region->hasOneUse() ? *region->getUsers().begin()
          : isConvolution(root0)
              ? ConsumerOfReadResult(region.getResult(0), readers)
              : nullptr);
      if (!consumer || !isElementwise(consumer) || consumer->getNumResults() != 1 ||
          consumer->getBlock() != region->getBlock())
        break;
      if (regionReduces(body) && (broadcastsResult(consumer, region.getResult(0)) ||
                                  llvm::any_of(readers, [&](Operation* r) {
                                    return broadcastsResult(cast<linalg::GenericOp>(r),
                                                            region.getResult(0));
                                  })))
        break;
      // A consumer annotated for another device stays a dispatch of its own.
      Attribute consumerDevice = consumer->getAttr(kDeviceAttr);
      if (consumerDevice && region->getAttr(kDeviceAttr) &&
          consumerDevice != region->getAttr(kDeviceAttr))
        break;
      if (unfusedReductionExtent > 0 && longestReduction(root0) >= unfusedReductionExtent) break;
      DominanceInfo dom;
      bool available = true;
      for (Operation* reader : readers) {
        for (Value operand : reader->getOperands())
          if (operand != region.getResult(0) && !availableAt(operand, region, dom))
            available = false;
        if (!capturesAvailableAt(reader, region, dom)) available = false;
      }
      SmallVector<Operation*> siblings;  // reductions computed in the region beside the root
      for (Value operand : consumer->getOperands()) {
        Operation* def = operand.getDefiningOp();
        if (operand == region.getResult(0) || llvm::is_contained(readers, def) ||
            llvm::is_contained(siblings, def) || availableAt(operand, region, dom))
          continue;
        if (isSiblingReduction(def, root0, consumer, region, dom))
          siblings.push_back(def);
        else
          available = false;
      }
      if (!available || !capturesAvailableAt(consumer, region, dom)) break;
      map.map(region.getResult(0), last->getResult(0));
      b.setInsertionPointToEnd(body);
      for (Operation* sibling : siblings) {
        // An input that is a reshape of the root's input like it reads the root's (one x).
        for (Value in : cast<linalg::LinalgOp>(sibling).getDpsInputs())
          if (Value rootIn = rootInputFor(in, cast<linalg::LinalgOp>(root0)); rootIn && rootIn != in)
            map.map(in, rootIn);
        map.map(sibling->getResult(0), cloneInto(b, sibling, map)->getResult(0));
      }
      last = cloneInto(b, consumer, map);
      // Rebuild the region op with the consumer's result types and move the body over.
      OpBuilder outer(region);
      auto fused = DispatchRegionOp::create(outer, region.getLoc(), consumer->getResultTypes());
      if (Attribute device = region->getAttr(kDeviceAttr) ? region->getAttr(kDeviceAttr) : consumerDevice)
        fused->setAttr(kDeviceAttr, device);
      fused.getBody().takeBody(region.getBody());
      consumer->replaceAllUsesWith(fused.getResults());
      fusedAway.insert(consumer);
      consumer->erase();
      for (Operation* reader : readers) reader->erase();  // cloned in with the consumer
      for (Operation* sibling : siblings) {
        fusedAway.insert(sibling);
        sibling->erase();
      }
      region->erase();
      region = fused;
      body = &region.getBody().front();
    }
    b.setInsertionPointToEnd(body);
    YieldOp::create(b, region.getLoc(), last->getResults());
  }

  // The input of `root` that `v` stands for: `v` itself, or a tensor.expand_shape of the same
  // value with the same reassociation (a block matvec's x is its own reshape of the vector);
  // null when none.
  // Two copies of one recomputed chain (hexir-fuse-small-reductions: w1's and w3's copies of
  // the FFN's norm) stand for the same vector.
  Value rootInputFor(Value v, linalg::LinalgOp root) const {
    auto sameSource = [&](Value a, Value b) {
      if (a == b) return true;
      std::optional<int64_t> ma = recomputeMark(a.getDefiningOp()), mb = recomputeMark(b.getDefiningOp());
      return ma && mb && *ma == *mb && a.getType() == b.getType();
    };
    auto same = [&](Value w) {
      if (v == w) return true;
      auto ev = v.getDefiningOp<tensor::ExpandShapeOp>(), ew = w.getDefiningOp<tensor::ExpandShapeOp>();
      return ev && ew && v.getType() == w.getType() && sameSource(ev.getSrc(), ew.getSrc()) &&
             ev.getReassociationIndices() == ew.getReassociationIndices();
    };
    for (Value w : root.getDpsInputs())
      if (same(w)) return w;
    return {};
  }

  // A reduction `op` that `consumer` (an elementwise consumer joining `root`'s region) also
  // reads may be computed in that region (fuse-sibling-reductions): w1 beside w3 + SiLU * mul,
  // two matvecs over the same x whose rows the consumer pairs. Each point of the consumer
  // then needs one point of each, so the kernel is still a warp per row, computing two dots.
  //   %a = matvec(W1, x)   %b = matvec(W3, x)   %c = generic(%a, %b) -> one region {W1, W3, c}
  // Both are plain reductions of the same loops and static extents (no hexir.* mark, or both
  // one-row quantized block matvecs of one format over the same x: q4_0's w1 and w3), the sibling is read only by the consumer
  // and through a permutation, and both read only values computed before the region.
  bool isSiblingReduction(Operation* op, Operation* root, Operation* consumer, Operation* region,
                          DominanceInfo& dom) {
    if (!fuseSiblingReductions || !fuseElementwise || !op) return false;
    auto sibling = dyn_cast<linalg::LinalgOp>(op);
    auto rootOp = dyn_cast<linalg::LinalgOp>(root);
    // (A one-row block matvec reduces over (block, value in block): two loops.)
    const unsigned reductions = op->hasAttr(kBlockMatvecAttr) ? 2 : 1;
    if (!sibling || !rootOp || sibling.getNumReductionLoops() != reductions ||
        rootOp.getNumReductionLoops() != reductions || op->getNumResults() != 1 || !op->hasOneUse() || *op->getUsers().begin() != consumer ||
        op->getBlock() != consumer->getBlock() || fusedAway.contains(op))
      return false;
    // The only mark allowed: both one-row block matvecs of one format (the quantized GEMV
    // kernel computes the two; codegen/CUDAQuantizedGemv.h).
    for (Operation* o : {op, root})
      for (NamedAttribute a : o->getDiscardableAttrs())
        if (a.getName().getValue().starts_with("hexir.") && a.getName().getValue() != kBlockMatvecAttr) return false;
    Attribute format = op->getAttr(kBlockMatvecAttr);
    if (format != root->getAttr(kBlockMatvecAttr) || (format && sibling.getNumLoops() != 3)) return false;
    // Formats whose pairs the quantized GEMV kernel computes (codegen/CUDAQuantizedGemv.h):
    // blocks of at most 64 values (q4_0, q8_0, ...; H200, TinyLlama q4_0 decode 0.862x the time
    // a token merged) and the super-blocks it dots with 8-bit x, q4_k and q5_k (q4_k 0.908x,
    // ids equal; 1.017x when its decode was f32). q6_k's 210-byte blocks keep the generic
    // kernel, which computes one matvec.
    if (format && sibling.getStaticLoopRanges()[2] > 64 &&
        !llvm::is_contained({StringRef("q4_k"), StringRef("q5_k")}, cast<StringAttr>(format).getValue()))
      return false;
    if (sibling.getStaticLoopRanges() != rootOp.getStaticLoopRanges() ||
        sibling.getIteratorTypesArray() != rootOp.getIteratorTypesArray() ||
        ShapedType::isDynamicShape(sibling.getStaticLoopRanges()))
      return false;
    if (broadcastsResult(cast<linalg::GenericOp>(consumer), op->getResult(0))) return false;
    // Both read one same input (the x of w1 and w3): siblings over different inputs are
    // independent branches (a diamond's l @ w3 and t @ w2), which fusing would serialize.
    // (A block matvec's x is its own tensor.expand_shape of the vector: compared through it.)
    if (llvm::none_of(sibling.getDpsInputs(), [&](Value v) { return bool(rootInputFor(v, rootOp)); }))
      return false;
    // Both read only what is computed before the region (or a fill): a recomputed norm chain
    // (hexir-fuse-small-reductions) in front of either would leave the CUDA kernel with whole
    // reductions beside two point reductions, which it does not distribute; except block
    // matvecs reading copies of one chain (the quantized GEMV stages the norm once for both).
    for (Operation& o : region->getRegion(0).front())
      if (isa<linalg::LinalgOp>(o) && &o != root && !isa<linalg::FillOp>(o) &&
          !(format && recomputedCopies.count(&o)))
        return false;
    // (An operand read as the root's input is remapped to it in the clone.)
    for (Value operand : op->getOperands())
      if (!dom.properlyDominates(operand, region) && !isClonable(operand.getDefiningOp()) &&
          !rootInputFor(operand, rootOp))
        return false;
    return capturesAvailableAt(op, region, dom);
  }

  // The one elementwise consumer of `result` when its other readers are fusable producers
  // read only by that consumer (cloned into its region with it): SiLU's sigmoid beside the
  // multiply, x * sigmoid(x). Null otherwise; `readers` gets those producers.
  Operation* ConsumerOfReadResult(Value result, SmallVector<Operation*>& readers) {
    Operation* consumer = nullptr;
    for (Operation* user : result.getUsers()) {
      if (user->hasOneUse() && isElementwiseGeneric(user) && isFusableProducer(user)) {
        if (!llvm::is_contained(readers, user)) readers.push_back(user);
        continue;
      }
      if (consumer && consumer != user) return nullptr;
      consumer = user;
    }
    if (!consumer || readers.empty()) return nullptr;
    for (Operation* reader : readers)
      if (*reader->getUsers().begin() != consumer) return nullptr;
    return consumer;
  }

  // A region computing a reduction must not take a consumer that reads its result more than
  // once per element (a broadcast, e.g. RMSNorm's sum of squares scaling every element, or a
  // softmax row maximum): kernels are tiled over the consumer's points, so every point would
  // recompute the whole reduction (O(n^2) work, measured 10-25 us per such kernel on the H200
  // where the two kernels take ~2 us each).
  static bool regionReduces(Block* body) {
    for (Operation& op : *body)
      if (auto l = dyn_cast<linalg::LinalgOp>(op); l && l.getNumReductionLoops() > 0) return true;
    return false;
  }
  // The largest static reduced extent of `op` (a dynamic one counts as unbounded).
  static int64_t longestReduction(Operation* op) {
    auto l = dyn_cast<linalg::LinalgOp>(op);
    if (!l) return 0;
    int64_t longest = 0;
    SmallVector<utils::IteratorType> iterators = l.getIteratorTypesArray();
    SmallVector<int64_t> ranges = l.getStaticLoopRanges();
    for (auto [it, n] : llvm::zip(iterators, ranges))
      if (it == utils::IteratorType::reduction)
        longest = std::max(longest, ShapedType::isDynamic(n) ? INT64_MAX : n);
    return longest;
  }
  static bool broadcastsResult(linalg::GenericOp consumer, Value result) {
    for (OpOperand& use : consumer->getOpOperands())
      if (use.get() == result && !consumer.getMatchingIndexingMap(&use).isPermutation()) return true;
    return false;
  }

  // True when `value` can be used inside a region placed at `region`: it is defined before
  // it, or its producer is cloned into the region (cloneProducers) and everything that
  // producer needs is available in turn. Values defined after the region (e.g. a host scalar
  // read after the root) make the consumer unfusable.
  bool availableAt(Value value, Operation* region, DominanceInfo& dom) {
    if (dom.properlyDominates(value, region)) return true;
    Operation* def = value.getDefiningOp();
    if (isScalarConstant(def)) return true;  // hoisted by capturesAvailableAt's caller rule
    bool clonable = isClonable(def) || joinsConsumer(def);
    if (!clonable) return false;
    for (Value operand : def->getOperands())
      if (!availableAt(operand, region, dom)) return false;
    return capturesAvailableAt(def, region, dom);
  }

  // Values an op's body uses from above (cloning keeps referring to them): each must dominate
  // `region`; a scalar constant defined later is moved before it (constants are pure).
  bool capturesAvailableAt(Operation* op, Operation* region, DominanceInfo& dom) {
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(op->getRegions(), captured);
    SmallVector<Operation*> constantsToHoist;
    for (Value v : captured) {
      if (dom.properlyDominates(v, region)) continue;
      Operation* def = v.getDefiningOp();
      if (!isScalarConstant(def)) return false;
      constantsToHoist.push_back(def);
    }
    for (Operation* c : constantsToHoist) c->moveBefore(region);
    return true;
  }

  Operation* cloneInto(OpBuilder& b, Operation* op, IRMapping& map) {
    IRMapping local = map;
    for (Value operand : op->getOperands())
      if (!map.contains(operand)) local.map(operand, cloneProducers(b, operand, map));
    return b.clone(*op, local);
  }
};

}  // namespace
}  // namespace hexir
