// Cheaper arithmetic in a row chain's kernel (CPURowChains.h), where a row statistic (a max, a
// sum) is computed once per row and then read by every element of the row. Both rewrites keep
// the results the chain's users see; LLVM's loop vectorizer then emits:
//
// - Divide by the row's statistic -> one reciprocal per row times a multiply per element.
//   `y = x / s` with s invariant along the innermost loop (a block argument read through a map
//   without that loop, or a value defined outside the body) and x not, becomes
//   `y = x * (1 / s)`; the reciprocal is hoisted out of the row loop by LLVM (noalias
//   bindings), so the row's loop multiplies (a vector divide costs 5-10 multiplies). Rounding:
//   within 2 ulp of the correctly rounded quotient whenever 1 / s is a normal float (|s| in
//   [2^-126, 2^126]: a softmax's sum is >= 1, a norm's root mean square >= sqrt(eps)); +-0,
//   +-inf and NaN divisors give the quotient's result (x * inf, x * 0, NaN).
//
//   before: ^bb0(%e: f32, %s: f32, %o: f32):  %y = arith.divf %e, %s
//   after:  ^bb0(%e: f32, %s: f32, %o: f32):  %r = arith.divf 1.0, %s   %y = arith.mulf %e, %r
//
// - A max reduction read only as the shift of an exponential: `m = max_j x[j]` (maximumf, which
//   propagates NaN and orders -0 < +0) whose every reader uses m only as `exp(v - m)` is marked
//   `nsz`: exp(v - (+0)) and exp(v - (-0)) are equal for every v (both 1 for v = +-0), so the
//   zero's sign cannot reach a result, and x86 drops its sign fix-up (vmaxps with a NaN
//   select instead of six instructions a vector). NaN still propagates: a row holding a NaN
//   has a NaN max, and ONNX Softmax gives that row NaN everywhere; a row holding +inf gives
//   NaN everywhere too (inf - inf), as ONNX's reference definition (numpy) does.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"

namespace hexir::codegen {

// The two rewrites above, as patterns on linalg.generic (tensor or buffer semantics).
void PopulateRowChainArithmeticPatterns(mlir::RewritePatternSet& patterns);

// Applies them to `kernel` (a kernel of kRowChainGroup, after TileRowChains).
mlir::LogicalResult CheapenRowChainArithmetic(mlir::func::FuncOp kernel);

}  // namespace hexir::codegen
