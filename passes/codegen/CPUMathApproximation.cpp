#include "passes/codegen/CPUMathApproximation.h"

#include <cmath>

#include "passes/codegen/CPUExpApproximation.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hexir::codegen {
using namespace mlir;

namespace {

// log(x) = log(x * 2^23) - 23 ln 2 for f32 x below FLT_MIN (denormals, also zero and
// negatives, whose results stay -inf and NaN); `scale` is 23 ln 2 for log, 23 for log2.
template <typename LogOp>
void ScaleDenormalArguments(func::FuncOp kernel, double scale) {
  SmallVector<LogOp> logs;
  kernel.walk([&](LogOp op) {
    if (op.getType().isF32()) logs.push_back(op);
  });
  for (LogOp op : logs) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value x = op.getOperand();
    auto f32 = [&](double v) {
      return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(static_cast<float>(v)));
    };
    Value small = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x,
                                        f32(1.1754943508222875e-38));
    Value scaled = arith::MulFOp::create(b, loc, x, f32(8388608.0));
    Value argument = arith::SelectOp::create(b, loc, small, scaled, x);
    Value log = LogOp::create(b, loc, argument);
    Value offset = arith::SelectOp::create(b, loc, small, f32(scale), f32(0.0));
    op.replaceAllUsesWith(arith::SubFOp::create(b, loc, log, offset).getResult());
    op.erase();
  }
}

}  // namespace

LogicalResult ApproximateMath(func::FuncOp kernel) {
  ScaleDenormalArguments<math::LogOp>(kernel, 23.0 * std::log(2.0));
  ScaleDenormalArguments<math::Log2Op>(kernel, 23.0);
  RewritePatternSet patterns(kernel.getContext());
  auto approximated = [](StringRef name) {
    name.consume_front("math.");
    return llvm::is_contained({"exp", "expm1", "log", "log1p", "log2", "erf", "tanh"}, name);
  };
  populateMathF32ExpansionPatterns(patterns, approximated);
  // f32 exp is ours (codegen/CPUExpApproximation.h), also where expm1's expansion makes one.
  PopulateExpApproximation(patterns);
  populateMathPolynomialApproximationPatterns(
      patterns, [&](StringRef name) { return name != "math.exp" && approximated(name); });
  return applyPatternsGreedily(kernel, std::move(patterns));
}

}  // namespace hexir::codegen
