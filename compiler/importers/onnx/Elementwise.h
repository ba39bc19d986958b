// The shapes shared by elementwise lowerings (Math*.cc, Logical.cc, NN.cc, Tensor.cc): a
// unary op over one operand, a binary (variadic) op folded left over numpy broadcasting,
// and scalar body pieces used by several ops.
#pragma once

#include <functional>
#include <string>

#include "base/status.h"
#include "compiler/importers/onnx/Context.h"

namespace hexir::importers::onnx {

using Args = std::vector<std::string>;

// Element types a unary lowering accepts.
enum class Operands { kFloat, kFloatOrInteger, kBool };

// Scalar body of a unary op: x (SSA name) of element type et -> result name.
using UnaryBody = std::function<std::string(Builder& b, const std::string& x, const std::string& et)>;

// out = body(in 0), one generic; other element types fail naming the type.
Status LowerUnary(Context& c, Operands accepted, const UnaryBody& body);
// LowerUnary with a one-op float body (`math.sin`).
Status LowerFloatUnary(Context& c, const char* op);

// The arith spelling of a binary op: float / integer op names (empty: undefined for that kind),
// or the cmpf / cmpi predicates of a comparison (result i1). Known operands fold before the
// lowering runs (Folding.h).
struct BinaryArith {
  const char* fop = "";
  const char* iop = "";
  const char* fpred = "";
  const char* ipred = "";
  const char* uiop = "";   // unsigned integers, where it differs from iop
  const char* upred = "";  // unsigned comparisons, where it differs from ipred
};

// in 0 op in 1 op in 2 ... (one generic per operand after the first); one operand: itself.
Status LowerBinary(Context& c, const BinaryArith& arith);

std::string Sigmoid(Builder& b, const std::string& x, const std::string& et);
// x Phi(x): x / 2 (1 + erf(x / sqrt 2)), or with `tanh` the approximation
// x / 2 (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) (Gelu; com.microsoft's FastGelu, BiasGelu).
std::string Gelu(Builder& b, const std::string& x, const std::string& et, bool tanh);
// max(x, lo) then min(., hi); an empty bound is skipped.
std::string Clamp(Builder& b, const std::string& x, const std::string& lo, const std::string& hi,
                  const std::string& et);

// Keys' cubic convolution weight of distance d >= 0 with coefficient a (Resize, GridSample).
std::string CubicWeight(Builder& b, double a, const std::string& d);

}  // namespace hexir::importers::onnx
