// Transcendental math of CPU kernels as vector-friendly polynomials (hexir-cpu-lower-
// executables, before linalg becomes loops): f32 exp is codegen/CPUExpApproximation.h's;
// expm1, log, log1p, log2, erf and tanh use MLIR's approximations (range reduction, then a minimax polynomial; f16 widened to f32
// around them) instead of a scalar libm call per element, so LLVM vectorizes the loops
// that hold them (an elementwise chain with libm's tanhf ran at 2-4% of memcpy).
//
// The log approximations read the exponent field, so a denormal argument would be taken
// for a tiny normal one: log and log2 of x < FLT_MIN are computed as log(x * 2^23) - 23 ln 2.
//
// Accuracy against libm (tests/e2e/cpu_math_test.cc, in ulps of the correctly rounded
// result): exp <= 3, log <= 2, tanh <= 4, erf <= 4; +-inf and NaN
// are exact, results below FLT_MIN may be flushed to zero.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::codegen {

mlir::LogicalResult ApproximateMath(mlir::func::FuncOp kernel);

}  // namespace hexir::codegen
