// ONNX ops whose output extent depends on the data (onnx/defs/tensor): NonZero, Compress,
// Unique. The device computes a selection mask and its inclusive prefix count; the host reads
// the last count back once (`tensor.extract`, the output's `?` extent); a generic then finds
// the position of the j-th selected element (the one whose prefix count is j + 1).
// O(N^2) for the prefix and O(count x N) for the positions.
#include "compiler/importers/onnx/TensorCount.h"

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {

Selection SelectPositions(Context& c, Val& mask) {
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
    std::string last = b.DimValue(b.Sub(n, Dim::Static(1)));
    std::string x = b.ToIndex(b.Extract(prefix, {last}), "i64");
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

namespace {

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
  Selection s = SelectPositions(c, flat);
  int64_t rank = std::max<int64_t>(x.rank(), 1);
  std::vector<std::string> extents;
  for (const Dim& d : x.shape) extents.push_back(b.DimValue(d));
  if (x.rank() == 0) extents.push_back(b.IndexConst(1));
  Val r;
  r.et = "i64";
  r.shape = {Dim::Static(rank), s.count};
  r.name = b.IndexGeneric(r.shape, "i64", [&](const Args&) {
    std::vector<std::string> rj = b.LoopIndices(2);
    std::vector<std::string> coords = b.Delinearize(b.ToIndex(b.Extract(s.positions, {rj[1]}), "i64"), extents);
    std::string result = b.ScalarConst("i64", 0);
    for (int64_t k = 0; k < rank; ++k) {
      std::string is = b.Fresh();
      b.Line(is + " = arith.cmpi eq, " + rj[0] + ", " + b.IndexConst(k) + " : index");
      result = b.Select(is, b.ToI64(coords[k]), result, "i64");
    }
    return result;
  });
  c.SetOut(0, r);
  return Status::Ok();
}

// The slices of input along `axis` (flattened input without it) whose condition is true; a
// condition shorter than the axis drops the rest.
Status LowerCompress(Context& c) {
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
  Selection s = SelectPositions(c, m);
  c.SetOut(0, c.GatherAlong(x, axis, s.positions));
  return Status::Ok();
}

// Unique slices along `axis` (elements of the flattened input without it). Rows are the
// slices ([K, M]: the axis first, the rest flattened); fd[i][j] = the first column where rows
// i and j differ (M when equal), from which equality and lexicographic order follow. A row is
// kept where no earlier row equals it; `sorted` orders the kept rows by value (their rank among
// the kept ones), else by first occurrence. Outputs: the rows, their first indices, each input
// row's output slot (inverse) and the counts. O(K^2 M).
Status LowerUnique(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& in, c.In(0));
  bool sorted = c.AttrI("sorted", 1) != 0;
  bool has_axis = c.HasAttr("axis");
  Val x = in;
  int64_t axis = 0;
  if (has_axis) {
    HEXIR_ASSIGN_OR_RETURN(axis, c.NormAxis(c.AttrI("axis", 0), in.rank()));
  } else {
    x = Flat(c, x);
  }
  c.Mat(x);
  std::vector<int64_t> perm = {axis};
  for (int64_t i = 0; i < x.rank(); ++i)
    if (i != axis) perm.push_back(i);
  Val moved = c.Transpose(x, perm);
  Dim K = x.shape[axis];
  Dim M = b.Product(moved.shape, 1, moved.shape.size());
  HEXIR_ASSIGN_OR_RETURN(Val rows, c.ReshapeTo(moved, {K, M}));
  c.Mat(rows);
  std::string et = rows.et, m_index = b.DimValue(M);
  Shape square = {K, K};
  auto i64 = [&](double v) { return b.ScalarConst("i64", v); };
  // fd[i][j] = min column m where rows[i][m] != rows[j][m] (M when the rows are equal)
  Val fd;
  fd.et = "i64";
  fd.shape = square;
  std::string m64 = b.ToI64(m_index);
  std::string all_equal = b.Fresh();
  b.Line(all_equal + " = linalg.fill ins(" + m64 + " : i64) outs(" + b.Empty(square, "i64") + " : " +
         Builder::TensorType(fd) + ") -> " + Builder::TensorType(fd));
  fd.name = b.Generic({&rows, &rows}, {Builder::Map(3, {"d0", "d2"}), Builder::Map(3, {"d1", "d2"})},
                      Builder::Map(3, {"d0", "d1"}), square, "i64", 3, {"parallel", "parallel", "reduction"}, all_equal,
                      [&](const Args& a) {
                        std::string m = b.ToI64(b.LoopIndices(3)[2]);
                        std::string differ = b.Cmp("une", "ne", a[0], a[1], et);
                        std::string here = b.Select(differ, m, a[2], "i64");
                        return b.Bin("", "arith.minsi", here, a[2], "i64");
                      });
  // Inside a body: rows i and j equal (i1), row j before row i in value (i1).
  auto equal = [&](const std::string& i, const std::string& j) {
    return b.Cmp("", "eq", b.Extract(fd, {i, j}), m64, "i64");
  };
  auto less = [&](const std::string& j, const std::string& i) {
    std::string d = b.Extract(fd, {j, i});
    std::string differ = b.Cmp("", "slt", d, m64, "i64");
    std::string col = b.Select(differ, b.ToIndex(d, "i64"), b.IndexConst(0), "index");
    std::string lt = b.Cmp("olt", "slt", b.Extract(rows, {j, col}), b.Extract(rows, {i, col}), et);
    return b.AndI1(differ, lt);
  };
  // first[i] = 1 when no earlier row equals row i
  Val first;
  first.et = "i64";
  first.shape = {K};
  first.name = b.Generic({&fd}, {Builder::Map(2, {"d0", "d1"})}, Builder::Map(2, {"d0"}), first.shape, "i64", 2,
                         {"parallel", "reduction"}, b.Filled(first.shape, "i64", 1), [&](const Args& a) {
                           std::vector<std::string> ij = b.LoopIndices(2);
                           std::string earlier = b.Fresh();
                           b.Line(earlier + " = arith.cmpi ult, " + ij[1] + ", " + ij[0] + " : index");
                           std::string dup = b.AndI1(earlier, b.Cmp("", "eq", a[0], m64, "i64"));
                           return b.Select(dup, i64(0), a[1], "i64");
                         });
  Selection s = SelectPositions(c, first);
  Val pos = s.positions;  // kept rows in order of first occurrence
  if (sorted) {
    // key[i] = #{kept j: row j < row i}; pos[u] = the kept i whose key is u
    Val key;
    key.et = "i64";
    key.shape = {K};
    key.name = b.Generic({&first}, {Builder::Map(2, {"d1"})}, Builder::Map(2, {"d0"}), key.shape, "i64", 2,
                         {"parallel", "reduction"}, b.Filled(key.shape, "i64", 0), [&](const Args& a) {
                           std::vector<std::string> ij = b.LoopIndices(2);
                           std::string kept = b.Cmp("", "ne", a[0], i64(0), "i64");
                           std::string before = b.AndI1(kept, less(ij[1], ij[0]));
                           return b.Bin("", "arith.addi", a[1], b.Convert(before, "i1", "i64"), "i64");
                         });
    pos.name = b.Generic({&first, &key}, {Builder::Map(2, {"d1"}), Builder::Map(2, {"d1"})}, Builder::Map(2, {"d0"}),
                         pos.shape, "i64", 2, {"parallel", "reduction"}, b.Filled(pos.shape, "i64", 0),
                         [&](const Args& a) {
                           std::vector<std::string> ui = b.LoopIndices(2);
                           std::string kept = b.Cmp("", "ne", a[0], i64(0), "i64");
                           std::string hit = b.AndI1(kept, b.Cmp("", "eq", a[1], b.ToI64(ui[0]), "i64"));
                           return b.Select(hit, b.ToI64(ui[1]), a[2], "i64");
                         });
  }
  c.Mat(pos);
  c.SetOut(0, c.GatherAlong(x, axis, pos));
  c.SetOut(1, pos);
  // inverse[i] = the output slot u whose row equals row i
  Val inverse;
  inverse.et = "i64";
  inverse.shape = {K};
  inverse.name = b.Generic({&pos}, {Builder::Map(2, {"d1"})}, Builder::Map(2, {"d0"}), inverse.shape, "i64", 2,
                           {"parallel", "reduction"}, b.Filled(inverse.shape, "i64", 0), [&](const Args& a) {
                             std::vector<std::string> iu = b.LoopIndices(2);
                             std::string hit = equal(iu[0], b.ToIndex(a[0], "i64"));
                             return b.Select(hit, b.ToI64(iu[1]), a[1], "i64");
                           });
  c.SetOut(2, inverse);
  // counts[u] = #{i: row i equals row pos[u]}
  Val counts;
  counts.et = "i64";
  counts.shape = pos.shape;
  // (first only bounds the i loop)
  counts.name = b.Generic({&pos, &first}, {Builder::Map(2, {"d0"}), Builder::Map(2, {"d1"})}, Builder::Map(2, {"d0"}),
                          counts.shape, "i64", 2, {"parallel", "reduction"}, b.Filled(counts.shape, "i64", 0),
                          [&](const Args& a) {
                            std::vector<std::string> ui = b.LoopIndices(2);
                            std::string hit = equal(ui[1], b.ToIndex(a[0], "i64"));
                            return b.Bin("", "arith.addi", a[2], b.Convert(hit, "i1", "i64"), "i64");
                          });
  c.SetOut(3, counts);
  return Status::Ok();
}

}  // namespace hexir::importers::onnx
