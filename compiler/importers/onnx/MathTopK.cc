// ONNX TopK (onnx/defs/math) as three generics, no sort: each element's rank along the axis
// (how many elements come before it: larger, or equal at a lower index; smaller for
// largest=0), then for output slot j the index whose rank is j (a reduction over the axis),
// then the values read at those indices. Ties keep the lower index first, as ONNX specifies;
// the output is sorted whatever `sorted` says. O(n^2) along the axis.
#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {
namespace {

// k may be a host value (detection heads take min(pre_nms_top_n, anchors left), a count
// known at run time): then 0 <= k <= the axis' extent is checked on the host.
Status TopKWith(Context& c, const Dim& k) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  int64_t r = x.rank();
  HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(c.AttrI("axis", -1), r));
  bool largest = c.AttrI("largest", 1) != 0;
  const Dim& n = x.shape[axis];
  if (!k.dynamic() && (k.v < 0 || (!n.dynamic() && k.v > n.v)))
    return c.Error("k = " + std::to_string(k.v) + " is outside [0, " + (n.dynamic() ? "?" : std::to_string(n.v)) + "]");
  if (k.dynamic() || n.dynamic()) {
    const std::string kv = b.DimValue(k), lo = b.Fresh(), hi = b.Fresh(), ok = b.Fresh();
    b.Line(lo + " = arith.cmpi sge, " + kv + ", " + b.IndexConst(0) + " : index");
    b.Line(hi + " = arith.cmpi sle, " + kv + ", " + b.DimValue(n) + " : index");
    b.Line(ok + " = arith.andi " + lo + ", " + hi + " : i1");
    b.CheckIndex(ok, c.Error("").message() + "k = ", kv,
                 " is outside [0, the extent of axis " + std::to_string(axis) + "]");
    if (k.dynamic()) b.MarkNonNegative(k.ssa);
  }
  c.Mat(x);
  std::string et = x.et;
  int loops = static_cast<int>(r + 1);
  std::string da = "d" + std::to_string(axis), dr = "d" + std::to_string(r);
  std::vector<std::string> same, along, iters(r, "parallel");
  for (int64_t i = 0; i < r; ++i) {
    same.push_back("d" + std::to_string(i));
    along.push_back(i == axis ? dr : "d" + std::to_string(i));
  }
  iters.push_back("reduction");
  // rank[p] = #{e along the axis: x[e] before x[p]}.
  Val rank;
  rank.et = "i64";
  rank.shape = x.shape;
  std::string zeros = b.Filled(x.shape, "i64", 0);
  rank.name = b.Generic({&x, &x}, {Builder::Map(loops, same), Builder::Map(loops, along)}, Builder::Map(loops, same),
                        x.shape, "i64", loops, iters, zeros, [&](const Args& a) {
                          std::string p = b.Fresh(), e = b.Fresh(), lower = b.Fresh();
                          b.Line(p + " = linalg.index " + std::to_string(axis) + " : index");
                          b.Line(e + " = linalg.index " + std::to_string(r) + " : index");
                          b.Line(lower + " = arith.cmpi ult, " + e + ", " + p + " : index");
                          std::string beats = largest ? b.Cmp("ogt", x.is_unsigned ? "ugt" : "sgt", a[1], a[0], et)
                                                      : b.Cmp("olt", x.is_unsigned ? "ult" : "slt", a[1], a[0], et);
                          std::string tie = b.Cmp("oeq", "eq", a[1], a[0], et);
                          std::string before = b.Bin("", "arith.ori", beats, b.Bin("", "arith.andi", tie, lower, "i1"), "i1");
                          std::string one = b.Convert(before, "i1", "i64");
                          return b.Bin("", "arith.addi", a[2], one, "i64");
                        });
  // indices[.., j, ..] = the e whose rank is j.
  Shape out = x.shape;
  out[axis] = k;
  Val indices;
  indices.et = "i64";
  indices.shape = out;
  std::string none = b.Filled(out, "i64", 0);
  indices.name = b.Generic({&rank}, {Builder::Map(loops, along)}, Builder::Map(loops, same), out, "i64", loops,
                           iters, none, [&](const Args& a) {
                             std::string j = b.Fresh(), j64 = b.Fresh(), e = b.Fresh(), e64 = b.Fresh();
                             b.Line(j + " = linalg.index " + std::to_string(axis) + " : index");
                             b.Line(j64 + " = arith.index_cast " + j + " : index to i64");
                             b.Line(e + " = linalg.index " + std::to_string(r) + " : index");
                             b.Line(e64 + " = arith.index_cast " + e + " : index to i64");
                             std::string hit = b.Cmp("", "eq", a[0], j64, "i64");
                             return b.Select(hit, e64, a[1], "i64");
                           });
  Val values;
  values.et = et;
  values.shape = out;
  values.name = b.Generic({&indices}, {Builder::IdentityMap(static_cast<int>(r))}, Builder::IdentityMap(static_cast<int>(r)),
                          out, et, static_cast<int>(r), std::vector<std::string>(r, "parallel"), "",
                          [&](const Args& a) {
                            std::vector<std::string> idx = b.LoopIndices(static_cast<int>(r));
                            std::string at = b.Fresh(), v = b.Fresh();
                            b.Line(at + " = arith.index_cast " + a[0] + " : i64 to index");
                            idx[axis] = at;
                            b.Line(v + " = tensor.extract " + x.name + "[" + Builder::Join(idx) + "] : " +
                                   Builder::TensorType(x));
                            return v;
                          });
  c.SetOut(0, values);
  c.SetOut(1, indices);
  return Status::Ok();
}

}  // namespace

Status LowerTopKWithAttribute(Context& c) { return TopKWith(c, Dim::Static(c.AttrI("k", -1))); }

Status LowerTopK(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& k_in, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val k, c.ShapeOperand(k_in, "k"));
  if (k.ints.size() != 1) return c.Error("k must hold one value");
  return TopKWith(c, k.ints[0]);
}

}  // namespace hexir::importers::onnx
