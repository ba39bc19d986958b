// hexir-fuse-small-reductions: a small static reduction and the elementwise op reading it
// (RMSNorm: sum of squares, then the scaling) are copied once per contraction that reads the
// elementwise result, each copy marked for recomputation inside that contraction's dispatch
// (kRecomputeInConsumerAttr in dialects/hexir/IR/HexirAttributes.h). Rule and cost model: README.md beside this file.
#include <optional>
#include <string>

#include "llvm/ADT/SetVector.h"

#include "dialects/hexir/IR/HexirAttributes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "passes/codegen/CUDAQuantizedGemv.h"
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
  int64_t largest = 0;  // the largest of the scaling's points and each reduction's iterations
  // A consumer's operand that gets a copy, and the static tensor.expand_shape of the scaling
  // it reads through (null: it reads the scaling itself): a block matvec's x, [blocks][B].
  struct Use {
    OpOperand* operand;
    tensor::ExpandShapeOp reshape;
  };
  SmallVector<Use> uses;
};

// A block-format matvec (the llama importer's GGUF decode matvec, kBlockMatvecAttr).
bool IsBlockMatvec(Operation* op) { return op->hasAttr(kBlockMatvecAttr); }

// The bytes of one block of block matvec `op` whose rows hold `blocks` blocks: its body reads
// the weight, i8 [N][row bytes], by tensor.extract; nullopt when the reads disagree.
std::optional<int64_t> BlockMatvecBlockBytes(linalg::LinalgOp op, int64_t blocks) {
  std::optional<int64_t> rowBytes;
  bool agree = true;
  op->walk([&](tensor::ExtractOp read) {
    auto t = read.getTensor().getType();
    if (t.getRank() != 2 || !t.getElementType().isInteger(8) || t.isDynamicDim(1) ||
        (rowBytes && *rowBytes != t.getDimSize(1)))
      agree = false;
    else
      rowBytes = t.getDimSize(1);
  });
  if (!agree || !rowBytes || blocks <= 0 || *rowBytes % blocks) return std::nullopt;
  return *rowBytes / blocks;
}

class FuseSmallReductions : public impl::FuseSmallReductionsBase<FuseSmallReductions> {
 public:
  using FuseSmallReductionsBase::FuseSmallReductionsBase;

  void runOnOperation() override {
    if (maxExtent <= 0) return;
    limit = blockMatvecChains() ? std::max<int64_t>(maxExtent, maxBlockMatvecExtent) : int64_t(maxExtent);
    SmallVector<Chain> chains;
    getOperation().walk([&](linalg::GenericOp g) {
      if (std::optional<Chain> chain = matchChain(g)) chains.push_back(std::move(*chain));
    });
    for (auto [id, chain] : llvm::enumerate(chains)) recompute(chain, id);
  }

 private:
  // A generic with reduction loops, one result, static and at most `limit` iterations.
  std::optional<int64_t> smallReductionWork(linalg::GenericOp r) const {
    if (r.getNumReductionLoops() == 0 || r->getNumResults() != 1 || HasHexirMark(r, false))
      return std::nullopt;
    std::optional<int64_t> work = StaticWork(r, /*reductionsOnly=*/false);
    if (!work || *work > limit) return std::nullopt;
    return work;
  }

  // The most points or iterations a chain may have for `consumer`: max-block-matvec-extent
  // for a block-format matvec (its kernel stages x once per block of threads), else
  // max-extent.
  int64_t extentFor(Operation* consumer) const {
    return IsBlockMatvec(consumer) && blockMatvecChains() ? limit : int64_t(maxExtent);
  }

  // `g` is elementwise over at most `limit` static points, reads at least one small
  // reduction of its block, and every use of its result is an input of a contraction of its
  // block whose reduction per point is worth the recomputation (or a static
  // tensor.expand_shape read only by block matvecs: their x); the uses whose consumers allow
  // the chain's size (extentFor) get copies.
  std::optional<Chain> matchChain(linalg::GenericOp g) const {
    if (g->getNumResults() != 1 || !linalg::isElementwise(g) || HasHexirMark(g, false) ||
        !g.getMatchingIndexingMap(g.getDpsInitOperand(0)).isIdentity())
      return std::nullopt;
    std::optional<int64_t> work = StaticWork(g, /*reductionsOnly=*/false);
    if (!work || *work > limit) return std::nullopt;
    Chain chain{g, {}, *work, *work};
    for (OpOperand* in : g.getDpsInputOperands()) {
      auto r = in->get().getDefiningOp<linalg::GenericOp>();
      if (!r || r->getBlock() != g->getBlock() || llvm::is_contained(chain.reductions, r)) continue;
      if (std::optional<int64_t> w = smallReductionWork(r)) {
        chain.reductions.push_back(r);
        chain.work += *w;
        chain.largest = std::max(chain.largest, *w);
      }
    }
    if (chain.reductions.empty() || g->use_empty()) return std::nullopt;
    llvm::sort(chain.reductions, [](linalg::GenericOp a, linalg::GenericOp b) {
      return a->isBeforeInBlock(b);
    });
    SmallVector<Chain::Use> uses;
    for (OpOperand& use : g->getUses()) {
      auto reshape = blockMatvecChains() ? dyn_cast<tensor::ExpandShapeOp>(use.getOwner()) : tensor::ExpandShapeOp();
      if (!reshape) {
        uses.push_back({&use, {}});
        continue;
      }
      if (reshape->getBlock() != g->getBlock() || !reshape.getResultType().hasStaticShape() || reshape->use_empty())
        return std::nullopt;
      for (OpOperand& read : reshape->getUses()) {
        if (!IsBlockMatvec(read.getOwner())) return std::nullopt;
        uses.push_back({&read, reshape});
      }
    }
    for (Chain::Use& use : uses)
      if (!worthRecomputingFor(*use.operand, chain)) return std::nullopt;
    for (Chain::Use& use : uses) {
      std::string why;
      if (chain.largest > extentFor(use.operand->getOwner())) continue;
      if (!cudaKernels || cudaDistributes(*use.operand, chain, blockMatvecChains(), why))
        chain.uses.push_back(use);
      else
        use.operand->getOwner()->emitRemark("small norm not recomputed in this contraction for CUDA: ") << why;
    }
    if (chain.uses.empty()) return std::nullopt;
    return chain;
  }

  // CUDA (cuda-kernels): the fused kernel's points get threads only when the chain's
  // reductions are whole (rank 0: computed ahead of the point loops, recomputed per point,
  // passes/codegen/CUDAWholeReductions.h) and the consumer is one reduction per point.
  static bool cudaDistributes(OpOperand& use, const Chain& chain, bool blockMatvecs, std::string& why) {
    for (linalg::GenericOp r : chain.reductions)
      if (cast<ShapedType>(r->getResult(0).getType()).getRank() != 0) {
        why = "the reduction keeps dimensions (CUDA recomputes only a whole, rank-0 reduction per point)";
        return false;
      }
    auto consumer = cast<linalg::LinalgOp>(use.getOwner());
    // The quantized GEMV stages x once per block, the norm's sums first
    // (passes/codegen/CUDAQuantizedGemv.h).
    if (IsBlockMatvec(consumer) && blockMatvecs) {
      auto x = cast<ShapedType>(use.get().getType());
      if (consumer.getNumDpsInits() != 1 || consumer.getNumLoops() != 3 || x.getRank() != 2 ||
          cast<ShapedType>(chain.scaling->getResult(0).getType()).getRank() != 1) {
        why = "a block-format matvec recomputes a norm of one vector, one row at a time";
        return false;
      }
      std::optional<int64_t> bytes = BlockMatvecBlockBytes(consumer, x.getDimSize(0));
      if (!bytes || !cuda::QuantizedGemvTakes(x.getDimSize(0), x.getDimSize(1), *bytes)) {
        why = "the quantized GEMV does not take this block format (it would run on one thread)";
        return false;
      }
      return true;
    }
    if (consumer.getNumReductionLoops() != 1 || consumer.getNumDpsInits() != 1) {
      why = "the contraction has " + std::to_string(consumer.getNumReductionLoops()) +
            " reduction loops into " + std::to_string(consumer.getNumDpsInits()) +
            " result(s) (CUDA distributes one reduction loop into one result)";
      return false;
    }
    if (IsBlockMatvec(consumer)) {
      why = "a block-format matvec takes the quantized GEMV kernel, which recomputes a norm only with "
            "max-block-matvec-extent";
      return false;
    }
    return true;
  }

  int64_t limit = 0;  // max-extent, or max-block-matvec-extent where larger (blockMatvecChains)
  // CUDA's quantized GEMV recomputes chains (max-block-matvec-extent with cuda-kernels).
  bool blockMatvecChains() const { return cudaKernels && maxBlockMatvecExtent > 0; }

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
  // (A use through a reshape gets a copy of the reshape too, unmarked: it reshapes the copy.)
  static void recompute(Chain& chain, int64_t id) {
    OpBuilder b(chain.scaling);
    IntegerAttr mark = b.getI64IntegerAttr(id);
    for (Chain::Use& use : chain.uses) {
      IRMapping map;
      for (linalg::GenericOp r : chain.reductions) {
        Operation* copy = b.clone(*r, map);
        copy->setAttr(kRecomputeInConsumerAttr, mark);
        map.map(r->getResults(), copy->getResults());
      }
      Operation* copy = b.clone(*chain.scaling, map);
      copy->setAttr(kRecomputeInConsumerAttr, mark);
      Value value = copy->getResult(0);
      if (use.reshape) {
        map.map(chain.scaling->getResult(0), value);
        value = b.clone(*use.reshape, map)->getResult(0);
      }
      use.operand->set(value);
    }
    llvm::SetVector<Operation*> reshapes;
    for (Chain::Use& use : chain.uses)
      if (use.reshape) reshapes.insert(use.reshape);
    for (Operation* reshape : reshapes)
      if (reshape->use_empty()) reshape->erase();
    if (!chain.scaling->use_empty()) return;
    chain.scaling->erase();
    for (linalg::GenericOp r : llvm::reverse(chain.reductions))
      if (r->use_empty()) r->erase();
  }
};

}  // namespace
}  // namespace hexir
