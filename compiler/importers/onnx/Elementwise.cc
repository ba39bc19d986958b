#include "compiler/importers/onnx/Elementwise.h"

#include <cmath>

namespace hexir::importers::onnx {
Status LowerUnary(Context& c, Operands accepted, const UnaryBody& body) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  std::string et = x.et;
  bool ok = accepted == Operands::kBool    ? et == "i1"
            : accepted == Operands::kFloat ? x.IsFloat()
                                           : true;
  if (!ok) return c.Error("element type " + et + " is not supported");
  return c.SetOut(0, c.Elementwise({&x}, et, [&](const Args& a) { return body(c.b, a[0], et); }));
}

Status LowerFloatUnary(Context& c, const char* op) {
  return LowerUnary(c, Operands::kFloat, [op](Builder& b, const std::string& x, const std::string& et) {
    return b.Op1(op, x, et);
  });
}

Status LowerBinary(Context& c, const BinaryArith& arith) {
  Builder& b = c.b;
  bool cmp = *arith.fpred != '\0';
  HEXIR_ASSIGN_OR_RETURN(Val& first, c.In(0));
  Val acc = first;
  std::string et = acc.et;
  bool is_unsigned = first.is_unsigned;
  const char* iop = is_unsigned && *arith.uiop ? arith.uiop : arith.iop;
  const char* ipred = is_unsigned && *arith.upred ? arith.upred : arith.ipred;
  for (int i = 1; i < c.NumIn(); ++i) {
    HEXIR_ASSIGN_OR_RETURN(Val& y, c.In(i));
    if (y.et != et) return c.Error("operands have different element types " + et + " and " + y.et);
    if (!cmp && *(IsFloatType(et) ? arith.fop : iop) == '\0')
      return c.Error("element type " + et + " is not supported");
    HEXIR_ASSIGN_OR_RETURN(acc, c.Elementwise({&acc, &y}, cmp ? "i1" : et, [&](const Args& a) {
      if (cmp) return b.Cmp(arith.fpred, ipred, a[0], a[1], et);
      return b.Bin(arith.fop, iop, a[0], a[1], et);
    }));
  }
  c.SetOut(0, acc);
  return Status::Ok();
}

std::string Sigmoid(Builder& b, const std::string& x, const std::string& et) {
  std::string one = b.ScalarConst(et, 1);
  std::string n = b.Op1("arith.negf", x, et);
  std::string e = b.Op1("math.exp", n, et);
  std::string d = b.Bin("arith.addf", "", one, e, et);
  return b.Bin("arith.divf", "", one, d, et);
}

std::string Gelu(Builder& b, const std::string& x, const std::string& et, bool tanh) {
  auto k = [&](double v) { return b.ScalarConst(et, v); };
  std::string inner;
  if (tanh) {
    std::string cube = b.Bin("arith.mulf", "", b.Bin("arith.mulf", "", x, x, et), x, et);
    std::string poly = b.Bin("arith.addf", "", x, b.Bin("arith.mulf", "", k(0.044715), cube, et), et);
    inner = b.Op1("math.tanh", b.Bin("arith.mulf", "", k(std::sqrt(2.0 / M_PI)), poly, et), et);
  } else {
    inner = b.Op1("math.erf", b.Bin("arith.mulf", "", x, k(M_SQRT1_2), et), et);
  }
  std::string half_x = b.Bin("arith.mulf", "", x, k(0.5), et);
  return b.Bin("arith.mulf", "", half_x, b.Bin("arith.addf", "", k(1), inner, et), et);
}

std::string Clamp(Builder& b, const std::string& x, const std::string& lo, const std::string& hi,
                  const std::string& et) {
  std::string v = lo.empty() ? x : b.Bin("arith.maximumf", "arith.maxsi", x, lo, et);
  return hi.empty() ? v : b.Bin("arith.minimumf", "arith.minsi", v, hi, et);
}

// Cubic convolution weight of distance d (>= 0) with coefficient a (Keys' kernel).
std::string CubicWeight(Builder& b, double a, const std::string& d) {
  auto c = [&](double v) { return b.ScalarConst("f32", v); };
  auto bin = [&](const char* op, const std::string& x, const std::string& y) { return b.Bin(op, "", x, y, "f32"); };
  // |d| <= 1: ((a + 2) d - (a + 3)) d^2 + 1;  1 < |d| < 2: ((a d - 5a) d + 8a) d - 4a
  std::string near = bin("arith.addf", bin("arith.mulf", bin("arith.subf", bin("arith.mulf", c(a + 2), d), c(a + 3)),
                                           bin("arith.mulf", d, d)), c(1));
  std::string far = bin("arith.subf", bin("arith.mulf", bin("arith.addf", bin("arith.mulf", bin("arith.subf",
                        bin("arith.mulf", c(a), d), c(5 * a)), d), c(8 * a)), d), c(4 * a));
  return b.Select(b.Cmp("ole", "", d, c(1), "f32"), near, far, "f32");
}

}  // namespace hexir::importers::onnx
