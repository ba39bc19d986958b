// ONNX tensor ops that keep element positions affine (onnx/defs/tensor): casts, reshapes
// (folded on known contents; collapse/expand when static), permutations, broadcasts, tiles,
// elementwise selections and tests. Ops on shape values (Shape, Size) fold at import time.
#include <algorithm>
#include <cmath>

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {
namespace {

// Target shape of Reshape whose entries were read at run time (any may be 0 or -1): host
// selects z_i = (e_i == 0 ? x_i : e_i), then d_i = (z_i == -1 ? total / -prod(z) : z_i).
StatusOr<Shape> RunTimeReshapeTarget(Context& c, Val& x, const std::vector<Dim>& spec, bool allowzero) {
  Builder& b = c.b;
  Shape z;
  for (size_t i = 0; i < spec.size(); ++i) {
    Dim d = spec[i];
    if (!allowzero && i < x.shape.size()) d = b.SelectDim(b.Compare("eq", d, Dim::Static(0)), x.shape[i], d);
    z.push_back(d);
  }
  Dim prod = b.Product(z, 0, z.size());
  Dim inferred = b.TruncDiv(b.Product(x.shape, 0, x.shape.size()),
                            b.Max(b.Sub(Dim::Static(0), prod), Dim::Static(1)));
  Shape out;
  for (const Dim& d : z) {
    Dim o = b.SelectDim(b.Compare("eq", d, Dim::Static(-1)), inferred, d);
    if (o.dynamic()) b.MarkNonNegative(o.ssa);
    out.push_back(o);
  }
  return out;
}

// Target shape of Reshape: 0 copies the input dim (unless allowzero), -1 is inferred.
StatusOr<Shape> ReshapeTarget(Context& c, Val& x, const std::vector<Dim>& spec, bool allowzero) {
  Builder& b = c.b;
  for (const Dim& d : spec)
    if (!b.NonNegative(d) && d.dynamic()) return RunTimeReshapeTarget(c, x, spec, allowzero);
  Shape out;
  int infer = -1;
  for (size_t i = 0; i < spec.size(); ++i) {
    const Dim& d = spec[i];
    if (!d.dynamic() && d.v == 0 && !allowzero) {
      if (i >= x.shape.size()) return c.Error("0 in the shape refers to a missing input dim");
      out.push_back(x.shape[i]);
    } else if (!d.dynamic() && d.v == -1) {
      if (infer >= 0) return c.Error("more than one -1 in the shape");
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

// Squeeze / Unsqueeze axes: the attribute before opset 13, input 1 from 13 on.
StatusOr<std::vector<int64_t>> AxesOf(Context& c) {
  if (c.opset < 13 || !c.HasIn(1)) return c.AttrInts("axes");
  HEXIR_ASSIGN_OR_RETURN(Val& axes, c.In(1));
  return c.ConstInts(axes, "axes");
}

StatusOr<Shape> StaticShape(Context& c, const Val& x) {
  for (const Dim& d : x.shape)
    if (d.dynamic()) return c.Error("dynamic dimensions are not supported by this op");
  return x.shape;
}

Shape StaticDims(const std::vector<int64_t>& v) {
  Shape r;
  for (int64_t d : v) r.push_back(Dim::Static(d));
  return r;
}

// The 4-D input of DepthToSpace / SpaceToDepth and its block size.
struct Blocks {
  int64_t n, ch, h, w, bs;
};

StatusOr<Blocks> BlocksOf(Context& c, const Val& x) {
  HEXIR_ASSIGN_OR_RETURN(Shape s, StaticShape(c, x));
  if (x.rank() != 4) return c.Error("expected a 4-D input");
  int64_t bs = c.AttrI("blocksize", 0);
  if (bs < 1) return c.Error("blocksize must be positive");
  return Blocks{s[0].v, s[1].v, s[2].v, s[3].v, bs};
}

// A copy generic of x into `out` through one input map.
Val Copy(Context& c, Val& x, const std::string& in_map, const Shape& out) {
  c.Mat(x);
  int loops = static_cast<int>(out.size());
  Val r;
  r.et = x.et;
  r.shape = out;
  r.name = c.b.Generic({&x}, {in_map}, Builder::IdentityMap(loops), out, x.et, loops,
                       std::vector<std::string>(loops, "parallel"), "",
                       [](const Args& a) { return a[0]; });
  return r;
}

// Output 0: x converted elementwise to `to` (each side's signedness as given).
Status CastTo(Context& c, Val& x, const std::string& to, bool to_unsigned) {
  Builder& b = c.b;
  const std::string from = x.et;
  const bool from_unsigned = x.is_unsigned;
  return c.SetOut(0, c.Elementwise({&x}, to, [&](const Args& a) {
    return b.Convert(a[0], from, to, from_unsigned, to_unsigned);
  }), to_unsigned);
}

}  // namespace

Status LowerCast(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  std::string to = Context::ElementType(static_cast<int>(c.AttrI("to", 1)));
  if (to.empty())
    return c.Error("cast to " + Context::UnsupportedType(static_cast<int>(c.AttrI("to", 0))));
  return CastTo(c, x, to, Context::IsUnsignedType(static_cast<int>(c.AttrI("to", 1))));
}

Status LowerCastLike(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& like, c.In(1));
  return CastTo(c, x, like.et, like.is_unsigned);
}

Status LowerIdentity(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.InAny(0));  // sequences and optionals too
  c.SetOut(0, x);
  return Status::Ok();
}

Status LowerShape(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  int64_t r = x.rank();
  int64_t st = c.AttrI("start", 0), en = c.AttrI("end", r);
  if (st < 0) st += r;
  if (en < 0) en += r;
  st = std::max<int64_t>(0, std::min(st, r));
  en = std::max<int64_t>(st, std::min(en, r));
  std::vector<Dim> extents(x.shape.begin() + st, x.shape.begin() + en);
  // Extents of a tensor: a Reshape or Slice built from them needs no run-time sign checks.
  for (const Dim& d : extents)
    if (d.dynamic()) c.b.MarkNonNegative(d.ssa);
  c.SetOut(0, KnownInts("i64", std::move(extents)));
  return Status::Ok();
}

Status LowerSize(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  c.SetOut(0, KnownInts("i64", {c.b.Product(x.shape, 0, x.shape.size())}, true));
  return Status::Ok();
}

Status LowerReshape(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& s_in, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val s, c.ShapeOperand(s_in, "the shape"));
  HEXIR_ASSIGN_OR_RETURN(Shape target, ReshapeTarget(c, x, s.ints, c.AttrI("allowzero", 0) != 0));
  return c.SetOut(0, c.ReshapeTo(x, target));
}

// Opsets 1 to 4: the target shape is the `shape` attribute (0 copies, -1 infers).
Status LowerReshapeWithAttribute(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  if (!c.HasAttr("shape")) return c.Error("the shape attribute is missing");
  std::vector<Dim> spec;
  for (int64_t d : c.AttrInts("shape")) spec.push_back(Dim::Static(d));
  HEXIR_ASSIGN_OR_RETURN(Shape target, ReshapeTarget(c, x, spec, /*allowzero=*/false));
  return c.SetOut(0, c.ReshapeTo(x, target));
}

// Without axes: every static unit dim.
Status LowerSqueeze(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf(c));
  std::vector<bool> drop(x.rank(), false);
  if (axes.empty()) {
    for (int64_t i = 0; i < x.rank(); ++i) drop[i] = !x.shape[i].dynamic() && x.shape[i].v == 1;
  } else {
    for (int64_t a : axes) {
      HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(a, x.rank()));
      drop[axis] = true;
    }
  }
  Shape out;
  for (int64_t i = 0; i < x.rank(); ++i)
    if (!drop[i]) out.push_back(x.shape[i]);
  return c.SetOut(0, c.ReshapeTo(x, out));
}

Status LowerUnsqueeze(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf(c));
  int64_t rank = x.rank() + static_cast<int64_t>(axes.size());
  std::vector<bool> ins(rank, false);
  for (int64_t a : axes) {
    HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(a, rank));
    ins[axis] = true;
  }
  Shape out;
  for (int64_t i = 0, j = 0; i < rank; ++i) {
    if (!ins[i] && j >= x.rank()) return c.Error("axes repeat an axis");
    out.push_back(ins[i] ? Dim::Static(1) : x.shape[j++]);
  }
  return c.SetOut(0, c.ReshapeTo(x, out));
}

// Default perm: the dims reversed.
Status LowerTranspose(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  std::vector<int64_t> perm = c.AttrInts("perm");
  if (perm.empty())
    for (int64_t i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < static_cast<int64_t>(sorted.size()); ++i)
    if (sorted[i] != i || static_cast<int64_t>(sorted.size()) != x.rank())
      return c.Error("perm is not a permutation");
  c.SetOut(0, c.Transpose(x, perm));
  return Status::Ok();
}

Status LowerExpand(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& s_in, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val s, c.ShapeOperand(s_in, "the shape"));
  for (const Dim& d : s.ints)
    if (d.dynamic()) c.b.MarkNonNegative(d.ssa);  // Expand's target dims are extents
  Val shape_only;
  shape_only.shape = s.ints;
  HEXIR_ASSIGN_OR_RETURN(Shape out, c.BroadcastShapes({&x, &shape_only}));
  bool static_out = true;
  int64_t count = 1;
  for (const Dim& d : out) {
    static_out = static_out && !d.dynamic();
    count *= d.dynamic() ? 1 : d.v;
  }
  if (IsKnown(x) && static_out && count <= kMaxKnownElements) {
    std::vector<int64_t> in = StaticExtents(x.shape);
    size_t off = out.size() - in.size();
    c.SetOut(0, KnownPositions(x, StaticExtents(out), [&](const std::vector<int64_t>& pos) {
      int64_t flat = 0;
      for (size_t i = 0; i < in.size(); ++i) flat = flat * in[i] + (in[i] == 1 ? 0 : pos[off + i]);
      return flat;
    }));
    return Status::Ok();
  }
  StatusOr<Val> expanded = Context::MeetsAtRunTime({&x, &shape_only}, out)
      ? c.BroadcastAtRunTime({&x, &shape_only}, 1, out, x.et, [](const Args& a) { return a[0]; })
      : StatusOr<Val>(Copy(c, x, Context::BroadcastMap(x, out), out));
  if (expanded.ok() && !expanded->name.empty()) {
    c.Mat(x);
    c.broadcast_sources[expanded->name] = x;
  }
  return c.SetOut(0, std::move(expanded));
}

// Repeats may be read at run time and dims may be dynamic: then each output position reads
// x at (i mod extent) per dim, the extents host values.
Status LowerTile(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& repeats_in, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val repeats, c.ShapeOperand(repeats_in, "repeats"));
  const std::vector<Dim>& reps = repeats.ints;
  if (static_cast<int64_t>(reps.size()) != x.rank()) return c.Error("repeats must have one entry per dim");
  Shape out;
  std::vector<std::string> m;
  int64_t count = 1;
  bool static_out = true;
  for (int64_t i = 0; i < x.rank(); ++i) {
    out.push_back(b.Mul(x.shape[i], reps[i]));
    if (out.back().dynamic()) b.MarkNonNegative(out.back().ssa);
    static_out = static_out && !out.back().dynamic() && !x.shape[i].dynamic();
    count *= out.back().dynamic() ? 1 : out.back().v;
    m.push_back("d" + std::to_string(i) + " mod " + std::to_string(x.shape[i].v));
  }
  if (IsKnown(x) && static_out && count <= kMaxKnownElements) {
    std::vector<int64_t> in = StaticExtents(x.shape);
    c.SetOut(0, KnownPositions(x, StaticExtents(out), [&](const std::vector<int64_t>& pos) {
      int64_t flat = 0;
      for (size_t i = 0; i < in.size(); ++i) flat = flat * in[i] + pos[i] % in[i];
      return flat;
    }));
    return Status::Ok();
  }
  bool static_in = true;
  for (const Dim& d : x.shape) static_in = static_in && !d.dynamic();
  if (static_in) {
    c.SetOut(0, Copy(c, x, Builder::Map(static_cast<int>(out.size()), m), out));
    return Status::Ok();
  }
  c.Mat(x);
  std::vector<std::string> extents;
  for (const Dim& d : x.shape) extents.push_back(b.DimValue(d));
  Val r;
  r.et = x.et;
  r.shape = out;
  r.name = b.IndexGeneric(out, x.et, [&](const Args&) {
    std::vector<std::string> idx = b.LoopIndices(static_cast<int>(x.rank()));
    for (size_t i = 0; i < idx.size(); ++i) {
      std::string w = b.Fresh();
      b.Line(w + " = arith.remui " + idx[i] + ", " + extents[i] + " : index");
      idx[i] = w;
    }
    std::string e = b.Fresh();
    b.Line(e + " = tensor.extract " + x.name + "[" + Builder::Join(idx) + "] : " + Builder::TensorType(x));
    return e;
  });
  c.SetOut(0, r);
  return Status::Ok();
}

// mode DCR: [n, bs, bs, c, h, w] -> [n, c, h, bs, w, bs]; CRD: [n, c, bs, bs, h, w] -> same.
Status LowerDepthToSpace(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Blocks k, BlocksOf(c, x));
  if (k.ch % (k.bs * k.bs)) return c.Error("channels not divisible by blocksize^2");
  int64_t oc = k.ch / (k.bs * k.bs);
  bool crd = c.AttrS("mode", "DCR") == "CRD";
  HEXIR_ASSIGN_OR_RETURN(Val t, c.ReshapeTo(x, crd ? StaticDims({k.n, oc, k.bs, k.bs, k.h, k.w})
                                                  : StaticDims({k.n, k.bs, k.bs, oc, k.h, k.w})));
  Val p = c.Transpose(t, crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3}
                             : std::vector<int64_t>{0, 3, 4, 1, 5, 2});
  return c.SetOut(0, c.ReshapeTo(p, StaticDims({k.n, oc, k.h * k.bs, k.w * k.bs})));
}

Status LowerSpaceToDepth(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Blocks k, BlocksOf(c, x));
  if (k.h % k.bs || k.w % k.bs) return c.Error("spatial dims not divisible by blocksize");
  HEXIR_ASSIGN_OR_RETURN(Val t, c.ReshapeTo(x, StaticDims({k.n, k.ch, k.h / k.bs, k.bs, k.w / k.bs, k.bs})));
  Val p = c.Transpose(t, {0, 3, 5, 1, 2, 4});
  return c.SetOut(0, c.ReshapeTo(p, StaticDims({k.n, k.ch * k.bs * k.bs, k.h / k.bs, k.w / k.bs})));
}

Status LowerWhere(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& cond, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val& y, c.In(2));
  std::string et = x.et;
  return c.SetOut(0, c.Elementwise({&cond, &x, &y}, et,
                                   [&](const Args& a) { return b.Select(a[0], a[1], a[2], et); }));
}

Status LowerIsNaN(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  std::string et = x.et;
  return c.SetOut(0, c.Elementwise({&x}, "i1", [&](const Args& a) {
    return b.Cmp("uno", "", a[0], a[0], et);
  }));
}

Status LowerIsInf(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  std::string et = x.et;
  bool pos = c.AttrI("detect_positive", 1) != 0, neg = c.AttrI("detect_negative", 1) != 0;
  return c.SetOut(0, c.Elementwise({&x}, "i1", [&](const Args& a) {
    std::string inf = b.ScalarConst(et, INFINITY), ninf = b.ScalarConst(et, -INFINITY);
    std::string p = pos ? b.Cmp("oeq", "", a[0], inf, et) : b.ScalarConst("i1", 0);
    std::string n = neg ? b.Cmp("oeq", "", a[0], ninf, et) : b.ScalarConst("i1", 0);
    return b.Bin("", "arith.ori", p, n, "i1");
  }));
}

}  // namespace hexir::importers::onnx
