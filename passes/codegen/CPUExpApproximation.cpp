#include "passes/codegen/CPUExpApproximation.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

namespace hexir::codegen {
using namespace mlir;

namespace {

// Coefficients c1..c5 of 1 + c1 r + ... + c5 r^5, the minimax fit (relative error, Lawson's
// iteration) of e^r over [-1e-4, 0.6933], rounded to f32.
constexpr float kC1 = 1.000005960e+00f, kC2 = 4.998707175e-01f, kC3 = 1.675555259e-01f,
                kC4 = 3.906139731e-02f, kC5 = 1.167021971e-02f;
constexpr float kLog2E = 1.44269504088896341f;
constexpr float kLn2High = 0.693145751953125f;  // 12 significant bits: n * kLn2High is exact
constexpr float kLn2Low = 1.428606820309417232e-6f;
constexpr float kRoundingShift = 12582912.0f;  // 1.5 * 2^23

struct ExpApproximation : OpRewritePattern<math::ExpOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::ExpOp op, PatternRewriter& rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32())
      return rewriter.notifyMatchFailure(op, "only f32 (f16 is widened before)");
    Location loc = op.getLoc();
    auto vector = dyn_cast<VectorType>(type);
    Type i32 = vector ? Type(vector.clone(rewriter.getI32Type())) : rewriter.getI32Type();
    auto f32 = [&](float v) -> Value {
      TypedAttr attr = rewriter.getF32FloatAttr(v);
      if (vector) attr = SplatElementsAttr::get(vector, attr);
      return arith::ConstantOp::create(rewriter, loc, attr);
    };
    auto int32 = [&](int32_t v) -> Value {
      TypedAttr attr = rewriter.getI32IntegerAttr(v);
      if (vector) attr = SplatElementsAttr::get(cast<ShapedType>(i32), attr);
      return arith::ConstantOp::create(rewriter, loc, attr);
    };
    auto fma = [&](Value a, Value b, Value c) -> Value {
      return math::FmaOp::create(rewriter, loc, a, b, c);
    };
    // select(x pred bound, x, bound): unordered predicates keep NaN (x86: one vmaxps/vminps).
    auto clamp = [&](arith::CmpFPredicate predicate, Value x, float bound) -> Value {
      Value b = f32(bound);
      Value keep = arith::CmpFOp::create(rewriter, loc, predicate, x, b);
      return arith::SelectOp::create(rewriter, loc, keep, x, b);
    };

    Value x = clamp(arith::CmpFPredicate::UGE, op.getOperand(), -88.0f);
    x = clamp(arith::CmpFPredicate::ULE, x, 89.0f);
    Value shift = f32(kRoundingShift);
    Value t = arith::AddFOp::create(rewriter, loc, fma(x, f32(kLog2E), f32(-0.5f)), shift);
    Value n = arith::SubFOp::create(rewriter, loc, t, shift);
    Value r = fma(n, f32(-kLn2High), x);
    r = fma(n, f32(-kLn2Low), r);
    // Horner: 1 + r (c1 + r (c2 + r (c3 + r (c4 + r c5)))).
    Value p = fma(f32(kC5), r, f32(kC4));
    p = fma(p, r, f32(kC3));
    p = fma(p, r, f32(kC2));
    p = fma(p, r, f32(kC1));
    p = fma(p, r, f32(1.0f));
    // 2^n from t's bits: t = 1.5 * 2^23 + n, whose bits shifted by 23 leave n << 23.
    Value bits = arith::BitcastOp::create(rewriter, loc, i32, t);
    bits = arith::ShLIOp::create(rewriter, loc, bits, int32(23));
    bits = arith::AddIOp::create(rewriter, loc, bits, int32(127 << 23));
    Value scale = arith::BitcastOp::create(rewriter, loc, type, bits);
    rewriter.replaceOpWithNewOp<arith::MulFOp>(op, p, scale);
    return success();
  }
};

}  // namespace

void PopulateExpApproximation(RewritePatternSet& patterns) {
  patterns.add<ExpApproximation>(patterns.getContext(), /*benefit=*/2);
}

}  // namespace hexir::codegen
