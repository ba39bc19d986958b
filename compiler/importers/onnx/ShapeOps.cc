// Data-movement and shape ONNX ops. Ops on known integer contents (shape values) fold at
// import time, so Shape -> Gather/Slice -> Concat -> Reshape chains become host index math.
// Ops whose source positions are not affine (Concat, Gather, Pad) read with tensor.extract
// inside the generic body.
#include <algorithm>
#include <climits>
#include <cmath>

#include "compiler/importers/onnx/Context.h"

namespace hexir::importers::onnx {
namespace {

using Args = std::vector<std::string>;

Val IntsVal(const std::string& et, std::vector<Dim> ints, bool scalar = false) {
  Val v;
  v.et = et;
  if (!scalar) v.shape = {Dim::Static(static_cast<int64_t>(ints.size()))};
  v.has_ints = true;
  v.ints = std::move(ints);
  return v;
}

std::vector<int64_t> AxesOf(Context& c, const char* what, int input) {
  if (c.opset >= 13 && c.HasIn(input)) return c.ConstInts(c.In(input), what);
  return c.AttrInts(what);
}

// out[i] = x[start + i * step] per dim, read with tensor.extract (an affine input map would
// make linalg infer the loop ranges from the larger input).
Val StridedCopy(Context& c, Val& x, const Shape& out, const std::vector<int64_t>& start,
                const std::vector<int64_t>& step) {
  Builder& b = c.b;
  c.Mat(x);
  int loops = static_cast<int>(out.size());
  Val r;
  r.et = x.et;
  r.shape = out;
  r.name = b.Generic({}, {}, Builder::IdentityMap(loops), out, x.et, loops,
                     std::vector<std::string>(loops, "parallel"), "", [&](const Args&) {
                       std::string list;
                       for (int i = 0; i < loops; ++i) {
                         std::string idx = b.Fresh();
                         b.Line(idx + " = linalg.index " + std::to_string(i) + " : index");
                         if (step[i] != 1) {
                           std::string m = b.Fresh();
                           b.Line(m + " = arith.muli " + idx + ", " + b.IndexConst(step[i]) + " : index");
                           idx = m;
                         }
                         if (start[i] != 0) {
                           std::string a = b.Fresh();
                           b.Line(a + " = arith.addi " + idx + ", " + b.IndexConst(start[i]) + " : index");
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

void LowerConstant(Context& c) {
  if (const ::onnx::TensorProto* t = c.AttrT("value")) {
    c.SetOut(0, c.FromTensorProto(*t));
  } else if (c.HasAttr("value_float") || c.HasAttr("value_floats")) {
    Val v;
    v.et = "f32";
    v.has_floats = true;
    if (c.HasAttr("value_float")) {
      v.floats = {c.AttrF("value_float", 0)};
    } else {
      for (const auto& a : c.node->attribute())
        if (a.name() == "value_floats") v.floats.assign(a.floats().begin(), a.floats().end());
      v.shape = {Dim::Static(static_cast<int64_t>(v.floats.size()))};
    }
    c.SetOut(0, v);
  } else if (c.HasAttr("value_int")) {
    c.SetOut(0, IntsVal("i64", {Dim::Static(c.AttrI("value_int", 0))}, true));
  } else if (c.HasAttr("value_ints")) {
    std::vector<Dim> d;
    for (int64_t x : c.AttrInts("value_ints")) d.push_back(Dim::Static(x));
    c.SetOut(0, IntsVal("i64", d));
  } else {
    c.Fail("only tensor/float/int constants are supported");
  }
}

void LowerConcat(Context& c) {
  Builder& b = c.b;
  int64_t rank = c.In(0).rank();
  int64_t axis = c.NormAxis(c.AttrI("axis", 0), rank);
  bool all_ints = rank == 1;
  for (int i = 0; i < c.NumIn(); ++i) all_ints = all_ints && c.In(i).has_ints;
  if (all_ints) {
    std::vector<Dim> d;
    for (int i = 0; i < c.NumIn(); ++i) d.insert(d.end(), c.In(i).ints.begin(), c.In(i).ints.end());
    c.SetOut(0, IntsVal(c.In(0).et, d));
    return;
  }
  std::vector<Val*> ins;
  for (int i = 0; i < c.NumIn(); ++i) {
    Val& v = c.In(i);
    if (v.rank() != rank) c.Fail("inputs have different ranks");
    bool empty = !v.shape[axis].dynamic() && v.shape[axis].v == 0;
    if (!empty) ins.push_back(&v);
  }
  if (ins.size() == 1) {
    c.SetOut(0, *ins[0]);
    return;
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
  int loops = static_cast<int>(rank);
  Val r;
  r.et = et;
  r.shape = out;
  r.name = b.Generic({}, {}, Builder::IdentityMap(loops), out, et, loops,
                     std::vector<std::string>(loops, "parallel"), "", [&](const Args&) {
                       std::vector<std::string> idx;
                       for (int i = 0; i < loops; ++i) {
                         idx.push_back(b.Fresh());
                         b.Line(idx.back() + " = linalg.index " + std::to_string(i) + " : index");
                       }
                       std::string result;
                       for (size_t k = 0; k < ins.size(); ++k) {
                         std::string rel = b.Fresh(), last = b.Fresh(), lo = b.Fresh(), cl = b.Fresh();
                         b.Line(rel + " = arith.subi " + idx[axis] + ", " + offs[k] + " : index");
                         b.Line(last + " = arith.subi " + sizes[k] + ", " + b.IndexConst(1) + " : index");
                         b.Line(lo + " = arith.maxsi " + rel + ", " + b.IndexConst(0) + " : index");
                         b.Line(cl + " = arith.minsi " + lo + ", " + last + " : index");
                         std::vector<std::string> src = idx;
                         src[axis] = cl;
                         std::string list, e = b.Fresh();
                         for (size_t j = 0; j < src.size(); ++j) list += (j ? ", " : "") + src[j];
                         b.Line(e + " = tensor.extract " + ins[k]->name + "[" + list + "] : " +
                                Builder::TensorType(*ins[k]));
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
}

void LowerGather(Context& c) {
  Builder& b = c.b;
  Val& data = c.In(0);
  Val& ind = c.In(1);
  int64_t axis = c.NormAxis(c.AttrI("axis", 0), data.rank());
  if (data.has_ints && data.rank() == 1 && ind.has_ints && data.name.empty()) {
    std::vector<Dim> d;
    for (int64_t i : c.ConstInts(ind, "indices")) {
      if (i < 0) i += static_cast<int64_t>(data.ints.size());
      if (i < 0 || i >= static_cast<int64_t>(data.ints.size())) c.Fail("index out of range");
      d.push_back(data.ints[i]);
    }
    Val r = IntsVal(data.et, d, ind.rank() == 0);
    r.shape = ind.shape;
    c.SetOut(0, r);
    return;
  }
  c.Mat(data);
  c.Mat(ind);
  Shape out(data.shape.begin(), data.shape.begin() + axis);
  out.insert(out.end(), ind.shape.begin(), ind.shape.end());
  out.insert(out.end(), data.shape.begin() + axis + 1, data.shape.end());
  int loops = static_cast<int>(out.size());
  int64_t ir = ind.rank();
  std::vector<std::string> im;
  for (int64_t i = 0; i < ir; ++i) im.push_back("d" + std::to_string(axis + i));
  std::string dim = b.DimValue(data.shape[axis]);
  std::string et = data.et, it = ind.et;
  Val r;
  r.et = et;
  r.shape = out;
  r.name = b.Generic({&ind}, {Builder::Map(loops, im)}, Builder::IdentityMap(loops), out, et,
                     loops, std::vector<std::string>(loops, "parallel"), "", [&](const Args& a) {
                       std::string iv = b.Fresh();
                       b.Line(iv + " = arith.index_cast " + a[0] + " : " + it + " to index");
                       std::string neg = b.Fresh(), wrapped = b.Fresh(), sel = b.Fresh();
                       b.Line(neg + " = arith.cmpi slt, " + iv + ", " + b.IndexConst(0) + " : index");
                       b.Line(wrapped + " = arith.addi " + iv + ", " + dim + " : index");
                       b.Line(sel + " = arith.select " + neg + ", " + wrapped + ", " + iv + " : index");
                       std::vector<std::string> src;
                       for (int64_t j = 0; j < data.rank(); ++j) {
                         int64_t loop = j < axis ? j : j == axis ? -1 : j - 1 + ir;
                         if (loop < 0) {
                           src.push_back(sel);
                           continue;
                         }
                         src.push_back(b.Fresh());
                         b.Line(src.back() + " = linalg.index " + std::to_string(loop) + " : index");
                       }
                       std::string list, e = b.Fresh();
                       for (size_t j = 0; j < src.size(); ++j) list += (j ? ", " : "") + src[j];
                       b.Line(e + " = tensor.extract " + data.name + "[" + list + "] : " +
                              Builder::TensorType(data));
                       return e;
                     });
  c.SetOut(0, r);
}

void LowerSlice(Context& c) {
  Builder& b = c.b;
  Val& x = c.In(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset < 10) {
    starts = c.AttrInts("starts");
    ends = c.AttrInts("ends");
    axes = c.AttrInts("axes");
  } else {
    starts = c.ConstInts(c.In(1), "starts");
    ends = c.ConstInts(c.In(2), "ends");
    if (c.HasIn(3)) axes = c.ConstInts(c.In(3), "axes");
    if (c.HasIn(4)) steps = c.ConstInts(c.In(4), "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  int64_t rank = x.rank();
  std::vector<Dim> start(rank, Dim::Static(0)), size = x.shape;
  std::vector<int64_t> step(rank, 1);
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t a = c.NormAxis(axes[k], rank);
    int64_t st = starts[k], en = ends[k], sp = steps[k];
    if (sp == 0) c.Fail("step 0");
    step[a] = sp;
    const Dim& d = x.shape[a];
    if (d.dynamic()) {
      if (sp != 1 || st < 0 || en < INT_MAX / 2) c.Fail("slicing a dynamic dimension needs start >= 0, step 1, end = max");
      start[a] = Dim::Static(st);
      size[a] = b.Max(b.Sub(d, Dim::Static(st)), Dim::Static(0));
      continue;
    }
    int64_t n = d.v;
    auto clampv = [](int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(v, hi)); };
    if (st < 0) st += n;
    if (en < 0) en += n;
    if (sp > 0) {
      st = clampv(st, 0, n);
      en = clampv(en, 0, n);
    } else {
      st = clampv(st, 0, n - 1);
      en = clampv(en, -1, n - 1);
    }
    int64_t cnt = sp > 0 ? (en - st + sp - 1) / sp : (st - en + (-sp) - 1) / (-sp);
    start[a] = Dim::Static(st);
    size[a] = Dim::Static(std::max<int64_t>(0, cnt));
  }
  if (x.has_ints && rank == 1 && x.name.empty() && !size[0].dynamic()) {
    std::vector<Dim> d;
    for (int64_t i = 0; i < size[0].v; ++i) d.push_back(x.ints[start[0].v + i * step[0]]);
    c.SetOut(0, IntsVal(x.et, d));
    return;
  }
  std::vector<int64_t> st;
  for (const Dim& d : start) st.push_back(d.v);
  c.SetOut(0, StridedCopy(c, x, size, st, step));
}

// Target shape of Reshape: 0 copies the input dim (unless allowzero), -1 is inferred.
Shape ReshapeTarget(Context& c, Val& x, const std::vector<Dim>& spec, bool allowzero) {
  Builder& b = c.b;
  Shape out;
  int infer = -1;
  for (size_t i = 0; i < spec.size(); ++i) {
    const Dim& d = spec[i];
    if (!d.dynamic() && d.v == 0 && !allowzero) {
      if (i >= x.shape.size()) c.Fail("0 in the shape refers to a missing input dim");
      out.push_back(x.shape[i]);
    } else if (!d.dynamic() && d.v == -1) {
      if (infer >= 0) c.Fail("more than one -1 in the shape");
      infer = static_cast<int>(i);
      out.push_back(Dim::Static(1));
    } else {
      out.push_back(d);
    }
  }
  if (infer >= 0) {
    Dim total = b.Product(x.shape, 0, x.shape.size());
    Dim rest = Dim::Static(1);
    for (size_t i = 0; i < out.size(); ++i)
      if (static_cast<int>(i) != infer) rest = b.Mul(rest, out[i]);
    // Cancel equal dynamic factors before dividing (N*C / N = C keeps C static).
    if (total.dynamic() || rest.dynamic()) {
      Shape num = x.shape;
      Shape den;
      for (size_t i = 0; i < out.size(); ++i)
        if (static_cast<int>(i) != infer) den.push_back(out[i]);
      for (auto it = den.begin(); it != den.end();) {
        bool removed = false;
        if (it->dynamic())
          for (auto jt = num.begin(); jt != num.end(); ++jt)
            if (jt->dynamic() && jt->ssa == it->ssa) {
              num.erase(jt);
              it = den.erase(it);
              removed = true;
              break;
            }
        if (!removed) ++it;
      }
      total = b.Product(num, 0, num.size());
      rest = b.Product(den, 0, den.size());
    }
    out[infer] = b.FloorDiv(total, rest);
  }
  return out;
}

}  // namespace

bool LowerShape(Context& c) {
  const std::string& op = c.node->op_type();
  Builder& b = c.b;
  if (op == "Constant") {
    LowerConstant(c);
  } else if (op == "Identity" || op == "Dropout") {
    Val& x = c.In(0);
    if (op == "Dropout") {  // inference: identity, mask all true
      bool training = c.AttrI("is_test", 1) == 0 && c.opset < 7;
      if (c.HasIn(2)) {
        Val& t = c.In(2);
        if (!t.has_ints) c.Fail("training_mode must be a constant");
        training = t.ints[0].v != 0;
      }
      if (training) c.Fail("training mode is not supported");
      if (c.node->output_size() > 1 && !c.node->output(1).empty()) {
        Val mask;
        mask.et = "i1";
        mask.shape = x.shape;
        mask.name = b.Filled(mask.shape, "i1", 1);
        c.SetOut(1, mask);
      }
    }
    c.SetOut(0, x);
  } else if (op == "Split") {
    Val& x = c.In(0);
    int64_t axis = c.NormAxis(c.AttrI("axis", 0), x.rank());
    std::vector<int64_t> sizes = c.opset >= 13 && c.HasIn(1) ? c.ConstInts(c.In(1), "split")
                                                             : c.AttrInts("split");
    int n = c.node->output_size();
    if (x.shape[axis].dynamic()) c.Fail("splitting a dynamic dimension is not supported");
    if (sizes.empty()) {
      int64_t each = (x.shape[axis].v + n - 1) / n;
      for (int i = 0; i < n; ++i)
        sizes.push_back(std::min(each, x.shape[axis].v - each * i));
    }
    int64_t total = 0;
    for (int64_t s : sizes) total += s;
    if (static_cast<int>(sizes.size()) != n || total != x.shape[axis].v)
      c.Fail("split sizes do not match the outputs and the dimension");
    int64_t offset = 0;
    for (int i = 0; i < n; ++i) {
      Shape out = x.shape;
      out[axis] = Dim::Static(sizes[i]);
      std::vector<int64_t> st(x.rank(), 0), sp(x.rank(), 1);
      st[axis] = offset;
      c.SetOut(i, StridedCopy(c, x, out, st, sp));
      offset += sizes[i];
    }
  } else if (op == "Shape") {
    Val& x = c.In(0);
    int64_t r = x.rank();
    int64_t st = c.AttrI("start", 0), en = c.AttrI("end", r);
    if (st < 0) st += r;
    if (en < 0) en += r;
    st = std::max<int64_t>(0, std::min(st, r));
    en = std::max<int64_t>(st, std::min(en, r));
    c.SetOut(0, IntsVal("i64", std::vector<Dim>(x.shape.begin() + st, x.shape.begin() + en)));
  } else if (op == "Size") {
    Val& x = c.In(0);
    c.SetOut(0, IntsVal("i64", {b.Product(x.shape, 0, x.shape.size())}, true));
  } else if (op == "Reshape") {
    Val& x = c.In(0);
    Val& s = c.In(1);
    if (!s.has_ints) c.Fail("the shape must be a constant or computed from shapes");
    c.SetOut(0, c.ReshapeTo(x, ReshapeTarget(c, x, s.ints, c.AttrI("allowzero", 0) != 0)));
  } else if (op == "Flatten") {
    Val& x = c.In(0);
    int64_t axis = c.AttrI("axis", 1);
    if (axis < 0) axis += x.rank();
    c.SetOut(0, c.ReshapeTo(x, {b.Product(x.shape, 0, axis), b.Product(x.shape, axis, x.rank())}));
  } else if (op == "Squeeze") {
    Val& x = c.In(0);
    std::vector<int64_t> axes = AxesOf(c, "axes", 1);
    std::vector<bool> drop(x.rank(), false);
    if (axes.empty()) {
      for (int64_t i = 0; i < x.rank(); ++i) drop[i] = !x.shape[i].dynamic() && x.shape[i].v == 1;
    } else {
      for (int64_t a : axes) drop[c.NormAxis(a, x.rank())] = true;
    }
    Shape out;
    for (int64_t i = 0; i < x.rank(); ++i)
      if (!drop[i]) out.push_back(x.shape[i]);
    c.SetOut(0, c.ReshapeTo(x, out));
  } else if (op == "Unsqueeze") {
    Val& x = c.In(0);
    std::vector<int64_t> axes = AxesOf(c, "axes", 1);
    int64_t rank = x.rank() + static_cast<int64_t>(axes.size());
    std::vector<bool> ins(rank, false);
    for (int64_t a : axes) ins[c.NormAxis(a, rank)] = true;
    Shape out;
    for (int64_t i = 0, j = 0; i < rank; ++i) out.push_back(ins[i] ? Dim::Static(1) : x.shape[j++]);
    c.SetOut(0, c.ReshapeTo(x, out));
  } else if (op == "Transpose") {
    Val& x = c.In(0);
    std::vector<int64_t> perm = c.AttrInts("perm");
    if (perm.empty())
      for (int64_t i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < static_cast<int64_t>(sorted.size()); ++i)
      if (sorted[i] != i || static_cast<int64_t>(sorted.size()) != x.rank()) c.Fail("perm is not a permutation");
    c.SetOut(0, c.Transpose(x, perm));
  } else if (op == "Concat") {
    LowerConcat(c);
  } else if (op == "Gather") {
    LowerGather(c);
  } else if (op == "Slice") {
    LowerSlice(c);
  } else if (op == "ConstantOfShape") {
    Val& s = c.In(0);
    if (!s.has_ints) c.Fail("the shape must be a constant or computed from shapes");
    std::string et = "f32";
    double value = 0;
    if (const ::onnx::TensorProto* t = c.AttrT("value")) {
      Val v = c.FromTensorProto(*t);
      et = v.et;
      value = v.has_floats ? v.floats[0] : v.has_ints ? static_cast<double>(v.ints[0].v) : 0;
    }
    Val r;
    r.et = et;
    r.shape = s.ints;
    int64_t n = 1;
    bool known = !IsFloatType(et);
    for (const Dim& d : s.ints) {
      known = known && !d.dynamic();
      n *= d.dynamic() ? 1 : d.v;
    }
    if (known && n <= 4096) {  // integer fills may feed shape computations: keep contents
      r.has_ints = true;
      r.ints.assign(n, Dim::Static(static_cast<int64_t>(value)));
    } else {
      r.name = b.Filled(r.shape, et, value);
    }
    c.SetOut(0, r);
  } else if (op == "Expand") {
    Val& x = c.In(0);
    Val& s = c.In(1);
    if (!s.has_ints) c.Fail("the shape must be a constant or computed from shapes");
    Val shape_only;
    shape_only.shape = s.ints;
    Shape out = Context::BroadcastShapes(b, {&x, &shape_only});
    c.Mat(x);
    int loops = static_cast<int>(out.size());
    Val r;
    r.et = x.et;
    r.shape = out;
    r.name = b.Generic({&x}, {Context::BroadcastMap(x, out)}, Builder::IdentityMap(loops), out,
                       x.et, loops, std::vector<std::string>(loops, "parallel"), "",
                       [](const Args& a) { return a[0]; });
    c.SetOut(0, r);
  } else if (op == "Tile") {
    Val& x = c.In(0);
    std::vector<int64_t> reps = c.ConstInts(c.In(1), "repeats");
    if (static_cast<int64_t>(reps.size()) != x.rank()) c.Fail("repeats must have one entry per dim");
    Shape out;
    std::vector<std::string> m;
    for (int64_t i = 0; i < x.rank(); ++i) {
      if (x.shape[i].dynamic()) c.Fail("tiling a dynamic dimension is not supported");
      out.push_back(Dim::Static(x.shape[i].v * reps[i]));
      m.push_back("d" + std::to_string(i) + " mod " + std::to_string(x.shape[i].v));
    }
    c.Mat(x);
    int loops = static_cast<int>(out.size());
    Val r;
    r.et = x.et;
    r.shape = out;
    r.name = b.Generic({&x}, {Builder::Map(loops, m)}, Builder::IdentityMap(loops), out, x.et,
                       loops, std::vector<std::string>(loops, "parallel"), "",
                       [](const Args& a) { return a[0]; });
    c.SetOut(0, r);
  } else if (op == "Pad") {
    Val& x = c.In(0);
    std::vector<int64_t> pads;
    double value = 0;
    if (c.opset < 11) {
      pads = c.AttrInts("pads");
      value = c.AttrF("value", 0);
    } else {
      pads = c.ConstInts(c.In(1), "pads");
      if (c.HasIn(2)) value = c.ConstFloats(c.In(2), "constant_value")[0];
      if (c.HasIn(3)) c.Fail("the axes input is not supported");
    }
    std::string mode = c.AttrS("mode", "constant");
    if (mode != "constant" && mode != "edge" && mode != "reflect") c.Fail("mode " + mode);
    int64_t r = x.rank();
    if (static_cast<int64_t>(pads.size()) != 2 * r) c.Fail("pads must have 2 * rank entries");
    std::vector<Dim> pb, pe;
    for (int64_t i = 0; i < r; ++i) {
      pb.push_back(Dim::Static(pads[i]));
      pe.push_back(Dim::Static(pads[r + i]));
    }
    c.SetOut(0, c.Pad(x, pb, pe, mode, value));
  } else if (op == "Range") {
    std::vector<double> st = c.ConstFloats(c.In(0), "start"), li = c.ConstFloats(c.In(1), "limit"),
                        de = c.ConstFloats(c.In(2), "delta");
    std::string et = c.In(0).et;
    int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((li[0] - st[0]) / de[0])));
    Val r;
    r.et = et;
    r.shape = {Dim::Static(n)};
    if (IsFloatType(et)) {
      r.has_floats = true;
      for (int64_t i = 0; i < n; ++i) r.floats.push_back(st[0] + i * de[0]);
    } else {
      r.has_ints = true;
      for (int64_t i = 0; i < n; ++i) r.ints.push_back(Dim::Static(static_cast<int64_t>(st[0] + i * de[0])));
    }
    c.SetOut(0, r);
  } else {
    return false;
  }
  return true;
}

}  // namespace hexir::importers::onnx
