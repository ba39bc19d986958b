// ONNX ops whose output extent depends on the data (onnx/defs/tensor): NonZero, Compress,
// Unique. The device computes a selection mask and its inclusive prefix count; the host reads
// the last count back once (`tensor.extract`, the output's `?` extent); a generic then finds
// the position of the j-th selected element (the one whose prefix count is j + 1).
// O(N^2) for the prefix and O(count x N) for the positions.
#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {
namespace {

// The selected positions of 1-D i64 `mask` (1 = selected): the count (read back on the host)
// and a [count] i64 tensor of their indices, in order.
struct Selection {
  Dim count;
  Val positions;
};

Selection Select(Context& c, Val& mask) {
  Builder& b = c.b;
  c.Mat(mask);
  // prefix[i] = sum of mask[k] for k <= i
  Val prefix;
  prefix.et = "i64";
  prefix.shape = mask.shape;
  prefix.name = b.Generic({&mask}, {Builder::Map(2, {"d1"})}, Builder::Map(2, {"d0"}), mask.shape, "i64", 2,
                          {"parallel", "reduction"}, b.Filled(mask.shape, "i64", 0), [&](const Args& a) {
                            std::vector<std::string> ik = b.LoopIndices(2);
                            std::string le = b.Fresh();
                            b.Line(le + " = arith.cmpi sle, " + ik[1] + ", " + ik[0] + " : index");
                            std::string v = b.Select(le, a[0], b.ScalarConst("i64", 0), "i64");
                            return b.Bin("", "arith.addi", a[1], v, "i64");
                          });
  Selection s;
  const Dim& n = mask.shape[0];
  if (!n.dynamic() && n.v == 0) {
    s.count = Dim::Static(0);
  } else {  // the one readback
    std::string last = b.DimValue(b.Sub(n, Dim::Static(1))), e = b.Fresh(), x = b.Fresh();
    b.Line(e + " = tensor.extract " + prefix.name + "[" + last + "] : " + Builder::TensorType(prefix));
    b.Line(x + " = arith.index_cast " + e + " : i64 to index");
    b.MarkNonNegative(x);
    s.count = Dim::Dynamic(x);
  }
  s.positions.et = "i64";
  s.positions.shape = {s.count};
  s.positions.name = b.Generic({&mask, &prefix}, {Builder::Map(2, {"d1"}), Builder::Map(2, {"d1"})},
                               Builder::Map(2, {"d0"}), s.positions.shape, "i64", 2, {"parallel", "reduction"},
                               b.Filled(s.positions.shape, "i64", 0), [&](const Args& a) {
                                 std::vector<std::string> jp = b.LoopIndices(2);
                                 std::string j1 = b.Fresh(), j64 = b.Fresh(), p64 = b.Fresh();
                                 b.Line(j1 + " = arith.addi " + jp[0] + ", " + b.IndexConst(1) + " : index");
                                 b.Line(j64 + " = arith.index_cast " + j1 + " : index to i64");
                                 b.Line(p64 + " = arith.index_cast " + jp[1] + " : index to i64");
                                 std::string hit = b.AndI1(b.Cmp("", "ne", a[0], b.ScalarConst("i64", 0), "i64"),
                                                           b.Cmp("", "eq", a[1], j64, "i64"));
                                 return b.Select(hit, p64, a[2], "i64");
                               });
  return s;
}

// 1 where x != 0 (i1: where true), as i64.
StatusOr<Val> NonZeroMask(Context& c, Val& x) {
  Builder& b = c.b;
  return c.Elementwise({&x}, "i64", [&](const Args& a) {
    std::string nz = x.et == "i1" ? a[0] : b.Cmp("une", "ne", a[0], b.ScalarConst(x.et, 0), x.et);
    return b.Select(nz, b.ScalarConst("i64", 1), b.ScalarConst("i64", 0), "i64");
  });
}

Val Flat(Context& c, Val& x) {
  Shape flat = {c.b.Product(x.shape, 0, x.shape.size())};
  auto r = c.ReshapeTo(x, flat);
  return r.ok() ? *r : x;
}

}  // namespace

// out[r][j] = coordinate r of the j-th non-zero element (row-major order).
Status LowerNonZero(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val m, NonZeroMask(c, x));
  Val flat = Flat(c, m);
  Selection s = Select(c, flat);
  int64_t rank = std::max<int64_t>(x.rank(), 1);
  std::vector<std::string> extents;
  for (const Dim& d : x.shape) extents.push_back(b.DimValue(d));
  if (x.rank() == 0) extents.push_back(b.IndexConst(1));
  Val r;
  r.et = "i64";
  r.shape = {Dim::Static(rank), s.count};
  Val& pos = s.positions;
  r.name = b.IndexGeneric(r.shape, "i64", [&](const Args&) {
    std::vector<std::string> rj = b.LoopIndices(2);
    std::string p = b.Fresh(), pi = b.Fresh();
    b.Line(p + " = tensor.extract " + pos.name + "[" + rj[1] + "] : " + Builder::TensorType(pos));
    b.Line(pi + " = arith.index_cast " + p + " : i64 to index");
    // coordinate r = (p / prod(extents[r+1..])) mod extents[r], selected by r
    std::string result = b.ScalarConst("i64", 0), stride = b.IndexConst(1);
    for (int64_t k = rank - 1; k >= 0; --k) {
      std::string q = b.Fresh(), m2 = b.Fresh(), is = b.Fresh(), c64 = b.Fresh();
      b.Line(q + " = arith.divui " + pi + ", " + stride + " : index");
      b.Line(m2 + " = arith.remui " + q + ", " + extents[k] + " : index");
      b.Line(c64 + " = arith.index_cast " + m2 + " : index to i64");
      b.Line(is + " = arith.cmpi eq, " + rj[0] + ", " + b.IndexConst(k) + " : index");
      result = b.Select(is, c64, result, "i64");
      std::string ns = b.Fresh();
      b.Line(ns + " = arith.muli " + stride + ", " + extents[k] + " : index");
      stride = ns;
    }
    return result;
  });
  c.SetOut(0, r);
  return Status::Ok();
}

// The slices of input along `axis` (flattened input without it) whose condition is true; a
// condition shorter than the axis drops the rest.
Status LowerCompress(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& in, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& cond, c.In(1));
  if (cond.rank() != 1) return c.Error("condition must be 1-D");
  Val x = in;
  int64_t axis = 0;
  if (c.HasAttr("axis")) {
    HEXIR_ASSIGN_OR_RETURN(axis, c.NormAxis(c.AttrI("axis", 0), in.rank()));
  } else {
    x = Flat(c, x);
  }
  const Dim& n = x.shape[axis];
  if (!n.dynamic() && !cond.shape[0].dynamic() && cond.shape[0].v > n.v)
    return c.Error("condition has " + std::to_string(cond.shape[0].v) + " entries for a dimension of " +
                   std::to_string(n.v));
  HEXIR_ASSIGN_OR_RETURN(Val m, NonZeroMask(c, cond));
  Selection s = Select(c, m);
  c.Mat(x);
  Shape out = x.shape;
  out[axis] = s.count;
  Val& pos = s.positions;
  Val r;
  r.et = x.et;
  r.shape = out;
  r.is_unsigned = x.is_unsigned;
  r.name = b.IndexGeneric(out, x.et, [&](const Args&) {
    std::vector<std::string> idx = b.LoopIndices(static_cast<int>(out.size()));
    std::string p = b.Fresh(), pi = b.Fresh();
    b.Line(p + " = tensor.extract " + pos.name + "[" + idx[axis] + "] : " + Builder::TensorType(pos));
    b.Line(pi + " = arith.index_cast " + p + " : i64 to index");
    idx[axis] = pi;
    std::string e = b.Fresh();
    b.Line(e + " = tensor.extract " + x.name + "[" + Builder::Join(idx) + "] : " + Builder::TensorType(x));
    return e;
  });
  c.SetOut(0, r);
  return Status::Ok();
}

}  // namespace hexir::importers::onnx
