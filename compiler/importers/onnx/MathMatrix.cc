// ONNX matrix products and scans (onnx/defs/math): MatMul and Gemm as a generic with a
// reduction loop (batch broadcasting, 1-D operands), CumSum as a masked reduction.
#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {
namespace {

// Operands of MatMul and Gemm: rank >= 1, one element type.
Status CheckProductOperands(Context& c, const Val& a, const Val& bm) {
  if (a.rank() == 0 || bm.rank() == 0) return c.Error("operands must have rank >= 1");
  if (a.et != bm.et) return c.Error("operands have different element types");
  return Status::Ok();
}

}  // namespace

Status LowerMatMul(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& a, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& bm, c.In(1));
  HEXIR_RETURN_IF_ERROR(CheckProductOperands(c, a, bm));
  return c.SetOut(0, c.MatMul(a, bm));
}

// alpha * op(A) * op(B) + beta * C.
Status LowerGemm(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& a_in, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& b_in, c.In(1));
  HEXIR_RETURN_IF_ERROR(CheckProductOperands(c, a_in, b_in));
  Val a = a_in, bm = b_in;
  if (a.rank() != 2 || bm.rank() != 2) return c.Error("Gemm operands must be 2-D");
  if (c.AttrI("transA", 0)) a = c.Transpose(a, {1, 0});
  if (c.AttrI("transB", 0)) bm = c.Transpose(bm, {1, 0});
  HEXIR_ASSIGN_OR_RETURN(Val y, c.MatMul(a, bm));
  float alpha = c.AttrF("alpha", 1.0f), beta = c.AttrF("beta", 1.0f);
  std::string et = y.et;
  if (alpha != 1.0f) {
    HEXIR_ASSIGN_OR_RETURN(y, c.Elementwise({&y}, et, [&](const Args& x) {
      return b.Bin("arith.mulf", "", x[0], b.ScalarConst(et, alpha), et);
    }));
  }
  if (c.HasIn(2) && beta != 0.0f) {
    HEXIR_ASSIGN_OR_RETURN(Val& bias, c.In(2));
    HEXIR_ASSIGN_OR_RETURN(y, c.Elementwise({&y, &bias}, et, [&](const Args& x) {
      std::string v = beta == 1.0f ? x[1] : b.Bin("arith.mulf", "", x[1], b.ScalarConst(et, beta), et);
      return b.Bin("arith.addf", "", x[0], v, et);
    }));
  }
  c.SetOut(0, y);
  return Status::Ok();
}

// out[.., i, ..] = sum over k of x[.., k, ..] where k <= i (or the exclusive/reverse forms):
// loops = output dims + one reduction loop k over the axis.
Status LowerCumSum(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& axis_in, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(std::vector<int64_t> axis_value, c.ConstInts(axis_in, "axis"));
  if (axis_value.empty()) return c.Error("axis must have one element");
  HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(axis_value[0], x.rank()));
  bool excl = c.AttrI("exclusive", 0) != 0, rev = c.AttrI("reverse", 0) != 0;
  c.Mat(x);
  int loops = static_cast<int>(x.rank()) + 1;
  std::vector<std::string> xm, om;
  for (int i = 0; i + 1 < loops; ++i) {
    xm.push_back(i == axis ? "d" + std::to_string(loops - 1) : "d" + std::to_string(i));
    om.push_back("d" + std::to_string(i));
  }
  std::string et = x.et;
  std::vector<std::string> iters(loops - 1, "parallel");
  iters.push_back("reduction");
  std::string init = b.Filled(x.shape, et, 0);
  Val r;
  r.et = et;
  r.shape = x.shape;
  r.name = b.Generic({&x}, {Builder::Map(loops, xm)}, Builder::Map(loops, om), x.shape, et, loops,
                     iters, init, [&](const Args& a) {
                       std::string i = b.Fresh(), k = b.Fresh();
                       b.Line(i + " = linalg.index " + std::to_string(axis) + " : index");
                       b.Line(k + " = linalg.index " + std::to_string(loops - 1) + " : index");
                       std::string pred = rev ? (excl ? "sgt" : "sge") : (excl ? "slt" : "sle");
                       std::string in = b.Fresh();
                       b.Line(in + " = arith.cmpi " + pred + ", " + k + ", " + i + " : index");
                       std::string v = b.Select(in, a[0], b.ScalarConst(et, 0), et);
                       return b.Bin("arith.addf", "arith.addi", a[1], v, et);
                     });
  c.SetOut(0, r);
  return Status::Ok();
}

}  // namespace hexir::importers::onnx
