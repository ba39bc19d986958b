// hexir-fuse-small-reductions: a small static reduction and the elementwise op reading it
// (RMSNorm: sum of squares, then the scaling) are copied once per contraction that reads the
// elementwise result, each copy marked for recomputation inside that contraction's dispatch
// (kRecomputeInConsumerAttr in dialects/hexir/IR/HexirAttributes.h). Rule and cost model: README.md beside this file.
#include <optional>
#include <string>

#include "dialects/hexir/IR/HexirAttributes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"
#include "passes/dispatch/fusion/FusionPasses.h"

namespace hexir {
#define GEN_PASS_DEF_FUSESMALLREDUCTIONS
#include "passes/dispatch/fusion/FusionPasses.h.inc"

namespace {
using namespace mlir;

// Recomputing a chain for one point of a consumer costs at most this many times the
// consumer's own reduction at that point (RMSNorm of D before a projection row: D + D
// against the row's D multiply-adds).
constexpr int64_t kMaxRecomputeRatio = 2;
// Extents past this are never "small" (keeps the products below in range).
constexpr int64_t kLargeExtent = int64_t{1} << 20;

// The product of `op`'s loop extents (all loops, or only the reduction loops), or nullopt
// when one of them is dynamic or large.
std::optional<int64_t> StaticWork(linalg::LinalgOp op, bool reductionsOnly) {
  int64_t work = 1;
  for (auto [n, it] : llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray())) {
    if (reductionsOnly && it != utils::IteratorType::reduction) continue;
    if (ShapedType::isDynamic(n) || n > kLargeExtent) return std::nullopt;
    work *= n;
    if (work > kLargeExtent) return std::nullopt;
  }
  return work;
}

// A `hexir.*` statement on an op (placement, a dispatch group, an in-place update) keeps it as
// it is; a consumer's block-matvec mark only selects its kernel.
bool HasHexirMark(Operation* op, bool exceptBlockMatvec) {
  for (NamedAttribute a : op->getDiscardableAttrDictionary()) {
    StringRef name = a.getName().getValue();
    if (name.starts_with("hexir.") && !(exceptBlockMatvec && name == kBlockMatvecAttr)) return true;
  }
  return false;
}

// The elementwise op, the small reductions among its operands (block order) and the work of
// computing all of them once.
struct Chain {
  linalg::GenericOp scaling;
  SmallVector<linalg::GenericOp> reductions;
  int64_t work = 0;
  SmallVector<OpOperand*> uses;  // the consumers' operands that get a copy
};

class FuseSmallReductions : public impl::FuseSmallReductionsBase<FuseSmallReductions> {
 public:
  using FuseSmallReductionsBase::FuseSmallReductionsBase;

  void runOnOperation() override {
    if (maxExtent <= 0) return;
    SmallVector<Chain> chains;
    getOperation().walk([&](linalg::GenericOp g) {
      if (std::optional<Chain> chain = matchChain(g)) chains.push_back(std::move(*chain));
    });
    for (auto [id, chain] : llvm::enumerate(chains)) recompute(chain, id);
  }

 private:
  // A generic with reduction loops, one result, static and at most maxExtent iterations.
  std::optional<int64_t> smallReductionWork(linalg::GenericOp r) const {
    if (r.getNumReductionLoops() == 0 || r->getNumResults() != 1 || HasHexirMark(r, false))
      return std::nullopt;
    std::optional<int64_t> work = StaticWork(r, /*reductionsOnly=*/false);
    if (!work || *work > maxExtent) return std::nullopt;
    return work;
  }

  // `g` is elementwise over at most maxExtent static points, reads at least one small
  // reduction of its block, and every use of its result is an input of a contraction of its
  // block whose reduction per point is worth the recomputation.
  std::optional<Chain> matchChain(linalg::GenericOp g) const {
    if (g->getNumResults() != 1 || !linalg::isElementwise(g) || HasHexirMark(g, false) ||
        !g.getMatchingIndexingMap(g.getDpsInitOperand(0)).isIdentity())
      return std::nullopt;
    std::optional<int64_t> work = StaticWork(g, /*reductionsOnly=*/false);
    if (!work || *work > maxExtent) return std::nullopt;
    Chain chain{g, {}, *work};
    for (OpOperand* in : g.getDpsInputOperands()) {
      auto r = in->get().getDefiningOp<linalg::GenericOp>();
      if (!r || r->getBlock() != g->getBlock() || llvm::is_contained(chain.reductions, r)) continue;
      if (std::optional<int64_t> w = smallReductionWork(r)) {
        chain.reductions.push_back(r);
        chain.work += *w;
      }
    }
    if (chain.reductions.empty() || g->use_empty()) return std::nullopt;
    llvm::sort(chain.reductions, [](linalg::GenericOp a, linalg::GenericOp b) {
      return a->isBeforeInBlock(b);
    });
    for (OpOperand& use : g->getUses())
      if (!worthRecomputingFor(use, chain)) return std::nullopt;
    for (OpOperand& use : g->getUses()) {
      std::string why;
      if (!cudaKernels || cudaDistributes(use, chain, why))
        chain.uses.push_back(&use);
      else
        use.getOwner()->emitRemark("small norm not recomputed in this contraction for CUDA: ") << why;
    }
    if (chain.uses.empty()) return std::nullopt;
    return chain;
  }

  // CUDA (cuda-kernels): the fused kernel's points get threads only when the chain's
  // reductions are whole (rank 0: computed ahead of the point loops, recomputed per point,
  // passes/codegen/CUDAWholeReductions.h) and the consumer is one reduction per point.
  static bool cudaDistributes(OpOperand& use, const Chain& chain, std::string& why) {
    for (linalg::GenericOp r : chain.reductions)
      if (cast<ShapedType>(r->getResult(0).getType()).getRank() != 0) {
        why = "the reduction keeps dimensions (CUDA recomputes only a whole, rank-0 reduction per point)";
        return false;
      }
    auto consumer = cast<linalg::LinalgOp>(use.getOwner());
    if (consumer.getNumReductionLoops() != 1 || consumer.getNumDpsInits() != 1) {
      why = "the contraction has " + std::to_string(consumer.getNumReductionLoops()) +
            " reduction loops into " + std::to_string(consumer.getNumDpsInits()) +
            " result(s) (CUDA distributes one reduction loop into one result)";
      return false;
    }
    if (consumer->hasAttr(kBlockMatvecAttr)) {
      why = "a block-format matvec takes the quantized GEMV kernel, which reads x from memory";
      return false;
    }
    return true;
  }

  static bool worthRecomputingFor(OpOperand& use, const Chain& chain) {
    auto consumer = dyn_cast<linalg::LinalgOp>(use.getOwner());
    if (!consumer || consumer->getBlock() != chain.scaling->getBlock() || !consumer.isDpsInput(&use) ||
        consumer.getNumReductionLoops() == 0 || HasHexirMark(consumer, /*exceptBlockMatvec=*/true))
      return false;
    std::optional<int64_t> perPoint = StaticWork(consumer, /*reductionsOnly=*/true);
    return perPoint && chain.work <= kMaxRecomputeRatio * *perPoint;
  }

  // One copy of the chain per admitted use, placed where the scaling was and marked with the
  // chain's number; the originals go when no use is left.
  static void recompute(Chain& chain, int64_t id) {
    OpBuilder b(chain.scaling);
    IntegerAttr mark = b.getI64IntegerAttr(id);
    for (OpOperand* use : chain.uses) {
      IRMapping map;
      for (linalg::GenericOp r : chain.reductions) {
        Operation* copy = b.clone(*r, map);
        copy->setAttr(kRecomputeInConsumerAttr, mark);
        map.map(r->getResults(), copy->getResults());
      }
      Operation* copy = b.clone(*chain.scaling, map);
      copy->setAttr(kRecomputeInConsumerAttr, mark);
      use->set(copy->getResult(0));
    }
    if (!chain.scaling->use_empty()) return;
    chain.scaling->erase();
    for (linalg::GenericOp r : llvm::reverse(chain.reductions))
      if (r->use_empty()) r->erase();
  }
};

}  // namespace
}  // namespace hexir
