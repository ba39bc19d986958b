// The small ONNX nn ops (onnx/defs/nn): Dropout (inference or ratio 0: identity, mask all true), Flatten
// (a reshape to 2-D) and Shrink (elementwise).
#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {

Status LowerDropout(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  bool training = c.AttrI("is_test", 1) == 0 && c.opset < 7;
  if (c.HasIn(2)) {
    HEXIR_ASSIGN_OR_RETURN(Val& t, c.In(2));
    if (!t.has_ints || t.ints.empty()) return c.Error("training_mode must be a constant");
    training = t.ints[0].v != 0;
  }
  if (training) {
    // Only a ratio of 0 is deterministic (no random source): y = x, mask all true.
    double ratio = 0.5;
    if (c.HasIn(1)) {
      HEXIR_ASSIGN_OR_RETURN(Val& r, c.In(1));
      HEXIR_ASSIGN_OR_RETURN(std::vector<double> rv, c.ConstFloats(r, "ratio"));
      if (!rv.empty()) ratio = rv[0];
    } else if (c.opset < 12) {
      ratio = c.AttrF("ratio", 0.5f);
    }
    if (ratio != 0) return c.Error("training mode with a non-zero ratio (random masks) is not supported");
  }
  if (c.node->output_size() > 1 && !c.node->output(1).empty()) {
    Val mask;
    mask.et = "i1";
    mask.shape = x.shape;
    mask.name = b.Filled(mask.shape, "i1", 1);
    c.SetOut(1, mask);
  }
  c.SetOut(0, x);
  return Status::Ok();
}

// [d0 * ... * d(axis-1), d(axis) * ... * d(rank-1)].
Status LowerFlatten(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  int64_t axis = c.AttrI("axis", 1);
  if (axis < 0) axis += x.rank();
  if (axis < 0 || axis > x.rank()) return c.Error("axis out of range for rank " + std::to_string(x.rank()));
  return c.SetOut(0, c.ReshapeTo(x, {b.Product(x.shape, 0, axis), b.Product(x.shape, axis, x.rank())}));
}

// x < -lambd ? x + bias : x > lambd ? x - bias : 0.
Status LowerShrink(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  std::string et = x.et;
  double bias = c.AttrF("bias", 0), lambd = c.AttrF("lambd", 0.5f);
  return c.SetOut(0, c.Elementwise({&x}, et, [&](const Args& a) {
    std::string l = b.ScalarConst(et, lambd), nl = b.ScalarConst(et, -lambd);
    std::string bi = b.ScalarConst(et, bias), z = b.ScalarConst(et, 0);
    std::string lo = b.Cmp("olt", "slt", a[0], nl, et), hi = b.Cmp("ogt", "sgt", a[0], l, et);
    std::string vlo = b.Bin("arith.addf", "arith.addi", a[0], bi, et);
    std::string vhi = b.Bin("arith.subf", "arith.subi", a[0], bi, et);
    return b.Select(lo, vlo, b.Select(hi, vhi, z, et), et);
  }));
}

}  // namespace hexir::importers::onnx
