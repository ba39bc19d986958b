// ONNX activations and the softmax family (onnx/defs/math): elementwise generics with
// attribute constants in the body; Softmax/LogSoftmax/Hardmax as max / exp / sum reductions.
#include <climits>
#include <cmath>

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {
namespace {

using Scalar = const std::string&;

// Softmax and LogSoftmax over `axis` (opset < 13: everything from axis on, coerced 2-D).
Status LowerSoftmaxFamily(Context& c, bool log) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  std::string et = x.et;
  HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(c.AttrI("axis", c.opset < 13 ? 1 : -1), x.rank()));
  std::vector<int64_t> axes = {axis};
  if (c.opset < 13)
    for (int64_t i = axis + 1; i < x.rank(); ++i) axes.push_back(i);
  HEXIR_ASSIGN_OR_RETURN(Val mx, c.Reduce(x, axes, true, "max"));
  HEXIR_ASSIGN_OR_RETURN(Val e, c.Elementwise({&x, &mx}, et, [&](const Args& a) {
    return b.Op1("math.exp", b.Bin("arith.subf", "", a[0], a[1], et), et);
  }));
  HEXIR_ASSIGN_OR_RETURN(Val sum, c.Reduce(e, axes, true, "sum"));
  if (!log)
    return c.SetOut(0, c.Elementwise({&e, &sum}, et, [&](const Args& a) {
      return b.Bin("arith.divf", "", a[0], a[1], et);
    }));
  return c.SetOut(0, c.Elementwise({&x, &mx, &sum}, et, [&](const Args& a) {
    std::string d = b.Bin("arith.subf", "", a[0], a[1], et);
    return b.Bin("arith.subf", "", d, b.Op1("math.log", a[2], et), et);
  }));
}

}  // namespace

Status LowerRelu(Context& c) {
  return LowerUnary(c, Operands::kFloatOrInteger, [](Builder& b, Scalar x, Scalar et) {
    return b.Bin("arith.maximumf", "arith.maxsi", x, b.ScalarConst(et, 0), et);
  });
}

Status LowerSigmoid(Context& c) {
  return LowerUnary(c, Operands::kFloat, [](Builder& b, Scalar x, Scalar et) { return Sigmoid(b, x, et); });
}

// log(1 + e^x) as max(x, 0) + log1p(e^-|x|): finite where e^x overflows (x > 88 in f32).
std::string Softplus(Builder& b, const std::string& x, const std::string& et) {
  std::string tail = b.Op1("math.log1p", b.Op1("math.exp", b.Op1("arith.negf", b.Op1("math.absf", x, et), et), et), et);
  return b.Bin("arith.addf", "", b.Bin("arith.maximumf", "", x, b.ScalarConst(et, 0), et), tail, et);
}

Status LowerSoftplus(Context& c) {
  return LowerUnary(c, Operands::kFloat, [](Builder& b, Scalar x, Scalar et) { return Softplus(b, x, et); });
}

// x * tanh(softplus(x)) (opset 18).
Status LowerMish(Context& c) {
  return LowerUnary(c, Operands::kFloat, [](Builder& b, Scalar x, Scalar et) {
    return b.Bin("arith.mulf", "", x, b.Op1("math.tanh", Softplus(b, x, et), et), et);
  });
}

// Opset 20: x * Phi(x), approximate "none" (erf) or "tanh" (Elementwise.h's Gelu).
Status LowerGelu(Context& c) {
  std::string approximate = c.AttrS("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    return c.Error("approximate '" + approximate + "' is not supported (none and tanh are)");
  bool tanh = approximate == "tanh";
  return LowerUnary(c, Operands::kFloat, [tanh](Builder& b, Scalar x, Scalar et) { return Gelu(b, x, et, tanh); });
}

Status LowerSoftsign(Context& c) {
  return LowerUnary(c, Operands::kFloat, [](Builder& b, Scalar x, Scalar et) {
    std::string d = b.Bin("arith.addf", "", b.ScalarConst(et, 1), b.Op1("math.absf", x, et), et);
    return b.Bin("arith.divf", "", x, d, et);
  });
}

Status LowerLeakyRelu(Context& c) {
  double alpha = c.AttrF("alpha", 0.01f);
  return LowerUnary(c, Operands::kFloat, [alpha](Builder& b, Scalar x, Scalar et) {
    std::string a = b.ScalarConst(et, alpha);
    std::string neg = b.Cmp("olt", "slt", x, b.ScalarConst(et, 0), et);
    return b.Select(neg, b.Bin("arith.mulf", "", x, a, et), x, et);
  });
}

Status LowerThresholdedRelu(Context& c) {
  double alpha = c.AttrF("alpha", 1.0f);
  return LowerUnary(c, Operands::kFloat, [alpha](Builder& b, Scalar x, Scalar et) {
    std::string gt = b.Cmp("ogt", "", x, b.ScalarConst(et, alpha), et);
    return b.Select(gt, x, b.ScalarConst(et, 0), et);
  });
}

Status LowerElu(Context& c) {
  double alpha = c.AttrF("alpha", 1.0f);
  return LowerUnary(c, Operands::kFloat, [alpha](Builder& b, Scalar x, Scalar et) {
    std::string a = b.ScalarConst(et, alpha);
    std::string em1 = b.Op1("math.expm1", x, et);
    std::string neg = b.Cmp("olt", "", x, b.ScalarConst(et, 0), et);
    return b.Select(neg, b.Bin("arith.mulf", "", a, em1, et), x, et);
  });
}

Status LowerSelu(Context& c) {
  double alpha = c.AttrF("alpha", 1.67326319217681884765625f);
  double gamma = c.AttrF("gamma", 1.05070102214813232421875f);
  return LowerUnary(c, Operands::kFloat, [alpha, gamma](Builder& b, Scalar x, Scalar et) {
    std::string a = b.ScalarConst(et, alpha);
    std::string g = b.ScalarConst(et, gamma);
    std::string em1 = b.Bin("arith.mulf", "", a, b.Op1("math.expm1", x, et), et);
    std::string neg = b.Cmp("ole", "", x, b.ScalarConst(et, 0), et);
    return b.Bin("arith.mulf", "", g, b.Select(neg, em1, x, et), et);
  });
}

Status LowerHardSigmoid(Context& c) {
  double alpha = c.AttrF("alpha", 0.2f), beta = c.AttrF("beta", 0.5f);
  return LowerUnary(c, Operands::kFloat, [alpha, beta](Builder& b, Scalar x, Scalar et) {
    std::string a = b.ScalarConst(et, alpha);
    std::string be = b.ScalarConst(et, beta);
    std::string v = b.Bin("arith.addf", "", b.Bin("arith.mulf", "", a, x, et), be, et);
    return Clamp(b, v, b.ScalarConst(et, 0), b.ScalarConst(et, 1), et);
  });
}

Status LowerHardSwish(Context& c) {
  return LowerUnary(c, Operands::kFloat, [](Builder& b, Scalar x, Scalar et) {
    std::string a = b.ScalarConst(et, 1.0 / 6.0), be = b.ScalarConst(et, 0.5);
    std::string v = b.Bin("arith.addf", "", b.Bin("arith.mulf", "", a, x, et), be, et);
    v = Clamp(b, v, b.ScalarConst(et, 0), b.ScalarConst(et, 1), et);
    return b.Bin("arith.mulf", "", x, v, et);
  });
}

// alpha * min(0, expm1(x / alpha)) + max(0, x).
Status LowerCelu(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  std::string et = x.et;
  double alpha = c.AttrF("alpha", 1.0f);
  return c.SetOut(0, c.Elementwise({&x}, et, [&](const Args& a) {
    std::string al = b.ScalarConst(et, alpha), z = b.ScalarConst(et, 0);
    std::string e = b.Op1("math.expm1", b.Bin("arith.divf", "", a[0], al, et), et);
    std::string neg = b.Bin("arith.minimumf", "", z, b.Bin("arith.mulf", "", al, e, et), et);
    return b.Bin("arith.addf", "", b.Bin("arith.maximumf", "", z, a[0], et), neg, et);
  }));
}

// x < 0 ? x * slope : x, slope broadcast. Before opset 7 a 1-D slope of x's channel count
// (dim 1) holds one value per channel (Caffe's PReLU, PyTorch 0.3's export), as a
// `[C, 1, ..., 1]` slope does under the numpy rule from opset 7 on.
Status LowerPRelu(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& slope, c.In(1));
  Val* s = &slope;
  Val per_channel;
  if (c.opset < 7 && x.rank() > 2 && slope.rank() == 1 && !slope.shape[0].dynamic() && slope.shape[0].v > 1) {
    Shape channel_column(x.rank() - 1, Dim::Static(1));
    channel_column[0] = slope.shape[0];
    HEXIR_ASSIGN_OR_RETURN(per_channel, c.ReshapeTo(slope, channel_column));
    s = &per_channel;
  }
  std::string et = x.et;
  return c.SetOut(0, c.Elementwise({&x, s}, et, [&](const Args& a) {
    std::string neg = b.Cmp("olt", "slt", a[0], b.ScalarConst(et, 0), et);
    return b.Select(neg, b.Bin("arith.mulf", "arith.muli", a[0], a[1], et), a[0], et);
  }));
}

Status LowerSoftmax(Context& c) { return LowerSoftmaxFamily(c, /*log=*/false); }
Status LowerLogSoftmax(Context& c) { return LowerSoftmaxFamily(c, /*log=*/true); }

// 1 at the first maximum along `axis`, 0 elsewhere.
Status LowerHardmax(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(c.AttrI("axis", -1), x.rank()));
  std::string et = x.et;
  HEXIR_ASSIGN_OR_RETURN(Val mx, c.Reduce(x, {axis}, true, "max"));
  HEXIR_ASSIGN_OR_RETURN(Val idx, c.Elementwise({&x, &mx}, "i64", [&](const Args& a) {
    std::string eq = b.Cmp("oeq", "eq", a[0], a[1], et);
    std::string i = b.Fresh(), i64 = b.Fresh();
    b.Line(i + " = linalg.index " + std::to_string(axis) + " : index");
    b.Line(i64 + " = arith.index_cast " + i + " : index to i64");
    return b.Select(eq, i64, b.ScalarConst("i64", INT64_MAX), "i64");
  }));
  HEXIR_ASSIGN_OR_RETURN(Val first, c.Reduce(idx, {axis}, true, "min"));
  return c.SetOut(0, c.Elementwise({&x, &first}, et, [&](const Args& a) {
    std::string i = b.Fresh(), i64 = b.Fresh();
    b.Line(i + " = linalg.index " + std::to_string(axis) + " : index");
    b.Line(i64 + " = arith.index_cast " + i + " : index to i64");
    std::string eq = b.Cmp("", "eq", i64, a[1], "i64");
    return b.Select(eq, b.ScalarConst(et, 1), b.ScalarConst(et, 0), et);
  }));
}

}  // namespace hexir::importers::onnx
