// Less common ONNX ops built from the shared helpers: GatherElements, DepthToSpace,
// SpaceToDepth, Trilu, CumSum, Hardmax, MeanVarianceNormalization.
#include <climits>
#include <cmath>

#include "compiler/importers/onnx/Context.h"

namespace hexir::importers::onnx {
namespace {

using Args = std::vector<std::string>;

std::vector<std::string> Indices(Builder& b, int loops) {
  std::vector<std::string> idx;
  for (int i = 0; i < loops; ++i) {
    idx.push_back(b.Fresh());
    b.Line(idx.back() + " = linalg.index " + std::to_string(i) + " : index");
  }
  return idx;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

Shape StaticShape(Context& c, const Val& x) {
  for (const Dim& d : x.shape)
    if (d.dynamic()) c.Fail("dynamic dimensions are not supported by this op");
  return x.shape;
}

}  // namespace

bool LowerExtra(Context& c) {
  const std::string& op = c.node->op_type();
  Builder& b = c.b;
  if (op == "GatherElements") {
    Val& data = c.In(0);
    Val& ind = c.In(1);
    int64_t axis = c.NormAxis(c.AttrI("axis", 0), data.rank());
    if (ind.rank() != data.rank()) c.Fail("indices must have the rank of data");
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
                         std::vector<std::string> idx = Indices(b, loops);
                         std::string iv = b.Fresh(), neg = b.Fresh(), w = b.Fresh(), s = b.Fresh();
                         b.Line(iv + " = arith.index_cast " + a[0] + " : " + it + " to index");
                         b.Line(neg + " = arith.cmpi slt, " + iv + ", " + b.IndexConst(0) + " : index");
                         b.Line(w + " = arith.addi " + iv + ", " + dim + " : index");
                         b.Line(s + " = arith.select " + neg + ", " + w + ", " + iv + " : index");
                         idx[axis] = s;
                         std::string e = b.Fresh();
                         b.Line(e + " = tensor.extract " + data.name + "[" + Join(idx) + "] : " +
                                Builder::TensorType(data));
                         return e;
                       });
    c.SetOut(0, r);
    return true;
  }
  if (op == "DepthToSpace" || op == "SpaceToDepth") {
    Val& x = c.In(0);
    Shape s = StaticShape(c, x);
    if (x.rank() != 4) c.Fail("expected a 4-D input");
    int64_t bs = c.AttrI("blocksize", 0);
    if (bs < 1) c.Fail("blocksize must be positive");
    int64_t n = s[0].v, ch = s[1].v, h = s[2].v, w = s[3].v;
    auto S = [](std::vector<int64_t> v) {
      Shape r;
      for (int64_t d : v) r.push_back(Dim::Static(d));
      return r;
    };
    Val r;
    if (op == "DepthToSpace") {
      if (ch % (bs * bs)) c.Fail("channels not divisible by blocksize^2");
      int64_t oc = ch / (bs * bs);
      bool crd = c.AttrS("mode", "DCR") == "CRD";
      Val t = c.ReshapeTo(x, crd ? S({n, oc, bs, bs, h, w}) : S({n, bs, bs, oc, h, w}));
      Val p = c.Transpose(t, crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3}
                                 : std::vector<int64_t>{0, 3, 4, 1, 5, 2});
      r = c.ReshapeTo(p, S({n, oc, h * bs, w * bs}));
    } else {
      if (h % bs || w % bs) c.Fail("spatial dims not divisible by blocksize");
      Val t = c.ReshapeTo(x, S({n, ch, h / bs, bs, w / bs, bs}));
      Val p = c.Transpose(t, {0, 3, 5, 1, 2, 4});
      r = c.ReshapeTo(p, S({n, ch * bs * bs, h / bs, w / bs}));
    }
    c.SetOut(0, r);
    return true;
  }
  if (op == "Trilu") {
    Val& x = c.In(0);
    if (x.rank() < 2) c.Fail("expected rank >= 2");
    int64_t k = c.HasIn(1) ? c.ConstInts(c.In(1), "k")[0] : 0;
    bool upper = c.AttrI("upper", 1) != 0;
    std::string et = x.et;
    int loops = static_cast<int>(x.rank());
    c.SetOut(0, c.Elementwise({&x}, et, [&](const Args& a) {
      std::string i = b.Fresh(), j = b.Fresh(), ii = b.Fresh(), jj = b.Fresh(), d = b.Fresh();
      b.Line(i + " = linalg.index " + std::to_string(loops - 2) + " : index");
      b.Line(j + " = linalg.index " + std::to_string(loops - 1) + " : index");
      b.Line(ii + " = arith.index_cast " + i + " : index to i64");
      b.Line(jj + " = arith.index_cast " + j + " : index to i64");
      b.Line(d + " = arith.subi " + jj + ", " + ii + " : i64");  // keep when j - i >= k (upper)
      std::string kk = b.ScalarConst("i64", static_cast<double>(k));
      std::string keep = b.Cmp("", upper ? "sge" : "sle", d, kk, "i64");
      return b.Select(keep, a[0], b.ScalarConst(et, 0), et);
    }));
    return true;
  }
  if (op == "CumSum") {
    Val& x = c.In(0);
    int64_t axis = c.NormAxis(c.ConstInts(c.In(1), "axis")[0], x.rank());
    bool excl = c.AttrI("exclusive", 0) != 0, rev = c.AttrI("reverse", 0) != 0;
    c.Mat(x);
    // out[.., i, ..] = sum over k of x[.., k, ..] where k <= i (or the exclusive/reverse forms):
    // loops = output dims + one reduction loop k over the axis.
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
    return true;
  }
  if (op == "Hardmax") {
    Val& x = c.In(0);
    int64_t axis = c.NormAxis(c.AttrI("axis", -1), x.rank());
    if (c.opset < 13) c.Fail("opset < 13 (coerced 2-D) Hardmax is not supported");
    std::string et = x.et;
    Val mx = c.Reduce(x, {axis}, true, "max");
    Val idx = c.Elementwise({&x, &mx}, "i64", [&](const Args& a) {
      std::string eq = b.Cmp("oeq", "eq", a[0], a[1], et);
      std::string i = b.Fresh(), i64 = b.Fresh();
      b.Line(i + " = linalg.index " + std::to_string(axis) + " : index");
      b.Line(i64 + " = arith.index_cast " + i + " : index to i64");
      return b.Select(eq, i64, b.ScalarConst("i64", INT64_MAX), "i64");
    });
    Val first = c.Reduce(idx, {axis}, true, "min");
    c.SetOut(0, c.Elementwise({&x, &first}, et, [&](const Args& a) {
      std::string i = b.Fresh(), i64 = b.Fresh();
      b.Line(i + " = linalg.index " + std::to_string(axis) + " : index");
      b.Line(i64 + " = arith.index_cast " + i + " : index to i64");
      std::string eq = b.Cmp("", "eq", i64, a[1], "i64");
      return b.Select(eq, b.ScalarConst(et, 1), b.ScalarConst(et, 0), et);
    }));
    return true;
  }
  if (op == "MeanVarianceNormalization") {
    Val& x = c.In(0);
    std::vector<int64_t> axes = c.AttrInts("axes");
    if (axes.empty()) axes = {0, 2, 3};
    std::string et = x.et;
    Val mean = c.Reduce(x, axes, true, "mean");
    Val cen = c.Elementwise({&x, &mean}, et, [&](const Args& a) {
      return b.Bin("arith.subf", "", a[0], a[1], et);
    });
    Val sq = c.Elementwise({&cen}, et, [&](const Args& a) {
      return b.Bin("arith.mulf", "", a[0], a[0], et);
    });
    Val var = c.Reduce(sq, axes, true, "mean");
    c.SetOut(0, c.Elementwise({&cen, &var}, et, [&](const Args& a) {
      std::string d = b.Op1("math.sqrt", a[1], et);
      d = b.Bin("arith.addf", "", d, b.ScalarConst(et, 1e-9), et);
      return b.Bin("arith.divf", "", a[0], d, et);
    }));
    return true;
  }
  if (op == "CastLike") {
    Val& x = c.In(0);
    std::string from = x.et, to = c.In(1).et;
    c.SetOut(0, c.Elementwise({&x}, to, [&](const Args& a) { return b.Convert(a[0], from, to); }));
    return true;
  }
  if (op == "EyeLike") {
    Val& x = c.In(0);
    if (x.rank() != 2) c.Fail("expected a 2-D input");
    std::string et = c.HasAttr("dtype") ? Context::ElementType(static_cast<int>(c.AttrI("dtype", 1))) : x.et;
    if (et.empty()) c.Fail("unsupported dtype");
    int64_t k = c.AttrI("k", 0);
    Val r;
    r.et = et;
    r.shape = x.shape;
    r.name = b.Generic({}, {}, Builder::IdentityMap(2), x.shape, et, 2, {"parallel", "parallel"}, "",
                       [&](const Args&) {
                         std::vector<std::string> idx = Indices(b, 2);
                         std::string s = b.Fresh(), eq = b.Fresh();
                         b.Line(s + " = arith.addi " + idx[0] + ", " + b.IndexConst(k) + " : index");
                         b.Line(eq + " = arith.cmpi eq, " + s + ", " + idx[1] + " : index");
                         return b.Select(eq, b.ScalarConst(et, 1), b.ScalarConst(et, 0), et);
                       });
    c.SetOut(0, r);
    return true;
  }
  if (op == "OneHot") {
    Val& ind = c.In(0);
    std::vector<int64_t> depth;
    for (double d : c.ConstFloats(c.In(1), "depth")) depth.push_back(static_cast<int64_t>(d));
    if (depth.size() != 1 || depth[0] < 1) c.Fail("depth must be one positive value");
    Val& values = c.In(2);  // [off, on]
    int64_t rank = ind.rank() + 1;
    int64_t axis = c.NormAxis(c.AttrI("axis", -1), rank);
    Shape out = ind.shape;
    out.insert(out.begin() + axis, Dim::Static(depth.at(0)));
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
    return true;
  }
  if (op == "LRN") {
    Val& x = c.In(0);
    int64_t size = c.AttrI("size", 1);
    double alpha = c.AttrF("alpha", 1e-4f), beta = c.AttrF("beta", 0.75f), bias = c.AttrF("bias", 1.0f);
    if (x.rank() < 3 || size < 1) c.Fail("expected N x C x ... input and size >= 1");
    std::string et = x.et;
    Val sq = c.Elementwise({&x}, et, [&](const Args& a) { return b.Bin("arith.mulf", "", a[0], a[0], et); });
    std::vector<Dim> pb(x.rank(), Dim::Static(0)), pe = pb;
    pb[1] = Dim::Static((size - 1) / 2);
    pe[1] = Dim::Static(size - 1 - (size - 1) / 2);
    Val padded = c.Pad(sq, pb, pe, "constant", 0.0);
    c.Mat(padded);
    Val win;
    win.et = et;
    win.shape = {Dim::Static(size)};
    win.name = b.Empty(win.shape, et);
    int rank = static_cast<int>(x.rank());
    int loops = rank + 1;
    std::vector<std::string> pm, om;
    for (int i = 0; i < rank; ++i) {
      pm.push_back(i == 1 ? "d1 + d" + std::to_string(rank) : "d" + std::to_string(i));
      om.push_back("d" + std::to_string(i));
    }
    std::vector<std::string> iters(rank, "parallel");
    iters.push_back("reduction");
    std::string init = b.Filled(x.shape, et, 0);
    Val sum;
    sum.et = et;
    sum.shape = x.shape;
    sum.name = b.Generic({&padded, &win}, {Builder::Map(loops, pm), Builder::Map(loops, {"d" + std::to_string(rank)})},
                         Builder::Map(loops, om), x.shape, et, loops, iters, init,
                         [&](const Args& a) { return b.Bin("arith.addf", "", a[2], a[0], et); });
    c.SetOut(0, c.Elementwise({&x, &sum}, et, [&](const Args& a) {
      std::string s = b.Bin("arith.mulf", "", a[1], b.ScalarConst(et, alpha / size), et);
      s = b.Bin("arith.addf", "", s, b.ScalarConst(et, bias), et);
      std::string p = b.Fresh();
      b.Line(p + " = math.powf " + s + ", " + b.ScalarConst(et, beta) + " : " + et);
      return b.Bin("arith.divf", "", a[0], p, et);
    }));
    return true;
  }
  if (op == "Resize" || op == "Upsample") {
    Val& x = c.In(0);
    int64_t rank = x.rank();
    std::vector<double> scales;
    std::vector<int64_t> sizes;
    std::string mode = c.AttrS("mode", "nearest");
    std::string ctm = c.AttrS("coordinate_transformation_mode", op == "Upsample" || c.opset < 11 ? "asymmetric" : "half_pixel");
    std::string nearest = c.AttrS("nearest_mode", op == "Upsample" || c.opset < 11 ? "floor" : "round_prefer_floor");
    if (op == "Upsample" || c.opset < 11) {
      scales = op == "Upsample" && c.opset < 9 ? std::vector<double>() : c.ConstFloats(c.In(1), "scales");
      if (scales.empty())
        for (const auto& a : c.node->attribute())
          if (a.name() == "scales") scales.assign(a.floats().begin(), a.floats().end());
    } else {
      if (c.HasIn(2) && !c.In(2).shape.empty() && !(c.In(2).shape[0].v == 0))
        scales = c.ConstFloats(c.In(2), "scales");
      if (c.HasIn(3)) sizes = c.ConstInts(c.In(3), "sizes");
    }
    if (mode == "bilinear") mode = "linear";
    if (mode != "nearest" && mode != "linear") c.Fail("mode '" + mode + "' is not supported");
    if (ctm == "tf_crop_and_resize") c.Fail("coordinate_transformation_mode tf_crop_and_resize is not supported");
    if (c.HasAttr("axes")) c.Fail("the axes attribute is not supported");
    if (scales.empty() && sizes.empty()) c.Fail("needs scales or sizes");
    Shape out;
    std::vector<double> sc(rank, 1.0);
    for (int64_t i = 0; i < rank; ++i) {
      const Dim& d = x.shape[i];
      bool same = sizes.empty() ? scales.at(i) == 1.0 : (!d.dynamic() && sizes.at(i) == d.v);
      if (same) {
        out.push_back(d);
        continue;
      }
      if (d.dynamic()) c.Fail("resizing a dynamic dimension is not supported");
      if (!sizes.empty()) {
        out.push_back(Dim::Static(sizes[i]));
        sc[i] = static_cast<double>(sizes[i]) / d.v;
      } else {
        out.push_back(Dim::Static(static_cast<int64_t>(std::floor(d.v * scales[i]))));
        sc[i] = scales[i];
      }
    }
    c.Mat(x);
    std::string et = x.et;
    if (mode == "linear" && !x.IsFloat()) c.Fail("linear mode on integers is not supported");
    int loops = static_cast<int>(rank);
    Val r;
    r.et = et;
    r.shape = out;
    r.name = b.Generic({}, {}, Builder::IdentityMap(loops), out, et, loops,
                       std::vector<std::string>(loops, "parallel"), "", [&](const Args&) {
      std::vector<std::string> idx = Indices(b, loops);
      // Per resized dim: source coordinate (f32), then nearest index or (i0, i1, weight).
      std::vector<std::string> i0(idx), i1(idx), wgt(loops);
      for (int i = 0; i < loops; ++i) {
        if (out[i].dynamic() || x.shape[i].dynamic() || (out[i].v == x.shape[i].v && sc[i] == 1.0)) continue;
        int64_t in = x.shape[i].v;
        double on = sizes.empty() ? in * sc[i] : static_cast<double>(out[i].v);  // the spec's length_resized
        std::string xi = b.Fresh(), xf = b.Fresh();
        b.Line(xi + " = arith.index_cast " + idx[i] + " : index to i64");
        b.Line(xf + " = arith.sitofp " + xi + " : i64 to f32");
        std::string s = b.ScalarConst("f32", sc[i]), half = b.ScalarConst("f32", 0.5), src;
        if (ctm == "asymmetric") {
          src = b.Bin("arith.divf", "", xf, s, "f32");
        } else if (ctm == "align_corners") {
          src = on <= 1 ? b.ScalarConst("f32", 0)
                        : b.Bin("arith.mulf", "", xf, b.ScalarConst("f32", static_cast<double>(in - 1) / (on - 1)), "f32");
        } else if (ctm == "tf_half_pixel_for_nn") {
          src = b.Bin("arith.divf", "", b.Bin("arith.addf", "", xf, half, "f32"), s, "f32");
        } else if (ctm == "half_pixel" || ctm == "pytorch_half_pixel") {
          src = b.Bin("arith.subf", "", b.Bin("arith.divf", "", b.Bin("arith.addf", "", xf, half, "f32"), s, "f32"), half, "f32");
          if (ctm == "pytorch_half_pixel" && on <= 1) src = b.ScalarConst("f32", 0);
        } else {
          c.Fail("coordinate_transformation_mode '" + ctm + "' is not supported");
        }
        std::string lo = b.ScalarConst("f32", 0), hi = b.ScalarConst("f32", static_cast<double>(in - 1));
        auto to_index = [&](const std::string& f) {
          std::string cl = b.Bin("arith.minimumf", "", b.Bin("arith.maximumf", "", f, lo, "f32"), hi, "f32");
          std::string i64 = b.Fresh(), ix = b.Fresh();
          b.Line(i64 + " = arith.fptosi " + cl + " : f32 to i64");
          b.Line(ix + " = arith.index_cast " + i64 + " : i64 to index");
          return ix;
        };
        if (mode == "nearest") {
          std::string n;
          if (nearest == "floor") n = b.Op1("math.floor", src, "f32");
          else if (nearest == "ceil") n = b.Op1("math.ceil", src, "f32");
          else {  // round half toward floor / ceil
            std::string fl = b.Op1("math.floor", src, "f32");
            std::string fr = b.Bin("arith.subf", "", src, fl, "f32");
            std::string up = b.Cmp(nearest == "round_prefer_ceil" ? "oge" : "ogt", "", fr, half, "f32");
            n = b.Select(up, b.Bin("arith.addf", "", fl, b.ScalarConst("f32", 1), "f32"), fl, "f32");
          }
          i0[i] = to_index(n);
        } else {
          std::string cl = b.Bin("arith.minimumf", "", b.Bin("arith.maximumf", "", src, lo, "f32"), hi, "f32");
          std::string fl = b.Op1("math.floor", cl, "f32");
          wgt[i] = b.Bin("arith.subf", "", cl, fl, "f32");
          i0[i] = to_index(fl);
          i1[i] = to_index(b.Bin("arith.addf", "", fl, b.ScalarConst("f32", 1), "f32"));
        }
      }
      auto read = [&](const std::vector<std::string>& at) {
        std::string e = b.Fresh();
        b.Line(e + " = tensor.extract " + x.name + "[" + Join(at) + "] : " + Builder::TensorType(x));
        return b.Convert(e, et, et);
      };
      if (mode == "nearest") return read(i0);
      // Multilinear: fold the resized dims one at a time over 2^k corners.
      std::vector<int> dims;
      for (int i = 0; i < loops; ++i)
        if (!wgt[i].empty()) dims.push_back(i);
      std::vector<std::string> vals;
      for (int m = 0; m < (1 << dims.size()); ++m) {
        std::vector<std::string> at = i0;
        for (size_t j = 0; j < dims.size(); ++j)
          if (m >> j & 1) at[dims[j]] = i1[dims[j]];
        std::string v = read(at);
        vals.push_back(et == "f32" ? v : b.Convert(v, et, "f32"));
      }
      for (size_t j = 0; j < dims.size(); ++j) {
        std::vector<std::string> next;
        for (size_t m = 0; m < vals.size(); m += 2) {
          std::string w = wgt[dims[j]];
          std::string d = b.Bin("arith.subf", "", vals[m + 1], vals[m], "f32");
          next.push_back(b.Bin("arith.addf", "", vals[m], b.Bin("arith.mulf", "", d, w, "f32"), "f32"));
        }
        vals = next;
      }
      return et == "f32" ? vals[0] : b.Convert(vals[0], "f32", et);
    });
    c.SetOut(0, r);
    return true;
  }
  if (op == "GatherND") {
    Val& data = c.In(0);
    Val& ind = c.In(1);
    int64_t bd = c.AttrI("batch_dims", 0), ri = ind.rank();
    if (ri < 1 || ind.shape[ri - 1].dynamic()) c.Fail("the last indices dim must be static");
    int64_t q = ind.shape[ri - 1].v;
    if (bd < 0 || bd + q > data.rank() || bd >= ri) c.Fail("indices do not fit the data rank");
    Shape out(ind.shape.begin(), ind.shape.end() - 1);
    out.insert(out.end(), data.shape.begin() + bd + q, data.shape.end());
    c.Mat(data);
    c.Mat(ind);
    std::vector<std::string> dims;
    for (const Dim& d : data.shape) dims.push_back(b.DimValue(d));
    int loops = static_cast<int>(out.size());
    std::string it = ind.et;
    Val r;
    r.et = data.et;
    r.shape = out;
    r.name = b.Generic({}, {}, Builder::IdentityMap(loops), out, data.et, loops,
                       std::vector<std::string>(loops, "parallel"), "", [&](const Args&) {
      std::vector<std::string> idx = Indices(b, loops);
      std::vector<std::string> at(idx.begin(), idx.begin() + bd);  // batch dims
      for (int64_t j = 0; j < q; ++j) {
        std::vector<std::string> ii(idx.begin(), idx.begin() + (ri - 1));
        ii.push_back(b.IndexConst(j));
        std::string e = b.Fresh(), iv = b.Fresh(), neg = b.Fresh(), w = b.Fresh(), s = b.Fresh();
        b.Line(e + " = tensor.extract " + ind.name + "[" + Join(ii) + "] : " + Builder::TensorType(ind));
        b.Line(iv + " = arith.index_cast " + e + " : " + it + " to index");
        b.Line(neg + " = arith.cmpi slt, " + iv + ", " + b.IndexConst(0) + " : index");
        b.Line(w + " = arith.addi " + iv + ", " + dims[bd + j] + " : index");
        b.Line(s + " = arith.select " + neg + ", " + w + ", " + iv + " : index");
        at.push_back(s);
      }
      for (int64_t j = ri - 1; j < loops; ++j) at.push_back(idx[j]);
      std::string e = b.Fresh();
      b.Line(e + " = tensor.extract " + data.name + "[" + Join(at) + "] : " + Builder::TensorType(data));
      return e;
    });
    c.SetOut(0, r);
    return true;
  }
  return false;
}

}  // namespace hexir::importers::onnx
