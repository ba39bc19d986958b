// The small ONNX nn ops (onnx/defs/nn): Dropout (inference or ratio 0: identity, mask all true;
// training with a non-zero ratio: a hashed mask), Flatten (a reshape to 2-D) and Shrink
// (elementwise).
#include <cmath>
#include <cstdint>

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {
namespace {

// Training-mode Dropout's mask without a random source or state: element p (row-major
// position) is kept when u(p) >= ratio, u the top 24 bits of lowbias32(p + seed * 0x9E3779B9)
// over 2^24, uniform in [0, 1). The same seed keeps the same elements on every call.
Val DropoutMask(Builder& b, const Shape& shape, double ratio, int64_t seed) {
  std::vector<std::string> extents;
  for (const Dim& d : shape) extents.push_back(b.DimValue(d));
  return b.Tabulate(shape, "i1", [&](std::vector<std::string> idx) {
    std::string lin = b.Linearize(idx, extents);
    std::string h = b.Fresh();
    b.Line(h + " = arith.index_cast " + lin + " : index to i32");
    const uint32_t mixed = static_cast<uint32_t>(seed) * 0x9E3779B9u;
    h = b.Bin("", "arith.addi", h, b.ScalarConst("i32", static_cast<int32_t>(mixed)), "i32");
    auto shift_xor = [&](int bits) {
      h = b.Bin("", "arith.xori", h, b.Bin("", "arith.shrui", h, b.ScalarConst("i32", bits), "i32"), "i32");
    };
    shift_xor(16);
    h = b.Bin("", "arith.muli", h, b.ScalarConst("i32", static_cast<int32_t>(0x7feb352du)), "i32");
    shift_xor(15);
    h = b.Bin("", "arith.muli", h, b.ScalarConst("i32", static_cast<int32_t>(0x846ca68bu)), "i32");
    shift_xor(16);
    std::string top = b.Bin("", "arith.shrui", h, b.ScalarConst("i32", 8), "i32");
    // u >= ratio as integers: top >= ceil(ratio * 2^24)
    const double threshold = std::ceil(ratio * 16777216.0);
    return b.Cmp("", "sge", top, b.ScalarConst("i32", threshold), "i32");
  });
}

}  // namespace

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
    // A ratio of 0 keeps everything: y = x, mask all true.
    double ratio = 0.5;
    if (c.HasIn(1)) {
      HEXIR_ASSIGN_OR_RETURN(Val& r, c.In(1));
      HEXIR_ASSIGN_OR_RETURN(std::vector<double> rv, c.ConstFloats(r, "ratio"));
      if (!rv.empty()) ratio = rv[0];
    } else if (c.opset < 12) {
      ratio = c.AttrF("ratio", 0.5f);
    }
    if (ratio < 0 || ratio >= 1) return c.Error("ratio " + std::to_string(ratio) + " is outside [0, 1)");
    if (ratio != 0) {
      Val mask = DropoutMask(b, x.shape, ratio, c.AttrI("seed", 0));
      HEXIR_RETURN_IF_ERROR(c.SetOut(0, c.Elementwise({&x, &mask}, x.et, [&](const Args& a) {
        std::string scale = b.ScalarConst(x.et, 1 / (1 - ratio)), zero = b.ScalarConst(x.et, 0);
        return b.Select(a[1], b.Bin("arith.mulf", "", a[0], scale, x.et), zero, x.et);
      })));
      if (c.node->output_size() > 1 && !c.node->output(1).empty()) c.SetOut(1, mask);
      return Status::Ok();
    }
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
