// ONNX tensor ops that read their source at computed positions (onnx/defs/tensor): the output
// is a generic over its own shape whose body reads the source with tensor.extract at clamped,
// selected or gathered indices (an affine input map would make linalg infer the loop ranges
// from the larger source). Known 1-D integer contents (shape values) fold at import time.
#include <algorithm>
#include <climits>

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {
namespace {

// out[i] = x[start + i * step] per dim, read with tensor.extract (an affine input map would
// make linalg infer the loop ranges from the larger input). A dynamic start is a host index.
Val StridedCopy(Context& c, Val& x, const Shape& out, const std::vector<Dim>& start,
                const std::vector<int64_t>& step) {
  Builder& b = c.b;
  c.Mat(x);
  int loops = static_cast<int>(out.size());
  Val r;
  r.et = x.et;
  r.shape = out;
  r.name = b.IndexGeneric(out, x.et, [&](const Args&) {
                       std::string list;
                       for (int i = 0; i < loops; ++i) {
                         std::string idx = b.Fresh();
                         b.Line(idx + " = linalg.index " + std::to_string(i) + " : index");
                         if (step[i] != 1) {
                           std::string m = b.Fresh();
                           b.Line(m + " = arith.muli " + idx + ", " + b.IndexConst(step[i]) + " : index");
                           idx = m;
                         }
                         if (start[i].dynamic() || start[i].v != 0) {
                           std::string a = b.Fresh();
                           b.Line(a + " = arith.addi " + idx + ", " + b.DimValue(start[i]) + " : index");
                           idx = a;
                         }
                         list += (i ? ", " : "") + idx;
                       }
                       std::string e = b.Fresh();
                       b.Line(e + " = tensor.extract " + x.name + "[" + list + "] : " +
                              Builder::TensorType(x));
                       return e;
                     });
  return r;
}

std::vector<Dim> StaticDims(const std::vector<int64_t>& v) {
  std::vector<Dim> r;
  for (int64_t x : v) r.push_back(Dim::Static(x));
  return r;
}

// x[starts:ends:steps] on `axes` (default: the first starts.size() dims), clamped like numpy.
// Starts, ends and extents may be host values (read at run time): the same clamping as
// host index arithmetic (steps must be constants).
Status SliceWith(Context& c, Val& x, std::vector<Dim> starts, std::vector<Dim> ends,
                 std::vector<int64_t> axes, std::vector<int64_t> steps) {
  Builder& b = c.b;
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return c.Error("starts, ends, axes and steps have different lengths");
  int64_t rank = x.rank();
  std::vector<Dim> start(rank, Dim::Static(0)), size = x.shape;
  std::vector<int64_t> step(rank, 1);
  bool static_slice = true;
  for (size_t k = 0; k < axes.size(); ++k) {
    HEXIR_ASSIGN_OR_RETURN(int64_t a, c.NormAxis(axes[k], rank));
    int64_t sp = steps[k];
    if (sp == 0) return c.Error("step 0");
    step[a] = sp;
    const Dim& n = x.shape[a];
    Dim zero = Dim::Static(0);
    // v < 0 ? v + n : v, clamped to [lo, n + hi_offset].
    auto wrap_clamp = [&](const Dim& v, int64_t lo, int64_t hi_offset) {
      Dim w = b.SelectDim(b.Compare("slt", v, zero), b.Add(v, n), v);
      return b.Max(b.Min(w, b.Add(n, Dim::Static(hi_offset))), Dim::Static(lo));
    };
    Dim st = sp > 0 ? wrap_clamp(starts[k], 0, 0) : wrap_clamp(starts[k], 0, -1);
    Dim en = sp > 0 ? wrap_clamp(ends[k], 0, 0) : wrap_clamp(ends[k], -1, -1);
    Dim span = sp > 0 ? b.Sub(en, st) : b.Sub(st, en);
    int64_t as = sp > 0 ? sp : -sp;
    Dim cnt = b.Max(b.TruncDiv(b.Add(span, Dim::Static(as - 1)), Dim::Static(as)), zero);
    for (const Dim* d : {&st, &cnt})
      if (d->dynamic()) b.MarkNonNegative(d->ssa);
    static_slice = static_slice && !st.dynamic() && !cnt.dynamic();
    start[a] = st;
    size[a] = cnt;
  }
  if (IsKnown(x) && static_slice) {
    std::vector<int64_t> st;
    for (const Dim& d : start) st.push_back(d.v);
    std::vector<int64_t> in = StaticExtents(x.shape);
    c.SetOut(0, KnownPositions(x, StaticExtents(size), [&](const std::vector<int64_t>& pos) {
      int64_t flat = 0;
      for (int64_t i = 0; i < rank; ++i) flat = flat * in[i] + st[i] + pos[i] * step[i];
      return flat;
    }));
    return Status::Ok();
  }
  c.SetOut(0, StridedCopy(c, x, size, start, step));
  return Status::Ok();
}

// Constant operand `i` as integers; absent: empty.
StatusOr<std::vector<int64_t>> OptionalInts(Context& c, int i, const char* what) {
  if (!c.HasIn(i)) return std::vector<int64_t>();
  HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(i));
  return c.ConstInts(v, what);
}

// Split sizes into x.shape[axis] slices (default: equal, the last one smaller). A dim known
// only at run time splits too: into the given sizes, checked at run time to sum to it (PyTorch's
// `list(x)` over a dynamic batch: one slice of 1), or into equal slices of run-time extent.
Status SplitWith(Context& c, Val& x, int64_t axis, std::vector<int64_t> sizes) {
  Builder& b = c.b;
  const int n = c.node->output_size();
  const Dim& extent = x.shape[axis];
  std::vector<Dim> dims;
  if (sizes.empty()) {
    // ceil(extent / n) each, the rest to the last: max(0, min(each, extent - each i)).
    Dim each = b.FloorDiv(b.Add(extent, Dim::Static(n - 1)), Dim::Static(n));
    for (int i = 0; i < n; ++i)
      dims.push_back(b.Max(Dim::Static(0), b.Min(each, b.Sub(extent, b.Mul(each, Dim::Static(i))))));
  } else {
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) return c.Error("split sizes must not be negative");
      total += s;
      dims.push_back(Dim::Static(s));
    }
    if (static_cast<int>(sizes.size()) != n || (!extent.dynamic() && total != extent.v))
      return c.Error("split sizes do not match the outputs and the dimension");
    if (extent.dynamic()) {
      std::string ok = b.Fresh(), v = b.DimValue(extent);
      b.Line(ok + " = arith.cmpi eq, " + v + ", " + b.IndexConst(total) + " : index");
      b.CheckIndex(ok, c.Error("").message() + "dimension " + std::to_string(axis) + " is ", v,
                   " where the split sizes sum to " + std::to_string(total));
    }
  }
  Dim offset = Dim::Static(0);
  for (int i = 0; i < n; ++i) {
    Shape out = x.shape;
    out[axis] = dims[i];
    std::vector<Dim> st(x.rank(), Dim::Static(0));
    std::vector<int64_t> sp(x.rank(), 1);
    st[axis] = offset;
    c.SetOut(i, StridedCopy(c, x, out, st, sp));
    offset = b.Add(offset, dims[i]);
  }
  return Status::Ok();
}

// Pads x by pads (begin[rank], end[rank]) in mode constant (with value), edge, reflect or
// wrap (opset 19).
Status PadWith(Context& c, Val& x, const std::vector<Dim>& pads, double value) {
  std::string mode = c.AttrS("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
    return c.Error("mode '" + mode + "' is not supported");
  int64_t r = x.rank();
  if (static_cast<int64_t>(pads.size()) != 2 * r) return c.Error("pads must have 2 * rank entries");
  std::vector<Dim> pb, pe;
  for (int64_t i = 0; i < r; ++i) {
    pb.push_back(pads[i]);
    pe.push_back(pads[r + i]);
  }
  c.SetOut(0, c.Pad(x, pb, pe, mode, value));
  return Status::Ok();
}

}  // namespace

// Known 1-D contents concatenate at import time; otherwise each output position reads the
// input whose [offset, offset + size) range holds it (clamped extracts, selected by position;
// an input of run-time extent along the axis read only where that extent is not 0).
Status LowerConcat(Context& c) {
  Builder& b = c.b;
  std::vector<Val*> all;
  for (int i = 0; i < c.NumIn(); ++i) {
    HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(i));
    all.push_back(&v);
  }
  if (all.empty()) return c.Error("needs at least one input");
  int64_t rank = all[0]->rank();
  HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(c.AttrI("axis", 0), rank));
  bool all_ints = rank == 1;
  for (Val* v : all) all_ints = all_ints && v->has_ints && v->rank() == 1;
  if (all_ints) {  // shape vectors, possibly with dynamic dims
    std::vector<Dim> d;
    for (Val* v : all) d.insert(d.end(), v->ints.begin(), v->ints.end());
    c.SetOut(0, KnownInts(all[0]->et, d));
    return Status::Ok();
  }
  bool all_known = true;
  for (Val* v : all)
    all_known = all_known && IsKnown(*v) && v->rank() == rank && v->has_ints == all[0]->has_ints;
  if (all_known) {  // stacked along axis: position -> (input, its flat index)
    std::vector<int64_t> out = StaticExtents(all[0]->shape);
    out[axis] = 0;
    for (Val* v : all) out[axis] += v->shape[axis].v;
    Val joined = *all[0];
    joined.ints.clear();
    joined.floats.clear();
    std::vector<int64_t> first_flat;  // where each input's elements start in `joined`
    for (Val* v : all) {
      first_flat.push_back(static_cast<int64_t>(joined.has_ints ? joined.ints.size() : joined.floats.size()));
      joined.ints.insert(joined.ints.end(), v->ints.begin(), v->ints.end());
      joined.floats.insert(joined.floats.end(), v->floats.begin(), v->floats.end());
    }
    c.SetOut(0, KnownPositions(joined, out, [&](const std::vector<int64_t>& pos) {
      int64_t along = pos[axis];
      size_t k = 0;
      while (along >= all[k]->shape[axis].v) along -= all[k++]->shape[axis].v;
      std::vector<int64_t> in = StaticExtents(all[k]->shape);
      int64_t flat = 0;
      for (int64_t i = 0; i < rank; ++i) flat = flat * in[i] + (i == axis ? along : pos[i]);
      return first_flat[k] + flat;
    }));
    return Status::Ok();
  }
  std::vector<Val*> ins;
  for (Val* v : all) {
    if (v->rank() != rank) return c.Error("inputs have different ranks");
    bool empty = !v->shape[axis].dynamic() && v->shape[axis].v == 0;
    if (!empty) ins.push_back(v);
  }
  if (ins.empty()) ins.push_back(all[0]);  // every input is empty along axis
  if (ins.size() == 1) {
    c.SetOut(0, *ins[0]);
    return Status::Ok();
  }
  Shape out = ins[0]->shape;
  std::vector<Dim> offsets = {Dim::Static(0)};
  for (size_t i = 1; i < ins.size(); ++i) {
    out[axis] = b.Add(out[axis], ins[i]->shape[axis]);
    offsets.push_back(b.Add(offsets.back(), ins[i - 1]->shape[axis]));
  }
  std::vector<std::string> offs, sizes;
  for (size_t i = 0; i < ins.size(); ++i) {
    c.Mat(*ins[i]);
    offs.push_back(b.DimValue(offsets[i]));
    sizes.push_back(b.DimValue(ins[i]->shape[axis]));
  }
  std::string et = ins[0]->et;
  Val r = b.Tabulate(out, et, [&](std::vector<std::string> idx) {
                       std::string result;
                       for (size_t k = 0; k < ins.size(); ++k) {
                         std::string rel = b.Fresh(), last = b.Fresh(), lo = b.Fresh(), cl = b.Fresh();
                         b.Line(rel + " = arith.subi " + idx[axis] + ", " + offs[k] + " : index");
                         b.Line(last + " = arith.subi " + sizes[k] + ", " + b.IndexConst(1) + " : index");
                         b.Line(lo + " = arith.maxsi " + rel + ", " + b.IndexConst(0) + " : index");
                         b.Line(cl + " = arith.minsi " + lo + ", " + last + " : index");
                         std::vector<std::string> src = idx;
                         src[axis] = cl;
                         std::string e = b.Fresh(), list = Builder::Join(src);
                         const std::string read = "tensor.extract " + ins[k]->name + "[" + list + "] : " +
                                                  Builder::TensorType(*ins[k]);
                         if (!ins[k]->shape[axis].dynamic()) {
                           b.Line(e + " = " + read);
                         } else {
                           // A run-time extent may be 0 (a detection level without boxes): then
                           // the clamp gives -1 and the source has nothing to read, so it is
                           // read only when not empty (never selected when empty).
                           std::string zero = b.ScalarConst(et, 0), some = b.Fresh(), x = b.Fresh();
                           b.Line(some + " = arith.cmpi sgt, " + sizes[k] + ", " + b.IndexConst(0) + " : index");
                           b.Line(e + " = scf.if " + some + " -> (" + et + ") {");
                           b.Line("  " + x + " = " + read);
                           b.Line("  scf.yield " + x + " : " + et);
                           b.Line("} else {");
                           b.Line("  scf.yield " + zero + " : " + et);
                           b.Line("}");
                         }
                         if (result.empty()) {
                           result = e;
                         } else {
                           std::string ge = b.Fresh();
                           b.Line(ge + " = arith.cmpi sge, " + idx[axis] + ", " + offs[k] + " : index");
                           result = b.Select(ge, e, result, et);
                         }
                       }
                       return result;
                     });
  c.SetOut(0, r);
  return Status::Ok();
}

Status LowerGather(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& data, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& ind, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(c.AttrI("axis", 0), data.rank()));
  bool static_indices = IsKnown(ind) && ind.has_ints;
  for (const Dim& d : ind.ints) static_indices = static_indices && !d.dynamic();
  if (IsKnown(data) && static_indices) {
    HEXIR_ASSIGN_OR_RETURN(std::vector<int64_t> indices, c.ConstInts(ind, "indices"));
    if (data.shape[axis].dynamic()) return c.Error("gathering along a dynamic dimension of known contents");
    std::vector<int64_t> in = StaticExtents(data.shape), out(in.begin(), in.begin() + axis);
    int64_t n = in[axis];
    for (int64_t& i : indices) {
      if (i < 0) i += n;
      if (i < 0 || i >= n) return c.Error("index " + std::to_string(i) + " out of range [0, " + std::to_string(n) + ")");
    }
    for (const Dim& d : ind.shape) out.push_back(d.v);
    out.insert(out.end(), in.begin() + axis + 1, in.end());
    int64_t ir = ind.rank();
    c.SetOut(0, KnownPositions(data, out, [&](const std::vector<int64_t>& pos) {
      int64_t k = 0;
      for (int64_t i = 0; i < ir; ++i) k = k * ind.shape[i].v + pos[axis + i];
      int64_t flat = 0;
      for (int64_t i = 0; i < static_cast<int64_t>(in.size()); ++i)
        flat = flat * in[i] + (i < axis ? pos[i] : i == axis ? indices[k] : pos[i + ir - 1]);
      return flat;
    }));
    return Status::Ok();
  }
  c.SetOut(0, c.GatherAlong(data, axis, ind));
  return Status::Ok();
}

Status LowerSliceWithAttributes(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  return SliceWith(c, x, StaticDims(c.AttrInts("starts")), StaticDims(c.AttrInts("ends")),
                   c.AttrInts("axes"), {});
}

Status LowerSlice(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& starts_in, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val starts, c.ShapeOperand(starts_in, "starts"));
  HEXIR_ASSIGN_OR_RETURN(Val& ends_in, c.In(2));
  HEXIR_ASSIGN_OR_RETURN(Val ends, c.ShapeOperand(ends_in, "ends"));
  HEXIR_ASSIGN_OR_RETURN(std::vector<int64_t> axes, OptionalInts(c, 3, "axes"));
  HEXIR_ASSIGN_OR_RETURN(std::vector<int64_t> steps, OptionalInts(c, 4, "steps"));
  return SliceWith(c, x, starts.ints, ends.ints, axes, steps);
}

// Sizes: the `split` attribute, or input 1 from opset 13 on.
Status LowerSplit(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(c.AttrI("axis", 0), x.rank()));
  std::vector<int64_t> sizes = c.AttrInts("split");
  if (c.opset >= 13 && c.HasIn(1)) {
    HEXIR_ASSIGN_OR_RETURN(sizes, OptionalInts(c, 1, "split"));
  }
  return SplitWith(c, x, axis, sizes);
}

Status LowerPadWithAttributes(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  return PadWith(c, x, StaticDims(c.AttrInts("pads")), c.AttrF("value", 0));
}

Status LowerPad(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& pads_in, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val pads, c.ShapeOperand(pads_in, "pads"));
  double value = 0;
  if (c.HasIn(2)) {
    HEXIR_ASSIGN_OR_RETURN(Val& value_in, c.In(2));
    HEXIR_ASSIGN_OR_RETURN(std::vector<double> v, c.ConstFloats(value_in, "constant_value"));
    if (v.empty()) return c.Error("constant_value is empty");
    value = v[0];
  }
  if (!c.HasIn(3)) return PadWith(c, x, pads.ints, value);
  // Opset 18: pads (begins then ends) for the listed axes only; the others are not padded.
  HEXIR_ASSIGN_OR_RETURN(std::vector<int64_t> axes, OptionalInts(c, 3, "axes"));
  if (pads.ints.size() != 2 * axes.size())
    return c.Error("pads has " + std::to_string(pads.ints.size()) + " entries for " + std::to_string(axes.size()) +
                   " axes (2 per axis)");
  std::vector<Dim> full(2 * x.rank(), Dim::Static(0));
  std::vector<bool> seen(x.rank(), false);
  for (size_t k = 0; k < axes.size(); ++k) {
    HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(axes[k], x.rank()));
    if (seen[axis]) return c.Error("axes repeat dim " + std::to_string(axis));
    seen[axis] = true;
    full[axis] = pads.ints[k];
    full[x.rank() + axis] = pads.ints[axes.size() + k];
  }
  return PadWith(c, x, full, value);
}

// Opset 18: each listed dim (`axes`, default all) cropped or zero-padded to `shape`,
// centred: a crop starts at (extent - size) / 2, a pad puts (size - extent) / 2 before (both
// rounded down). A Pad by begin = trunc((size - extent) / 2), end = the rest, negative for crops.
Status LowerCenterCropPad(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& shape_in, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val shape, c.ShapeOperand(shape_in, "shape"));
  std::vector<int64_t> axes = c.AttrInts("axes");
  if (!c.HasAttr("axes"))
    for (int64_t i = 0; i < x.rank(); ++i) axes.push_back(i);
  if (shape.ints.size() != axes.size())
    return c.Error("shape has " + std::to_string(shape.ints.size()) + " entries for " + std::to_string(axes.size()) +
                   " axes");
  std::vector<Dim> begin(x.rank(), Dim::Static(0)), end = begin;
  const Dim zero = Dim::Static(0), two = Dim::Static(2);
  for (size_t k = 0; k < axes.size(); ++k) {
    HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(axes[k], x.rank()));
    const Dim& size = shape.ints[k];
    if (!size.dynamic() && size.v < 0) return c.Error("shape entry " + std::to_string(size.v) + " is negative");
    Dim diff = b.Sub(size, x.shape[axis]);
    Dim grow = b.Max(diff, zero), shrink = b.Max(b.Sub(zero, diff), zero);
    begin[axis] = b.Sub(b.FloorDiv(grow, two), b.FloorDiv(shrink, two));
    end[axis] = b.Sub(diff, begin[axis]);
  }
  c.SetOut(0, c.Pad(x, begin, end, "constant", 0));
  return Status::Ok();
}

// out[i][j][k] = data[index[i][j][k]][j][k] along `axis` (negative indices wrap).
Status LowerGatherElements(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& data, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& ind, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(c.AttrI("axis", 0), data.rank()));
  if (ind.rank() != data.rank()) return c.Error("indices must have the rank of data");
  c.Mat(data);
  c.Mat(ind);
  int loops = static_cast<int>(ind.rank());
  std::string dim = b.DimValue(data.shape[axis]), it = ind.et;
  Val r;
  r.et = data.et;
  r.shape = ind.shape;
  r.name = b.Generic({&ind}, {Builder::IdentityMap(loops)}, Builder::IdentityMap(loops), ind.shape,
                     data.et, loops, std::vector<std::string>(loops, "parallel"), "",
                     [&](const Args& a) {
                       std::vector<std::string> idx = b.LoopIndices(loops);
                       std::string iv = b.Fresh(), neg = b.Fresh(), w = b.Fresh(), s = b.Fresh();
                       b.Line(iv + " = arith.index_cast " + a[0] + " : " + it + " to index");
                       b.Line(neg + " = arith.cmpi slt, " + iv + ", " + b.IndexConst(0) + " : index");
                       b.Line(w + " = arith.addi " + iv + ", " + dim + " : index");
                       b.Line(s + " = arith.select " + neg + ", " + w + ", " + iv + " : index");
                       idx[axis] = s;
                       std::string e = b.Fresh();
                       b.Line(e + " = tensor.extract " + data.name + "[" + Builder::Join(idx) + "] : " +
                              Builder::TensorType(data));
                       return e;
                     });
  c.SetOut(0, r);
  return Status::Ok();
}

// out[b..., i...] = data[b..., index[b..., i..., 0..q-1], rest...] (batch_dims b).
Status LowerGatherND(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& data, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& ind, c.In(1));
  int64_t bd = c.AttrI("batch_dims", 0), ri = ind.rank();
  if (ri < 1 || ind.shape[ri - 1].dynamic()) return c.Error("the last indices dim must be static");
  int64_t q = ind.shape[ri - 1].v;
  if (bd < 0 || bd + q > data.rank() || bd >= ri) return c.Error("indices do not fit the data rank");
  Shape out(ind.shape.begin(), ind.shape.end() - 1);
  out.insert(out.end(), data.shape.begin() + bd + q, data.shape.end());
  c.Mat(data);
  c.Mat(ind);
  std::vector<std::string> dims;
  for (const Dim& d : data.shape) dims.push_back(b.DimValue(d));
  int loops = static_cast<int>(out.size());
  std::string it = ind.et;
  Val r = b.Tabulate(out, data.et, [&](std::vector<std::string> idx) {
    std::vector<std::string> at(idx.begin(), idx.begin() + bd);  // batch dims
    for (int64_t j = 0; j < q; ++j) {
      std::vector<std::string> ii(idx.begin(), idx.begin() + (ri - 1));
      ii.push_back(b.IndexConst(j));
      std::string e = b.Fresh(), iv = b.Fresh(), neg = b.Fresh(), w = b.Fresh(), s = b.Fresh();
      b.Line(e + " = tensor.extract " + ind.name + "[" + Builder::Join(ii) + "] : " + Builder::TensorType(ind));
      b.Line(iv + " = arith.index_cast " + e + " : " + it + " to index");
      b.Line(neg + " = arith.cmpi slt, " + iv + ", " + b.IndexConst(0) + " : index");
      b.Line(w + " = arith.addi " + iv + ", " + dims[bd + j] + " : index");
      b.Line(s + " = arith.select " + neg + ", " + w + ", " + iv + " : index");
      at.push_back(s);
    }
    for (int64_t j = ri - 1; j < loops; ++j) at.push_back(idx[j]);
    std::string e = b.Fresh();
    b.Line(e + " = tensor.extract " + data.name + "[" + Builder::Join(at) + "] : " + Builder::TensorType(data));
    return e;
  });
  c.SetOut(0, r);
  return Status::Ok();
}

// values[1] where the (wrapped) index equals the position along `axis`, values[0] elsewhere.
Status LowerOneHot(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& ind, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& depth_in, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(std::vector<double> depth_value, c.ConstFloats(depth_in, "depth"));
  std::vector<int64_t> depth;
  for (double d : depth_value) depth.push_back(static_cast<int64_t>(d));
  if (depth.size() != 1 || depth[0] < 1) return c.Error("depth must be one positive value");
  HEXIR_ASSIGN_OR_RETURN(Val& values, c.In(2));  // [off, on]
  int64_t rank = ind.rank() + 1;
  HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(c.AttrI("axis", -1), rank));
  Shape out = ind.shape;
  out.insert(out.begin() + axis, Dim::Static(depth[0]));
  c.Mat(ind);
  c.Mat(values);
  int loops = static_cast<int>(rank);
  std::vector<std::string> im;
  for (int i = 0; i < loops; ++i)
    if (i != axis) im.push_back("d" + std::to_string(i));
  std::string et = values.et, it = ind.et;
  Val r;
  r.et = et;
  r.shape = out;
  r.name = b.Generic({&ind}, {Builder::Map(loops, im)}, Builder::IdentityMap(loops), out, et, loops,
                     std::vector<std::string>(loops, "parallel"), "", [&](const Args& a) {
                       std::string j = b.Fresh(), iv = b.Fresh(), neg = b.Fresh(), w = b.Fresh(),
                                   s = b.Fresh(), eq = b.Fresh();
                       b.Line(j + " = linalg.index " + std::to_string(axis) + " : index");
                       b.Line(iv + " = arith.index_cast " + (IsFloatType(it) ? b.Convert(a[0], it, "i64") : a[0]) +
                              " : " + (IsFloatType(it) ? std::string("i64") : it) + " to index");
                       b.Line(neg + " = arith.cmpi slt, " + iv + ", " + b.IndexConst(0) + " : index");
                       b.Line(w + " = arith.addi " + iv + ", " + b.IndexConst(depth[0]) + " : index");
                       b.Line(s + " = arith.select " + neg + ", " + w + ", " + iv + " : index");
                       b.Line(eq + " = arith.cmpi eq, " + s + ", " + j + " : index");
                       std::string off = b.Fresh(), on = b.Fresh();
                       b.Line(off + " = tensor.extract " + values.name + "[" + b.IndexConst(0) + "] : " +
                              Builder::TensorType(values));
                       b.Line(on + " = tensor.extract " + values.name + "[" + b.IndexConst(1) + "] : " +
                              Builder::TensorType(values));
                       return b.Select(eq, on, off, et);
                     });
  c.SetOut(0, r);
  return Status::Ok();
}

// Keeps x where j - i >= k (upper) or j - i <= k (lower) on the last two dims, 0 elsewhere.
Status LowerTrilu(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  if (x.rank() < 2) return c.Error("expected rank >= 2");
  int64_t k = 0;
  if (c.HasIn(1)) {
    HEXIR_ASSIGN_OR_RETURN(Val& k_in, c.In(1));
    HEXIR_ASSIGN_OR_RETURN(std::vector<int64_t> k_value, c.ConstInts(k_in, "k"));
    if (k_value.empty()) return c.Error("k is empty");
    k = k_value[0];
  }
  bool upper = c.AttrI("upper", 1) != 0;
  std::string et = x.et;
  int loops = static_cast<int>(x.rank());
  return c.SetOut(0, c.Elementwise({&x}, et, [&](const Args& a) {
    std::string i = b.Fresh(), j = b.Fresh(), ii = b.Fresh(), jj = b.Fresh(), d = b.Fresh();
    b.Line(i + " = linalg.index " + std::to_string(loops - 2) + " : index");
    b.Line(j + " = linalg.index " + std::to_string(loops - 1) + " : index");
    b.Line(ii + " = arith.index_cast " + i + " : index to i64");
    b.Line(jj + " = arith.index_cast " + j + " : index to i64");
    b.Line(d + " = arith.subi " + jj + ", " + ii + " : i64");
    std::string kk = b.ScalarConst("i64", static_cast<double>(k));
    std::string keep = b.Cmp("", upper ? "sge" : "sle", d, kk, "i64");
    return b.Select(keep, a[0], b.ScalarConst(et, 0), et);
  }));
}

// out[p] = x[p with time = len - 1 - time] for time < len = sequence_lens[p[batch_axis]], else x[p].
Status LowerReverseSequence(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& lens, c.In(1));
  if (x.rank() < 2) return c.Error("input must have rank >= 2");
  HEXIR_ASSIGN_OR_RETURN(int64_t batch_axis, c.NormAxis(c.AttrI("batch_axis", 1), x.rank()));
  HEXIR_ASSIGN_OR_RETURN(int64_t time_axis, c.NormAxis(c.AttrI("time_axis", 0), x.rank()));
  if (batch_axis == time_axis) return c.Error("batch_axis and time_axis must differ");
  if (lens.rank() != 1) return c.Error("sequence_lens must be 1-D");
  c.Mat(x);
  c.Mat(lens);
  Val r = b.Tabulate(x.shape, x.et, [&](std::vector<std::string> idx) {
    std::string len = b.Fresh(), n = b.Fresh(), inside = b.Fresh(), last = b.Fresh(), back = b.Fresh(), t = b.Fresh();
    b.Line(len + " = tensor.extract " + lens.name + "[" + idx[batch_axis] + "] : " + Builder::TensorType(lens));
    b.Line(n + " = arith.index_cast " + len + " : " + lens.et + " to index");
    b.Line(inside + " = arith.cmpi slt, " + idx[time_axis] + ", " + n + " : index");
    b.Line(last + " = arith.subi " + n + ", " + b.IndexConst(1) + " : index");
    b.Line(back + " = arith.subi " + last + ", " + idx[time_axis] + " : index");
    b.Line(t + " = arith.select " + inside + ", " + back + ", " + idx[time_axis] + " : index");
    idx[time_axis] = t;
    std::string e = b.Fresh();
    b.Line(e + " = tensor.extract " + x.name + "[" + Builder::Join(idx) + "] : " + Builder::TensorType(x));
    return e;
  });
  c.SetOut(0, r);
  return Status::Ok();
}

}  // namespace hexir::importers::onnx
