// hexir-cast-matmul-activations: a matmul of f32 activations by f16 or bf16 weights with
// more than a few rows (a prompt's prefill: M = prompt length) gets its activations rounded
// to the weights' type first, as their own value, so the contraction has two f16 (bf16)
// operands read from memory: the CUDA tensor-core kernel's case (passes/codegen/CUDAMatmul.h).
// Without it such a matmul has no tensor-core kernel and runs as a warp per output element,
// each reading its whole row of A and of B (H200, TinyLlama-shaped f16 llama, 512-token
// prefill: 226 ms against PyTorch's 20-31; bench/README.md "Prompt prefill on the H200").
//
//   %c = linalg.generic ins(%a, %w : tensor<?x2048xf32>, tensor<2048x2048xf16>) ...  {extf(w) * a + c}
// becomes
//   %a16 = linalg.generic {hexir.operand_cast} ins(%a) outs(tensor<?x2048xf16>) {truncf}
//   %c   = linalg.generic ins(%a16, %w : tensor<?x2048xf16>, tensor<2048x2048xf16>) ... {extf(a) * extf(w) + c}
//
// The products then use A rounded to 11 significant bits (bf16: 8), accumulated in f32:
// llama.cpp's and PyTorch's f16 prefill numerics. One cast per activation value, shared by
// every matmul that reads it (q, k and v after one norm). The mark keeps
// hexir-form-dispatch-regions from recomputing the cast inside a consumer's kernel (the
// tensor-core kernel reads its operands from memory); it may join its producer's dispatch
// as an elementwise consumer.
//
// Rule: a linalg contraction (named matmul / batch_matmul, or a generic with a contraction
// body) with two inputs and one f32 init filled by linalg.fill; indexing maps A = [b][m][k],
// B = [b][k][n] or [b][n][k], C = [b][m][n] (at most one batch loop); A f32, B f16 or bf16;
// N, K and the batch static and N, K >= 16; M dynamic or above 16 (M <= 16 stays f32 on the
// GEMV kernels). Named ops are generalized first.
#include "dialects/hexir/IR/HexirAttributes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "passes/Passes.h"
#include "passes/codegen/MatmulLayout.h"

namespace hexir {
#define GEN_PASS_DEF_CASTMATMULACTIVATIONS
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

// Whether `op` is a contraction of the rule above (its layout: codegen/MatmulLayout.h, the
// tensor-core kernel's).
bool IsMixedMatmul(linalg::LinalgOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 || op->getNumResults() != 1 ||
      !linalg::isaContractionOpInterface(op))
    return false;
  Type ea = getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType());
  Type eb = getElementTypeOrSelf(op.getDpsInputOperand(1)->get().getType());
  Value init = op.getDpsInitOperand(0)->get();
  if (!ea.isF32() || !(eb.isF16() || eb.isBF16()) || !getElementTypeOrSelf(init.getType()).isF32() ||
      !init.getDefiningOp<linalg::FillOp>())
    return false;
  std::string why;
  std::optional<codegen::MatmulLayout> layout = codegen::MatchMatmulLayout(op, why);
  if (!layout) return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  for (unsigned d : {layout->n, layout->k})
    if (ShapedType::isDynamic(ranges[d]) || ranges[d] < 16) return false;
  if (layout->batch && ShapedType::isDynamic(ranges[*layout->batch])) return false;
  return ShapedType::isDynamic(ranges[layout->m]) || ranges[layout->m] > codegen::kMaxGemvRows;
}

class CastMatmulActivations : public impl::CastMatmulActivationsBase<CastMatmulActivations> {
 public:
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> matmuls;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (!op->getParentOfType<linalg::LinalgOp>() && IsMixedMatmul(op)) matmuls.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    DenseMap<std::pair<Value, Type>, Value> casts;  // (activation, narrow type) -> its cast
    for (linalg::LinalgOp op : matmuls) {
      linalg::GenericOp g = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (!g) {
        rewriter.setInsertionPoint(op);
        FailureOr<linalg::GenericOp> generic = linalg::generalizeNamedOp(rewriter, op);
        if (failed(generic)) continue;
        g = *generic;
      }
      OpOperand* a = g.getDpsInputOperand(0);
      Type narrow = getElementTypeOrSelf(g.getDpsInputOperand(1)->get().getType());
      Value& cast = casts[{a->get(), narrow}];
      if (!cast) cast = castOf(rewriter, a->get(), narrow);
      // The body reads A's element widened back to f32 where it read the f32 element.
      BlockArgument element = g.getMatchingBlockArgument(a);
      a->set(cast);
      element.setType(narrow);
      rewriter.setInsertionPointToStart(g.getBody());
      Value wide = arith::ExtFOp::create(rewriter, g.getLoc(), rewriter.getF32Type(), element);
      rewriter.replaceAllUsesExcept(element, wide, wide.getDefiningOp());
    }
  }

 private:
  // `value` (an f32 tensor) rounded to `narrow`, right after its definition, marked.
  static Value castOf(IRRewriter& rewriter, Value value, Type narrow) {
    if (Operation* def = value.getDefiningOp())
      rewriter.setInsertionPointAfter(def);
    else
      rewriter.setInsertionPointToStart(cast<BlockArgument>(value).getOwner());
    Location loc = value.getLoc();
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, value);
    Value empty = tensor::EmptyOp::create(rewriter, loc, sizes, narrow);
    AffineMap identity = rewriter.getMultiDimIdentityMap(type.getRank());
    auto g = linalg::GenericOp::create(
        rewriter, loc, empty.getType(), ValueRange{value}, ValueRange{empty},
        ArrayRef<AffineMap>{identity, identity},
        SmallVector<utils::IteratorType>(type.getRank(), utils::IteratorType::parallel),
        [&](OpBuilder& b, Location l, ValueRange args) {
          linalg::YieldOp::create(b, l, ValueRange{arith::TruncFOp::create(b, l, narrow, args[0])});
        });
    g->setAttr(kOperandCastAttr, rewriter.getUnitAttr());
    return g->getResult(0);
  }
};

}  // namespace
}  // namespace hexir
