// f32 exp in CPU kernels as 15 vector-friendly operations (MLIR's approximation takes 20:
// a floor, a float-to-int conversion, two clamps of n and a degree-7 polynomial), part of
// codegen::ApproximateMath. A softmax's exp pass is the largest part of its kernel's time.
//
//   xc = clamp(x, -88, 89)                 NaN passes through (unordered compares)
//   t  = (xc * log2(e) - 0.5) + 1.5 * 2^23 the float rounds, so t's low mantissa bits hold
//   n  = t - 1.5 * 2^23                    n = floor(x * log2(e)) (-127 <= n <= 128; ties of
//                                          the rounding go to even n)
//   r  = xc - n * ln2                      two FMAs (ln2 split in a high and a low part),
//                                          0 <= r <= ln2 within 1e-5 (the fit's interval)
//   p  = e^r, degree 5 minimax             relative error 2^-23.5, Horner's scheme (5 FMAs;
//                                          Estrin's, 6 operations, measured no faster)
//   s  = bits((bits(t) << 23) + (127 << 23)) = 2^n: 0 for n = -127 (the result is below
//                                          FLT_MIN: flushed), +inf for n = 128 (overflow)
//   exp(x) = p * s
//
// Because 0 <= r <= ln2 (floor, not round to nearest), n stays within 2^n's representable
// exponents up to the largest finite result, and every edge is the multiply's own: +inf and
// overflow give +inf, -inf and results below FLT_MIN give 0, NaN gives NaN. Accuracy against
// libm (tests/e2e/cpu_math_test.cc): <= 3 ulp.
#pragma once

#include "mlir/IR/PatternMatch.h"

namespace hexir::codegen {

// Adds the rewrite of math.exp on f32 (scalars or vectors) described above.
void PopulateExpApproximation(mlir::RewritePatternSet& patterns);

}  // namespace hexir::codegen
