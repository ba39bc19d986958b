// Quantized ONNX (onnx/defs/quantization, and the integer forms of onnx/defs/math and nn):
// QDQ (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear) and QOperator (MatMulInteger,
// ConvInteger, QLinearMatMul, QLinearConv). Integer products accumulate in i32 after the zero
// points are subtracted (so a padded zero contributes nothing); requantization follows
// onnxruntime: the f32 multiplier a_scale * b_scale / y_scale, round half to even
// (math.roundeven), saturation to the output type's range, then the zero point.
#include <cmath>
#include <functional>

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"
#include "compiler/importers/onnx/OpTable.h"

namespace hexir::importers::onnx {
namespace {

// [lo, hi] of an 8/16/32-bit integer type.
std::pair<double, double> Range(const std::string& et, bool is_unsigned) {
  int bits = ElementBytes(et) * 8;
  if (is_unsigned) return {0, std::ldexp(1.0, bits) - 1};
  return {-std::ldexp(1.0, bits - 1), std::ldexp(1.0, bits - 1) - 1};
}

// A per-axis operand (1-D, one value per x.shape[axis]) reshaped to broadcast against x; 0-D
// and one-element operands broadcast as they are.
StatusOr<Val> AlongAxis(Context& c, Val& v, const Val& x, int64_t axis) {
  if (v.rank() == 0 || (v.rank() == 1 && !v.shape[0].dynamic() && v.shape[0].v == 1)) return v;
  if (v.rank() != 1) return c.Error("scale and zero point must be scalars or 1-D along axis");
  HEXIR_ASSIGN_OR_RETURN(axis, c.NormAxis(axis, x.rank()));
  Shape s(x.rank(), Dim::Static(1));
  s[axis] = v.shape[0];
  HEXIR_ASSIGN_OR_RETURN(Val r, c.ReshapeTo(v, s));
  r.is_unsigned = v.is_unsigned;
  return r;
}

// round-half-even(f) + zp, saturated, converted to et (f32 f and zp).
std::string Saturate(Builder& b, const std::string& f, const std::string& zp_f, const std::string& et,
                     bool is_unsigned) {
  auto [lo, hi] = Range(et, is_unsigned);
  std::string r = b.Bin("arith.addf", "", b.Op1("math.roundeven", f, "f32"), zp_f, "f32");
  r = b.Bin("arith.minimumf", "", b.Bin("arith.maximumf", "", r, b.ScalarConst("f32", lo), "f32"),
            b.ScalarConst("f32", hi), "f32");
  return b.Convert(r, "f32", et, false, is_unsigned);
}

// x - zp in i32 (zp null: x extended), zp broadcast along `axis` of x when 1-D.
StatusOr<Val> CenteredBy(Context& c, Val& x, Val* zp_in, int64_t axis) {
  Builder& b = c.b;
  if (!zp_in) {
    return c.Elementwise({&x}, "i32", [&](const Args& a) { return b.Convert(a[0], x.et, "i32", x.is_unsigned); });
  }
  HEXIR_ASSIGN_OR_RETURN(Val zp, AlongAxis(c, *zp_in, x, axis));
  return c.Elementwise({&x, &zp}, "i32", [&](const Args& a) {
    return b.Bin("", "arith.subi", b.Convert(a[0], x.et, "i32", x.is_unsigned),
                 b.Convert(a[1], zp.et, "i32", zp.is_unsigned), "i32");
  });
}

// CenteredBy with the zero point at node input `zp_input` (absent: none).
StatusOr<Val> Centered(Context& c, Val& x, int zp_input, int64_t axis) {
  if (!c.HasIn(zp_input)) return CenteredBy(c, x, nullptr, axis);
  HEXIR_ASSIGN_OR_RETURN(Val& zp, c.In(zp_input));
  return CenteredBy(c, x, &zp, axis);
}

// y = saturate(roundeven(acc * multiplier) + y_zp) with multiplier = sa * sb / sy (alpha sa sb /
// sy when alpha is not 1: QGemm); sb may be per output channel (1-D along `axis` of acc).
StatusOr<Val> Requantize(Context& c, Val& acc, int sa_in, int sb_in, int64_t axis, int sy_in, int zy_in,
                         double alpha = 1) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& sa, c.In(sa_in));
  HEXIR_ASSIGN_OR_RETURN(Val& sb_raw, c.In(sb_in));
  HEXIR_ASSIGN_OR_RETURN(Val sb, AlongAxis(c, sb_raw, acc, axis));
  HEXIR_ASSIGN_OR_RETURN(Val& sy, c.In(sy_in));
  HEXIR_ASSIGN_OR_RETURN(Val& zy, c.In(zy_in));
  std::string et = zy.et;
  bool u = zy.is_unsigned;
  HEXIR_ASSIGN_OR_RETURN(Val r, c.Elementwise({&acc, &sa, &sb, &sy, &zy}, et, [&](const Args& a) {
    std::string sa = alpha == 1 ? a[1] : b.Bin("arith.mulf", "", b.ScalarConst("f32", alpha), a[1], "f32");
    std::string m = b.Bin("arith.divf", "", b.Bin("arith.mulf", "", sa, a[2], "f32"), a[3], "f32");
    std::string f = b.Bin("arith.mulf", "", b.Convert(a[0], "i32", "f32"), m, "f32");
    return Saturate(b, f, b.Convert(a[4], et, "f32", u), et, u);
  }));
  r.is_unsigned = u;
  return r;
}

}  // namespace

// y = saturate(roundeven(x / scale) + zp); zp's type (default uint8) is y's.
Status LowerQuantizeLinear(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  int64_t axis = c.AttrI("axis", 1);
  HEXIR_ASSIGN_OR_RETURN(Val& scale_in, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val scale, AlongAxis(c, scale_in, x, axis));
  std::vector<Val*> ins = {&x, &scale};
  std::string et = "i8";
  bool u = true;
  Val zp;
  if (c.HasIn(2)) {
    HEXIR_ASSIGN_OR_RETURN(Val& zp_in, c.In(2));
    HEXIR_ASSIGN_OR_RETURN(zp, AlongAxis(c, zp_in, x, axis));
    et = zp.et;
    u = zp.is_unsigned;
    ins.push_back(&zp);
  }
  if (et != "i8" && et != "i16" && et != "i32") return c.Error("zero point type " + et + " is not supported");
  std::string xt = x.et;
  return c.SetOut(0, c.Elementwise(ins, et, [&](const Args& a) {
    std::string xf = b.Convert(a[0], xt, "f32", x.is_unsigned);
    std::string f = b.Bin("arith.divf", "", xf, b.Convert(a[1], scale.et, "f32"), "f32");
    std::string z = ins.size() > 2 ? b.Convert(a[2], et, "f32", u) : b.ScalarConst("f32", 0);
    return Saturate(b, f, z, et, u);
  }), u);
}

// y = (x - zp) * scale in f32 (the difference in i32).
Status LowerDequantizeLinear(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  int64_t axis = c.AttrI("axis", 1);
  HEXIR_ASSIGN_OR_RETURN(Val centered, Centered(c, x, 2, axis));
  HEXIR_ASSIGN_OR_RETURN(Val& scale_in, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val scale, AlongAxis(c, scale_in, x, axis));
  std::string st = scale.et;
  return c.SetOut(0, c.Elementwise({&centered, &scale}, st, [&](const Args& a) {
    return b.Bin("arith.mulf", "", b.Convert(a[0], "i32", st), a[1], st);
  }));
}

namespace {

// x (f32) as uint8 y, f32 scale and uint8 zero point from the range [min(x, 0), max(x, 0)]:
// scale = (max - min) / 255, zp = saturate(roundeven(-min / scale)) (DynamicQuantizeLinear).
struct DynamicQuantized {
  Val y, scale, zp;
};
StatusOr<DynamicQuantized> QuantizeDynamically(Context& c, Val& x) {
  Builder& b = c.b;
  if (x.et != "f32") return c.Error("element type " + x.et + " is not supported");
  std::vector<int64_t> all;
  for (int64_t i = 0; i < x.rank(); ++i) all.push_back(i);
  HEXIR_ASSIGN_OR_RETURN(Val lo, c.Reduce(x, all, false, "min"));
  HEXIR_ASSIGN_OR_RETURN(Val hi, c.Reduce(x, all, false, "max"));
  HEXIR_ASSIGN_OR_RETURN(Val scale, c.Elementwise({&lo, &hi}, "f32", [&](const Args& a) {
    std::string z = b.ScalarConst("f32", 0);
    std::string mn = b.Bin("arith.minimumf", "", a[0], z, "f32"), mx = b.Bin("arith.maximumf", "", a[1], z, "f32");
    return b.Bin("arith.divf", "", b.Bin("arith.subf", "", mx, mn, "f32"), b.ScalarConst("f32", 255), "f32");
  }));
  HEXIR_ASSIGN_OR_RETURN(Val zp, c.Elementwise({&lo, &scale}, "i8", [&](const Args& a) {
    std::string z = b.ScalarConst("f32", 0);
    std::string mn = b.Bin("arith.minimumf", "", a[0], z, "f32");
    std::string f = b.Bin("arith.divf", "", b.Bin("arith.subf", "", z, mn, "f32"), a[1], "f32");
    return Saturate(b, f, z, "i8", true);
  }));
  zp.is_unsigned = true;
  HEXIR_ASSIGN_OR_RETURN(Val y, c.Elementwise({&x, &scale, &zp}, "i8", [&](const Args& a) {
    std::string f = b.Bin("arith.divf", "", a[0], a[1], "f32");
    return Saturate(b, f, b.Convert(a[2], "i8", "f32", true), "i8", true);
  }));
  y.is_unsigned = true;
  return DynamicQuantized{y, scale, zp};
}

}  // namespace

Status LowerDynamicQuantizeLinear(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(DynamicQuantized q, QuantizeDynamically(c, x));
  c.SetOut(0, q.y);
  c.SetOut(1, q.scale);
  c.SetOut(2, q.zp);
  return Status::Ok();
}

// (A - a_zp) @ (B - b_zp) in i32; a_zp per row of A (1-D: along A's rows), b_zp per column.
Status LowerMatMulInteger(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& a, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& bm, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val ac, Centered(c, a, 2, std::max<int64_t>(a.rank() - 2, 0)));
  HEXIR_ASSIGN_OR_RETURN(Val bc, Centered(c, bm, 3, bm.rank() - 1));
  return c.SetOut(0, c.MatMul(ac, bc));
}

// Conv of (x - x_zp) by (w - w_zp) in i32 (w_zp may be per output channel).
Status LowerConvInteger(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& w, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val xc, Centered(c, x, 2, 1));
  HEXIR_ASSIGN_OR_RETURN(Val wc, Centered(c, w, 3, 0));
  return c.SetOut(0, ConvolutionOf(c, xc, wc, nullptr));
}

// Inputs: a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp.
Status LowerQLinearMatMul(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& a, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& bm, c.In(3));
  HEXIR_ASSIGN_OR_RETURN(Val ac, Centered(c, a, 2, std::max<int64_t>(a.rank() - 2, 0)));
  HEXIR_ASSIGN_OR_RETURN(Val bc, Centered(c, bm, 5, bm.rank() - 1));
  HEXIR_ASSIGN_OR_RETURN(Val acc, c.MatMul(ac, bc));
  return c.SetOut(0, Requantize(c, acc, 1, 4, acc.rank() - 1, 6, 7));
}

// Inputs: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B (i32 bias, optional).
Status LowerQLinearConv(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& w, c.In(3));
  HEXIR_ASSIGN_OR_RETURN(Val xc, Centered(c, x, 2, 1));
  HEXIR_ASSIGN_OR_RETURN(Val wc, Centered(c, w, 5, 0));
  Val* bias = nullptr;
  if (c.HasIn(8)) {
    HEXIR_ASSIGN_OR_RETURN(Val& bv, c.In(8));
    bias = &bv;
  }
  HEXIR_ASSIGN_OR_RETURN(Val acc, ConvolutionOf(c, xc, wc, bias));
  return c.SetOut(0, Requantize(c, acc, 1, 4, 1, 6, 7));
}

namespace {

// The i32 product `acc` [.., N] back to f32 as onnxruntime's contrib kernels do: acc * (a_scale
// * b_scale) (alpha a_scale b_scale when alpha is not 1: QGemm; b_scale scalar or per column),
// + bias [N] (input `bias_in`, optional; -1: none).
StatusOr<Val> DequantizedProduct(Context& c, Val& acc, Val& a_scale, int b_scale_in, int bias_in, double alpha = 1) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& sb_raw, c.In(b_scale_in));
  if (a_scale.et != "f32" || sb_raw.et != "f32") return c.Error("the scales must be f32");
  HEXIR_ASSIGN_OR_RETURN(Val sb, AlongAxis(c, sb_raw, acc, acc.rank() - 1));
  HEXIR_ASSIGN_OR_RETURN(Val y, c.Elementwise({&acc, &a_scale, &sb}, "f32", [&](const Args& a) {
    std::string sa = alpha == 1 ? a[1] : b.Bin("arith.mulf", "", b.ScalarConst("f32", alpha), a[1], "f32");
    std::string m = b.Bin("arith.mulf", "", sa, a[2], "f32");
    return b.Bin("arith.mulf", "", b.Convert(a[0], "i32", "f32"), m, "f32");
  }));
  if (bias_in < 0 || !c.HasIn(bias_in)) return y;
  HEXIR_ASSIGN_OR_RETURN(Val& bias, c.In(bias_in));
  if (bias.et != "f32") return c.Error("bias must be f32");
  return c.Elementwise({&y, &bias}, "f32", [&](const Args& a) { return b.Bin("arith.addf", "", a[0], a[1], "f32"); });
}

}  // namespace

// com.microsoft MatMulIntegerToFloat: A, B (8-bit), a_scale, b_scale, a_zero_point,
// b_zero_point, bias: (A - a_zp)(B - b_zp) in i32, then DequantizedProduct.
Status LowerMatMulIntegerToFloat(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& a, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& bm, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val& a_scale, c.In(2));
  if (a_scale.rank() > 1 || (a_scale.rank() == 1 && (a_scale.shape[0].dynamic() || a_scale.shape[0].v != 1)))
    return c.Error("a_scale must be one value");
  HEXIR_ASSIGN_OR_RETURN(Val ac, Centered(c, a, 4, std::max<int64_t>(a.rank() - 2, 0)));
  HEXIR_ASSIGN_OR_RETURN(Val bc, Centered(c, bm, 5, bm.rank() - 1));
  HEXIR_ASSIGN_OR_RETURN(Val acc, c.MatMul(ac, bc));
  return c.SetOut(0, DequantizedProduct(c, acc, a_scale, 3, 6));
}

// com.microsoft DynamicQuantizeMatMul: A (f32), B (8-bit), b_scale, b_zero_point, bias: A
// quantized as DynamicQuantizeLinear does (uint8, its scale and zero point), then as
// MatMulIntegerToFloat.
Status LowerDynamicQuantizeMatMul(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& a, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& bm, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(DynamicQuantized q, QuantizeDynamically(c, a));
  HEXIR_ASSIGN_OR_RETURN(Val ac, CenteredBy(c, q.y, &q.zp, 0));
  HEXIR_ASSIGN_OR_RETURN(Val bc, Centered(c, bm, 3, bm.rank() - 1));
  HEXIR_ASSIGN_OR_RETURN(Val acc, c.MatMul(ac, bc));
  return c.SetOut(0, DequantizedProduct(c, acc, q.scale, 2, 4));
}

namespace {

// An input of a QLinear op in its body: its stored value and zero point (f32; "0.0" when
// absent) and its scale.
struct QOperand {
  std::string x, zp, scale;
};

// onnxruntime's QLinear elementwise ops (com.microsoft): for each quantized input i (node
// inputs x, scale, zero point: `inputs[i]` is x's index) `f` gets its QOperand and the output's
// scale and zero point (inputs `out_scale`, `out_zp`, the zero point optional: 0) and returns the
// output before rounding, its zero point included; that is rounded half to even and saturated
// into the first input's type. Each op's formula follows onnxruntime's kernel, whose float
// roundings it repeats (one quantum apart on near-ties otherwise).
StatusOr<Val> QLinearElementwise(
    Context& c, const std::vector<int>& inputs, int out_scale, int out_zp,
    const std::function<std::string(const std::vector<QOperand>&, const std::string&, const std::string&)>& f) {
  Builder& b = c.b;
  std::vector<Val> operands;
  std::vector<bool> has_zp;
  for (int i : inputs) {
    for (int j : {i, i + 1}) {
      HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(j));
      operands.push_back(v);
    }
    has_zp.push_back(c.HasIn(i + 2));
    if (c.HasIn(i + 2)) {
      HEXIR_ASSIGN_OR_RETURN(Val& zp, c.In(i + 2));
      operands.push_back(zp);
    }
  }
  HEXIR_ASSIGN_OR_RETURN(Val& y_scale, c.In(out_scale));
  operands.push_back(y_scale);
  const Val& first = operands[0];
  if (first.et != "i8") return c.Error("the quantized inputs must be int8 or uint8");
  std::string et = first.et;
  const bool u = first.is_unsigned;
  if (c.HasIn(out_zp)) {
    HEXIR_ASSIGN_OR_RETURN(Val& y_zp, c.In(out_zp));
    operands.push_back(y_zp);
  }
  std::vector<Val*> ptrs;
  for (Val& v : operands) {
    if (v.et != "i8" && v.et != "f32") return c.Error("scales must be f32 and zero points 8-bit");
    ptrs.push_back(&v);
  }
  HEXIR_ASSIGN_OR_RETURN(Val r, c.Elementwise(ptrs, et, [&](const Args& a) {
    auto real = [&](size_t k) { return b.Convert(a[k], operands[k].et, "f32", operands[k].is_unsigned); };
    std::vector<QOperand> q;
    size_t k = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      QOperand o{real(k), b.ScalarConst("f32", 0), a[k + 1]};
      k += 2;
      if (has_zp[i]) o.zp = real(k++);
      q.push_back(o);
    }
    std::string zp = k + 1 < a.size() ? real(k + 1) : b.ScalarConst("f32", 0);
    return Saturate(b, f(q, a[k], zp), b.ScalarConst("f32", 0), et, u);
  }));
  r.is_unsigned = u;
  return r;
}

std::string MulF(Builder& b, const std::string& x, const std::string& y) { return b.Bin("arith.mulf", "", x, y, "f32"); }
std::string AddF(Builder& b, const std::string& x, const std::string& y) { return b.Bin("arith.addf", "", x, y, "f32"); }
std::string SubF(Builder& b, const std::string& x, const std::string& y) { return b.Bin("arith.subf", "", x, y, "f32"); }
std::string DivF(Builder& b, const std::string& x, const std::string& y) { return b.Bin("arith.divf", "", x, y, "f32"); }

// roundeven(y) + zp: the zero point added after rounding, as onnxruntime's lookup-table kernels
// (QLinearSigmoid, QLinearLeakyRelu) do (an integral value: Saturate's own rounding keeps it).
std::string RoundedThenOffset(Builder& b, const std::string& y, const std::string& zp) {
  return AddF(b, b.Op1("math.roundeven", y, "f32"), zp);
}

}  // namespace

// com.microsoft QLinearAdd / QLinearMul: A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp.
// Add as onnxruntime's MLAS kernel rounds it: (zc - za ra - zb rb) + a ra + b rb on the stored
// integers, ra = sa / sc, rb = sb / sc; Mul: (a - za) (b - zb) (sa sb / sc) + zc.
Status LowerQLinearAdd(Context& c) {
  Builder& b = c.b;
  return c.SetOut(0, QLinearElementwise(c, {0, 3}, 6, 7, [&](const std::vector<QOperand>& v, const std::string& sc,
                                                           const std::string& zc) {
    std::string ra = DivF(b, v[0].scale, sc), rb = DivF(b, v[1].scale, sc);
    std::string fixed = SubF(b, SubF(b, zc, MulF(b, v[0].zp, ra)), MulF(b, v[1].zp, rb));
    return AddF(b, AddF(b, fixed, MulF(b, v[0].x, ra)), MulF(b, v[1].x, rb));
  }));
}
Status LowerQLinearMul(Context& c) {
  Builder& b = c.b;
  return c.SetOut(0, QLinearElementwise(c, {0, 3}, 6, 7, [&](const std::vector<QOperand>& v, const std::string& sc,
                                                           const std::string& zc) {
    std::string m = DivF(b, MulF(b, v[0].scale, v[1].scale), sc);
    return AddF(b, MulF(b, MulF(b, SubF(b, v[0].x, v[0].zp), SubF(b, v[1].x, v[1].zp)), m), zc);
  }));
}

// com.microsoft QLinearSigmoid / QLinearLeakyRelu (alpha): X, X_scale, X_zp, Y_scale, Y_zp:
// round(f((x - zx) sx) / sy) + zy (onnxruntime tabulates the 256 inputs so).
Status LowerQLinearSigmoid(Context& c) {
  Builder& b = c.b;
  return c.SetOut(0, QLinearElementwise(c, {0}, 3, 4, [&](const std::vector<QOperand>& v, const std::string& sy,
                                                        const std::string& zy) {
    std::string x = MulF(b, SubF(b, v[0].x, v[0].zp), v[0].scale);
    return RoundedThenOffset(b, DivF(b, Sigmoid(b, x, "f32"), sy), zy);
  }));
}
Status LowerQLinearLeakyRelu(Context& c) {
  Builder& b = c.b;
  const double alpha = c.AttrF("alpha", 0.01f);
  return c.SetOut(0, QLinearElementwise(c, {0}, 3, 4, [&](const std::vector<QOperand>& v, const std::string& sy,
                                                        const std::string& zy) {
    std::string x = MulF(b, SubF(b, v[0].x, v[0].zp), v[0].scale);
    std::string negative = b.Cmp("olt", "", x, b.ScalarConst("f32", 0), "f32");
    std::string y = b.Select(negative, MulF(b, x, b.ScalarConst("f32", alpha)), x, "f32");
    return RoundedThenOffset(b, DivF(b, y, sy), zy);
  }));
}

// com.microsoft QLinearGlobalAveragePool: X, x_scale, x_zero_point, y_scale, y_zero_point; NCHW,
// or NHWC with channels_last. As onnxruntime's kernel: the i32 sum of x - zx over the image,
// times sx / (sy * pixels), rounded half to even, + zy.
Status LowerQLinearGlobalAveragePool(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  if (x.et != "i8" || x.rank() < 3) return c.Error("X must be int8 or uint8 of rank 3 or more");
  const bool last = c.AttrI("channels_last", 0) != 0;
  std::vector<int64_t> axes;
  Dim pixels = Dim::Static(1);
  for (int64_t d = last ? 1 : 2; d < (last ? x.rank() - 1 : x.rank()); ++d) {
    axes.push_back(d);
    pixels = b.Mul(pixels, x.shape[d]);
  }
  HEXIR_ASSIGN_OR_RETURN(Val centred, Centered(c, x, 2, last ? x.rank() - 1 : 1));
  HEXIR_ASSIGN_OR_RETURN(Val sum, c.Reduce(centred, axes, true, "sum"));
  HEXIR_ASSIGN_OR_RETURN(Val& sx, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val& sy, c.In(3));
  HEXIR_ASSIGN_OR_RETURN(Val& zy, c.In(4));
  std::string count = b.DimAsFloat(pixels, "f32");
  HEXIR_ASSIGN_OR_RETURN(Val y, c.Elementwise({&sum, &sx, &sy, &zy}, x.et, [&](const Args& a) {
    std::string m = DivF(b, a[1], MulF(b, a[2], count));
    return Saturate(b, MulF(b, b.Convert(a[0], "i32", "f32"), m), b.Convert(a[3], zy.et, "f32", zy.is_unsigned), x.et,
                    x.is_unsigned);
  }));
  y.is_unsigned = x.is_unsigned;
  c.SetOut(0, y);
  return Status::Ok();
}

// com.microsoft QLinearConcat: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per
// input; axis. Each input requantized to Y's scale as onnxruntime's lookup tables do:
// round((x - zx) sx / sy) + zy, half to even; then Concat.
Status LowerQLinearConcat(Context& c) {
  Builder& b = c.b;
  if (c.NumIn() < 5 || (c.NumIn() - 2) % 3 != 0) return c.Error("inputs must be Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triples");
  HEXIR_ASSIGN_OR_RETURN(Val& sy, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& zy, c.In(1));
  std::vector<Val> parts;
  for (int i = 2; i < c.NumIn(); i += 3) {
    HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(i));
    HEXIR_ASSIGN_OR_RETURN(Val& sx, c.In(i + 1));
    HEXIR_ASSIGN_OR_RETURN(Val& zx, c.In(i + 2));
    if (x.et != zy.et || x.is_unsigned != zy.is_unsigned) return c.Error("every X must have Y_zero_point's type");
    HEXIR_ASSIGN_OR_RETURN(Val r, c.Elementwise({&x, &sx, &zx, &sy, &zy}, x.et, [&](const Args& a) {
      std::string v = SubF(b, b.Convert(a[0], x.et, "f32", x.is_unsigned), b.Convert(a[2], zx.et, "f32", zx.is_unsigned));
      return Saturate(b, DivF(b, MulF(b, v, a[1]), a[3]), b.Convert(a[4], zy.et, "f32", zy.is_unsigned), x.et,
                      x.is_unsigned);
    }));
    r.is_unsigned = x.is_unsigned;
    parts.push_back(r);
  }
  const int64_t axis = c.AttrI("axis", 0);
  HEXIR_ASSIGN_OR_RETURN(std::vector<Val> joined,
                         LowerAs(c, "Concat", parts, 1, [&](::onnx::NodeProto& n) { SetInt(n, "axis", axis); }));
  joined[0].is_unsigned = zy.is_unsigned;
  c.SetOut(0, joined[0]);
  return Status::Ok();
}

// com.microsoft QGemm: A, a_scale, a_zero_point, B, b_scale, b_zero_point (scalar or per
// column), C (i32 bias at scale a_scale b_scale, optional), y_scale, y_zero_point (absent: an
// f32 output); transA, transB, alpha. As onnxruntime: the i32 product of the centred operands
// plus C, times alpha sa sb (/ sy, rounded half to even, + zy when quantized).
Status LowerQGemm(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& a, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& bm, c.In(3));
  if (a.rank() != 2 || bm.rank() != 2) return c.Error("A and B must be 2-D");
  const bool trans_a = c.AttrI("transA", 0) != 0, trans_b = c.AttrI("transB", 0) != 0;
  HEXIR_ASSIGN_OR_RETURN(Val ac, Centered(c, a, 2, trans_a ? 1 : 0));
  HEXIR_ASSIGN_OR_RETURN(Val bc, Centered(c, bm, 5, trans_b ? 0 : 1));
  if (trans_a) ac = c.Transpose(ac, {1, 0});
  if (trans_b) bc = c.Transpose(bc, {1, 0});
  HEXIR_ASSIGN_OR_RETURN(Val acc, c.MatMul(ac, bc));
  if (c.HasIn(6)) {
    HEXIR_ASSIGN_OR_RETURN(Val& bias, c.In(6));
    if (bias.et != "i32") return c.Error("C must be int32");
    HEXIR_ASSIGN_OR_RETURN(acc, c.Elementwise({&acc, &bias}, "i32", [&](const Args& v) {
      return b.Bin("", "arith.addi", v[0], v[1], "i32");
    }));
  }
  const double alpha = c.AttrF("alpha", 1.0f);
  if (!c.HasIn(7)) {
    HEXIR_ASSIGN_OR_RETURN(Val& sa, c.In(1));
    return c.SetOut(0, DequantizedProduct(c, acc, sa, 4, -1, alpha));
  }
  if (!c.HasIn(8)) return c.Error("y_scale needs y_zero_point");
  return c.SetOut(0, Requantize(c, acc, 1, 4, 1, 7, 8, alpha));
}

}  // namespace hexir::importers::onnx
