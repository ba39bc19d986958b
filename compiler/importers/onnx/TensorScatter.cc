// ONNX scatters (onnx/defs/tensor): ScatterElements (and the older Scatter) and ScatterND as one
// generic over (output positions, update positions): output dims parallel, update dims a
// reduction whose body folds every update aimed at the output position into it (none: the
// last one wins, as the reduction runs in order; add, mul, max, min). Starting from a copy of
// data. O(output x updates) work: meant for the small index sets models scatter. An index
// outside [-n, n) fails the call (out_of_range naming the kernel, the index after the + n and
// n): its target position is read from a table of positions with a data-dependent index,
// which the compiled kernel bounds-checks (passes/codegen/KernelChecks.h); compared directly
// with the output position it would match none and the update would be dropped silently.
#include <functional>
#include <optional>

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {
namespace {

bool KnownReduction(const std::string& r) {
  return r == "none" || r == "add" || r == "mul" || r == "max" || r == "min";
}

// acc combined with an update u under `reduction`.
StatusOr<std::string> Combine(Context& c, const std::string& reduction, const std::string& acc,
                              const std::string& u, const std::string& et) {
  Builder& b = c.b;
  if (!KnownReduction(reduction)) return c.Error("reduction '" + reduction + "' is not supported");
  if (reduction == "none") return u;
  if (reduction == "add") return b.Bin("arith.addf", "arith.addi", acc, u, et);
  if (reduction == "mul") return b.Bin("arith.mulf", "arith.muli", acc, u, et);
  if (reduction == "max") return b.Bin("arith.maximumf", "arith.maxsi", acc, u, et);
  return b.Bin("arith.minimumf", "arith.minsi", acc, u, et);  // min
}

// An index value (of integer type it) as an index, negative ones counted from the end (n).
std::string NormalizedIndex(Builder& b, const std::string& v, const std::string& it, const std::string& n) {
  std::string iv = b.Fresh(), neg = b.Fresh(), w = b.Fresh(), s = b.Fresh();
  b.Line(iv + " = arith.index_cast " + v + " : " + it + " to index");
  b.Line(neg + " = arith.cmpi slt, " + iv + ", " + b.IndexConst(0) + " : index");
  b.Line(w + " = arith.addi " + iv + ", " + n + " : index");
  b.Line(s + " = arith.select " + neg + ", " + w + ", " + iv + " : index");
  return s;
}

// The positions 0..n-1 of a dim as i64, read at an index's normalized value: equal to it
// when it lies in [0, n), a bounds-checked read (a named error) otherwise.
Val Positions(Context& c, const Dim& n) {
  Builder& b = c.b;
  Val v;
  v.et = "i64";
  v.shape = {n};
  v.name = b.IndexGeneric(v.shape, v.et, [&](const std::vector<std::string>&) {
    std::string i = b.LoopIndices(1)[0], p = b.Fresh();
    b.Line(p + " = arith.index_cast " + i + " : index to i64");
    return p;
  });
  return v;
}

// The output position an index value (of integer type it) targets along a dim of extent n
// (`positions`: Positions(n)), as an index.
std::string TargetPosition(Builder& b, const Val& positions, const std::string& v, const std::string& it,
                           const std::string& n) {
  return b.ToIndex(b.Extract(positions, {NormalizedIndex(b, v, it, n)}), "i64");
}

// The updates' position that data position `p` reads off the axis (p[axis] kept): p where
// data and updates have one extent, else p clamped to 0 past the updates' extent, with
// `inside` and-ed with p < that extent (a real update's position: none is empty here).
std::vector<std::string> UpdatePosition(Builder& b, std::vector<std::string> p, const Val& data, const Val& upd,
                                        int64_t axis, std::string& inside) {
  for (int64_t j = 0; j < data.rank(); ++j) {
    const Dim &dj = data.shape[j], &uj = upd.shape[j];
    if (j == axis || (!dj.dynamic() && !uj.dynamic() && dj.v == uj.v)) continue;
    std::string in = b.Fresh(), clamped = b.Fresh();
    b.Line(in + " = arith.cmpi ult, " + p[j] + ", " + b.DimValue(uj) + " : index");
    b.Line(clamped + " = arith.select " + in + ", " + p[j] + ", " + b.IndexConst(0) + " : index");
    p[j] = clamped;
    inside = b.AndI1(inside, in);
  }
  return p;
}

// A copy of data: the generic's init, which it updates.
StatusOr<Val> CopyOf(Context& c, Val& data) {
  return c.Elementwise({&data}, data.et, [](const Args& a) { return a[0]; });
}

// Output 0: `scatter`'s result, or data itself where there are `count` = 0 updates (decided
// at import, or by a host `scf.if` on a run-time count: a detection level without boxes),
// as the scatters' loops would read positions of the empty updates.
Status SetScatteredUnlessEmpty(Context& c, Val& data, const Dim& count, const std::function<StatusOr<Val>()>& scatter) {
  Builder& b = c.b;
  if (!count.dynamic() && count.v != 0) return c.SetOut(0, scatter());
  if (!count.dynamic()) {
    c.SetOut(0, data);
    return Status::Ok();
  }
  c.Mat(data);
  std::string none = b.Fresh();
  b.Line(none + " = arith.cmpi eq, " + b.DimValue(count) + ", " + b.IndexConst(0) + " : index");
  Status failed = Status::Ok();
  Val out;
  out.et = data.et;
  out.shape = data.shape;
  out.name = b.XOr(none, data, Builder::TensorType(data), [&] {
    StatusOr<Val> scattered = scatter();
    if (!scattered.ok()) failed = scattered.status();
    return scattered.ok() ? scattered->name : data.name;
  });
  HEXIR_RETURN_IF_ERROR(failed);
  c.SetOut(0, out);
  return Status::Ok();
}

// Output position p folds in, in order, the updates u equal to p off the axis whose index
// aims at p[axis]: loops over p (parallel) and u[axis] (a reduction), O(output x the axis'
// update extent). Updates may be smaller than data off the axis: positions past them take
// none. (Folding every update into every output element, O(output x updates), took minutes
// on Faster R-CNN's RoI features: 1000 x 256 x 7 x 7 updates.)
StatusOr<Val> ScatterElementsAlongAxis(Context& c, Val& data, Val& ind, Val& upd, int64_t axis,
                                       const std::string& reduction) {
  Builder& b = c.b;
  const int64_t r = data.rank();
  HEXIR_ASSIGN_OR_RETURN(Val init, CopyOf(c, data));
  Val positions = Positions(c, data.shape[axis]);
  std::string n = b.DimValue(data.shape[axis]), et = data.et, it = ind.et;
  const int loops = static_cast<int>(r + 1);
  std::vector<std::string> out_map, ind_map, iters;
  for (int64_t i = 0; i < r; ++i) {
    out_map.push_back("d" + std::to_string(i));
    ind_map.push_back(i == axis ? "d" + std::to_string(r) : "0");  // u[axis]'s extent
    iters.push_back("parallel");
  }
  iters.push_back("reduction");
  Status combine_error = Status::Ok();
  Val out;
  out.et = et;
  out.shape = data.shape;
  out.name = b.Generic({&ind}, {Builder::Map(loops, ind_map)}, Builder::Map(loops, out_map), data.shape, et, loops,
                       iters, init.name, [&](const Args& a) {
                         std::vector<std::string> idx = b.LoopIndices(loops);
                         std::string inside;
                         std::vector<std::string> u = UpdatePosition(
                             b, std::vector<std::string>(idx.begin(), idx.begin() + r), data, upd, axis, inside);
                         u[axis] = idx[r];
                         std::string hit = b.Fresh();
                         b.Line(hit + " = arith.cmpi eq, " + TargetPosition(b, positions, b.Extract(ind, u), it, n) +
                                ", " + idx[axis] + " : index");
                         hit = b.AndI1(inside, hit);
                         auto v = Combine(c, reduction, a[1], b.Extract(upd, u), et);
                         if (!v.ok()) {
                           combine_error = v.status();
                           return a[1];
                         }
                         return b.Select(hit, *v, a[1], et);
                       });
  HEXIR_RETURN_IF_ERROR(combine_error);
  return out;
}

// ScatterElements without a reduction whose indices broadcast a smaller `source` (Expand's
// input, c.broadcast_sources: PyTorch's index_put of rows, an index of [n, 1, 1, 1] expanded
// to the updates' [n, C, H, W]; Faster R-CNN's RoI features per pyramid level), or nullopt
// where its dims do not allow it. First, per output position along the axis and per
// position of the dims the index varies along, the last update aimed at it (-1: none; a
// reduction over the axis' updates in order), then each output element is its winner's
// update or data's: O(axis positions x source + output) work, against O(output x the axis'
// updates) for ScatterElementsAlongAxis (Faster R-CNN's 1000 x 256 x 7 x 7: 94% of the call).
std::optional<StatusOr<Val>> ScatterElementsOfBroadcastIndices(Context& c, Val& data, Val& source, Val& ind,
                                                               Val& upd, int64_t axis) {
  Builder& b = c.b;
  const int64_t r = data.rank(), off = r - source.rank();
  auto is_one = [](const Dim& d) { return !d.dynamic() && d.v == 1; };
  // The source's updates along the axis must be the indices' (one index each).
  if (off < 0 || axis < off || !b.SameProduct(source.shape, axis - off, axis - off + 1, ind.shape, axis, axis + 1))
    return std::nullopt;
  // collapsed[j]: the index is the same at every position of dim j (no source dim, or 1).
  std::vector<bool> collapsed(r);
  bool any = false;
  for (int64_t j = 0; j < r; ++j) {
    collapsed[j] = j != axis && (j < off || is_one(source.shape[j - off]));
    any = any || (collapsed[j] && !is_one(ind.shape[j]));
  }
  if (!any) return std::nullopt;
  Val positions = Positions(c, data.shape[axis]);
  const std::string n = b.DimValue(data.shape[axis]);
  const int loops = static_cast<int>(r + 1);
  Shape table;
  std::vector<std::string> table_map, source_map, iters;
  for (int64_t j = 0; j < r; ++j) {
    table.push_back(j == axis ? data.shape[j] : collapsed[j] ? Dim::Static(1) : ind.shape[j]);
    table_map.push_back("d" + std::to_string(j));
    iters.push_back("parallel");
    if (j >= off) source_map.push_back(j == axis ? "d" + std::to_string(r) : "0");
  }
  iters.push_back("reduction");
  Val winner;
  winner.et = "i64";
  winner.shape = table;
  winner.name = b.Generic({&source}, {Builder::Map(loops, source_map)}, Builder::Map(loops, table_map), table, "i64",
                          loops, iters, b.Filled(table, "i64", -1), [&](const Args& a) {
                            std::vector<std::string> idx = b.LoopIndices(loops), at;
                            for (int64_t j = off; j < r; ++j) {
                              const Dim& d = source.shape[j - off];
                              if (j == axis) {
                                at.push_back(idx[r]);
                              } else if (collapsed[j]) {
                                at.push_back(b.IndexConst(0));
                              } else if (b.SameProduct(source.shape, j - off, j - off + 1, ind.shape, j, j + 1)) {
                                at.push_back(idx[j]);
                              } else {  // a run-time extent: 1 (broadcast along j) or the indices'
                                std::string one = b.Fresh(), pick = b.Fresh();
                                b.Line(one + " = arith.cmpi eq, " + b.DimValue(d) + ", " + b.IndexConst(1) + " : index");
                                b.Line(pick + " = arith.select " + one + ", " + b.IndexConst(0) + ", " + idx[j] + " : index");
                                at.push_back(pick);
                              }
                            }
                            std::string hit = b.Fresh();
                            b.Line(hit + " = arith.cmpi eq, " +
                                   TargetPosition(b, positions, b.Extract(source, at), source.et, n) + ", " +
                                   idx[axis] + " : index");
                            return b.Select(hit, b.ToI64(idx[r]), a[1], "i64");
                          });
  return c.Elementwise({&data}, data.et, [&](const Args& a) {
    std::string inside;
    std::vector<std::string> at = UpdatePosition(b, b.LoopIndices(static_cast<int>(r)), data, upd, axis, inside),
                             w_at = at;
    for (int64_t j = 0; j < r; ++j)
      if (collapsed[j]) w_at[j] = b.IndexConst(0);
    std::string w = b.Extract(winner, w_at), zero = b.ScalarConst("i64", 0);
    std::string hit = b.AndI1(inside, b.Cmp("", "sge", w, zero, "i64"));
    at[axis] = b.ToIndex(b.Select(hit, w, zero, "i64"), "i64");
    return b.Select(hit, b.Extract(upd, at), a[0], data.et);
  });
}

Status ScatterElementsWith(Context& c, const std::string& reduction) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& data, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& ind, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val& upd, c.In(2));
  int64_t r = data.rank();
  HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(c.AttrI("axis", 0), r));
  if (ind.rank() != r || upd.rank() != r) return c.Error("data, indices and updates must have one rank");
  if (upd.et != data.et) return c.Error("updates must have the element type of data");
  if (!KnownReduction(reduction)) return c.Error("reduction '" + reduction + "' is not supported");
  c.Mat(ind);
  c.Mat(upd);
  auto source = c.broadcast_sources.find(ind.name);
  return SetScatteredUnlessEmpty(c, data, b.Product(upd.shape, 0, static_cast<size_t>(r)), [&]() -> StatusOr<Val> {
    if (reduction == "none" && source != c.broadcast_sources.end())
      if (std::optional<StatusOr<Val>> v = ScatterElementsOfBroadcastIndices(c, data, source->second, ind, upd, axis))
        return std::move(*v);
    return ScatterElementsAlongAxis(c, data, ind, upd, axis, reduction);
  });
}

// ScatterND without a reduction, the last update aimed at a position winning: first, per
// position of the k indexed dims, the number of the last index tuple aimed at it (-1: none; a
// reduction over the tuples in order), then each output element is its winner's update or
// data's. O(positions of the k dims x tuples + output) work, where folding each update into
// each output element (the reductions' form below) is O(output x tuples): Faster R-CNN's
// RoI features, a [boxes, 256, 7, 7] index_put per pyramid level, took minutes.
StatusOr<Val> ScatterNDLastWins(Context& c, Val& data, Val& ind, Val& upd, int64_t k,
                                const std::vector<Val>& positions, const std::vector<std::string>& dims) {
  Builder& b = c.b;
  const int64_t r = data.rank(), qr = ind.rank() - 1;
  const Shape indexed(data.shape.begin(), data.shape.begin() + k);
  const int loops = static_cast<int>(k + qr);
  std::vector<std::string> out_map, ind_map, iters;
  for (int64_t i = 0; i < k; ++i) out_map.push_back("d" + std::to_string(i));
  for (int64_t i = 0; i < qr; ++i) ind_map.push_back("d" + std::to_string(k + i));
  ind_map.push_back("0");  // the tuples' loops take their extents from indices
  for (int i = 0; i < loops; ++i) iters.push_back(i < k ? "parallel" : "reduction");
  std::vector<std::string> tuple_extents;
  for (int64_t i = 0; i < qr; ++i) tuple_extents.push_back(b.DimValue(ind.shape[i]));
  Val winner;
  winner.et = "i64";
  winner.shape = indexed;
  winner.name = b.Generic({&ind}, {Builder::Map(loops, ind_map)}, Builder::Map(loops, out_map), indexed, "i64",
                          loops, iters, b.Filled(indexed, "i64", -1), [&](const Args& a) {
                            std::vector<std::string> idx = b.LoopIndices(loops);
                            std::vector<std::string> q(idx.begin() + k, idx.end());
                            std::string hit;
                            for (int64_t m = 0; m < k; ++m) {
                              std::vector<std::string> at = q;
                              at.push_back(b.IndexConst(m));
                              std::string same = b.Fresh();
                              b.Line(same + " = arith.cmpi eq, " +
                                     TargetPosition(b, positions[m], b.Extract(ind, at), ind.et, dims[m]) + ", " +
                                     idx[m] + " : index");
                              hit = b.AndI1(hit, same);
                            }
                            return b.Select(hit, b.ToI64(b.Linearize(q, tuple_extents)), a[1], "i64");
                          });
  return c.Elementwise({&data}, data.et, [&](const Args& a) {
    std::vector<std::string> idx = b.LoopIndices(static_cast<int>(r));
    std::string w = b.Extract(winner, std::vector<std::string>(idx.begin(), idx.begin() + k));
    std::string zero = b.ScalarConst("i64", 0);
    std::string hit = b.Cmp("", "sge", w, zero, "i64");
    std::vector<std::string> at = b.Delinearize(b.ToIndex(b.Select(hit, w, zero, "i64"), "i64"), tuple_extents);
    for (int64_t i = k; i < r; ++i) at.push_back(idx[i]);
    return b.Select(hit, b.Extract(upd, at), a[0], data.et);
  });
}

}  // namespace

Status LowerScatter(Context& c) { return ScatterElementsWith(c, "none"); }

Status LowerScatterElements(Context& c) { return ScatterElementsWith(c, c.AttrS("reduction", "none")); }

// updates[q..., rest...] goes to data[indices[q..., 0..k-1], rest...].
Status LowerScatterND(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& data, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& ind, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val& upd, c.In(2));
  std::string reduction = c.AttrS("reduction", "none");
  int64_t r = data.rank(), qr = ind.rank() - 1;
  if (qr < 0 || ind.shape[qr].dynamic()) return c.Error("the last indices dim must be static");
  int64_t k = ind.shape[qr].v;
  if (k < 1 || k > r || upd.rank() != qr + r - k) return c.Error("indices and updates do not fit the data rank");
  if (upd.et != data.et) return c.Error("updates must have the element type of data");
  c.Mat(ind);
  c.Mat(upd);
  std::vector<std::string> dims;
  for (const Dim& d : data.shape) dims.push_back(b.DimValue(d));
  std::vector<Val> positions;
  for (int64_t m = 0; m < k; ++m) positions.push_back(Positions(c, data.shape[m]));
  if (reduction == "none")
    return SetScatteredUnlessEmpty(c, data, b.Product(ind.shape, 0, static_cast<size_t>(qr)), [&] {
      return ScatterNDLastWins(c, data, ind, upd, k, positions, dims);
    });
  HEXIR_ASSIGN_OR_RETURN(Val init, CopyOf(c, data));
  std::string et = data.et, it = ind.et;
  int loops = static_cast<int>(r + qr);
  // Loops: output positions (r), then index tuples q (qr, reductions); updates[q..., out[k:]...].
  std::vector<std::string> out_map, upd_map, iters;
  for (int64_t i = 0; i < r; ++i) out_map.push_back("d" + std::to_string(i));
  for (int64_t i = 0; i < qr; ++i) upd_map.push_back("d" + std::to_string(r + i));
  for (int64_t i = k; i < r; ++i) upd_map.push_back("d" + std::to_string(i));
  for (int64_t i = 0; i < loops; ++i) iters.push_back(i < r ? "parallel" : "reduction");
  Status combine_error = Status::Ok();
  Val out;
  out.et = et;
  out.shape = data.shape;
  out.name = b.Generic({&upd}, {Builder::Map(loops, upd_map)}, Builder::Map(loops, out_map), data.shape, et,
                       loops, iters, init.name, [&](const Args& a) {
                         std::vector<std::string> idx = b.LoopIndices(loops);
                         std::string hit;
                         for (int64_t m = 0; m < k; ++m) {
                           std::vector<std::string> at(idx.begin() + r, idx.end());
                           at.push_back(b.IndexConst(m));
                           std::string v = b.Fresh(), same = b.Fresh();
                           b.Line(v + " = tensor.extract " + ind.name + "[" + Builder::Join(at) + "] : " +
                                  Builder::TensorType(ind));
                           b.Line(same + " = arith.cmpi eq, " + TargetPosition(b, positions[m], v, it, dims[m]) +
                                  ", " + idx[m] + " : index");
                           hit = b.AndI1(hit, same);
                         }
                         auto v = Combine(c, reduction, a[1], a[0], et);
                         if (!v.ok()) {
                           combine_error = v.status();
                           return a[1];
                         }
                         return b.Select(hit, *v, a[1], et);
                       });
  HEXIR_RETURN_IF_ERROR(combine_error);
  c.SetOut(0, out);
  return Status::Ok();
}

}  // namespace hexir::importers::onnx
