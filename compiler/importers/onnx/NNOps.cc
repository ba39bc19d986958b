// Neural-network ONNX ops: MatMul, Gemm, Conv, pooling, normalizations, softmax, reductions.
// Convolutions and pools read a pre-padded input through affine maps
// (o * stride + k * dilation); grouped convolutions pick the input channel with
// `(f floordiv F/G) * C/G + c`.
#include <climits>
#include <cmath>
#include <map>

#include "compiler/importers/onnx/Context.h"

namespace hexir::importers::onnx {
namespace {

using Args = std::vector<std::string>;

std::string D(int i) { return "d" + std::to_string(i); }

// Spatial geometry shared by Conv and the pools.
struct Window {
  int s = 0;  // spatial rank
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<Dim> pad_begin, pad_end;  // per spatial dim
  Shape out;                            // spatial output dims
};

Window Geometry(Context& c, const Val& x, const std::vector<int64_t>& kernel, bool ceil_mode) {
  Builder& b = c.b;
  Window w;
  w.s = static_cast<int>(kernel.size());
  w.kernel = kernel;
  w.strides = c.AttrInts("strides");
  w.dilations = c.AttrInts("dilations");
  if (w.strides.empty()) w.strides.assign(w.s, 1);
  if (w.dilations.empty()) w.dilations.assign(w.s, 1);
  std::vector<int64_t> pads = c.AttrInts("pads");
  if (pads.empty()) pads.assign(2 * w.s, 0);
  if (static_cast<int>(w.strides.size()) != w.s || static_cast<int>(w.dilations.size()) != w.s ||
      static_cast<int>(pads.size()) != 2 * w.s || x.rank() != w.s + 2)
    c.Fail("strides/dilations/pads do not match " + std::to_string(w.s) + " spatial dims");
  for (int i = 0; i < w.s; ++i)
    if (w.strides[i] < 1 || w.dilations[i] < 1 || kernel[i] < 1)
      c.Fail("strides, dilations and kernel sizes must be positive");
  std::string auto_pad = c.AttrS("auto_pad", "NOTSET");
  for (int i = 0; i < w.s; ++i) {
    Dim in = x.shape[2 + i];
    int64_t span = (kernel[i] - 1) * w.dilations[i] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      if (in.dynamic()) c.Fail("auto_pad SAME on a dynamic spatial dimension is not supported");
      int64_t o = (in.v + w.strides[i] - 1) / w.strides[i];
      int64_t total = std::max<int64_t>(0, (o - 1) * w.strides[i] + span - in.v);
      int64_t small = total / 2, big = total - small;
      w.pad_begin.push_back(Dim::Static(auto_pad == "SAME_UPPER" ? small : big));
      w.pad_end.push_back(Dim::Static(auto_pad == "SAME_UPPER" ? big : small));
      w.out.push_back(Dim::Static(o));
      continue;
    }
    if (auto_pad == "VALID") pads[i] = pads[w.s + i] = 0;
    Dim padded = b.Add(in, Dim::Static(pads[i] + pads[w.s + i] - span));
    Dim o;
    if (ceil_mode) {
      o = b.Add(b.FloorDiv(b.Add(padded, Dim::Static(w.strides[i] - 1)), Dim::Static(w.strides[i])),
                Dim::Static(1));
      if (!o.dynamic() && !in.dynamic() && (o.v - 1) * w.strides[i] >= in.v + pads[i]) o.v -= 1;
    } else {
      o = b.Add(b.FloorDiv(padded, Dim::Static(w.strides[i])), Dim::Static(1));
    }
    w.pad_begin.push_back(Dim::Static(pads[i]));
    // Extra end padding so the last (ceil-mode) window stays inside the padded input.
    Dim need = b.Add(b.Mul(b.Sub(o, Dim::Static(1)), Dim::Static(w.strides[i])), Dim::Static(span));
    Dim have = b.Add(in, Dim::Static(pads[i] + pads[w.s + i]));
    // Also when a window is larger than the input: onnxruntime's truncating division then
    // yields one output that reads only the valid part (the padding value is neutral).
    Dim extra = b.Max(b.Sub(need, have), Dim::Static(0));
    w.pad_end.push_back(b.Add(Dim::Static(pads[w.s + i]), extra));
    w.out.push_back(o);
  }
  return w;
}

Val PadSpatial(Context& c, Val& x, const Window& w, double value) {
  std::vector<Dim> pb = {Dim::Static(0), Dim::Static(0)}, pe = pb;
  pb.insert(pb.end(), w.pad_begin.begin(), w.pad_begin.end());
  pe.insert(pe.end(), w.pad_end.begin(), w.pad_end.end());
  return c.Pad(x, pb, pe, "constant", value);
}

void LowerConv(Context& c) {
  Builder& b = c.b;
  Val& x = c.In(0);
  Val& wt = c.In(1);
  if (!x.IsFloat()) c.Fail("element type " + x.et + " is not supported");
  int s = static_cast<int>(x.rank()) - 2;
  if (s < 1 || wt.rank() != x.rank()) c.Fail("expected N x C x spatial input and matching weights");
  std::vector<int64_t> kernel;
  for (int i = 0; i < s; ++i) {
    if (wt.shape[2 + i].dynamic()) c.Fail("dynamic kernel size");
    kernel.push_back(wt.shape[2 + i].v);
  }
  int64_t group = c.AttrI("group", 1);
  if (wt.shape[0].dynamic() || wt.shape[1].dynamic()) c.Fail("dynamic weight shape");
  int64_t F = wt.shape[0].v, Cg = wt.shape[1].v;
  if (group < 1 || F % group != 0 || (!x.shape[1].dynamic() && x.shape[1].v != Cg * group))
    c.Fail("weights " + std::to_string(F) + "x" + std::to_string(Cg) + " do not fit group " +
           std::to_string(group) + " and the input channels");
  int64_t Fg = F / group;
  Window w = Geometry(c, x, kernel, false);
  Val xp = PadSpatial(c, x, w, 0.0);
  c.Mat(xp);
  c.Mat(wt);
  // Loops: n, f, o_1..o_s, c, k_1..k_s.
  int loops = 3 + 2 * s;
  int dc = 2 + s;
  std::string chan = group == 1 ? D(dc)
                     : Fg == 1  ? D(1) + " * " + std::to_string(Cg) + " + " + D(dc)
                                : "(" + D(1) + " floordiv " + std::to_string(Fg) + ") * " +
                                     std::to_string(Cg) + " + " + D(dc);
  std::vector<std::string> xm = {D(0), chan}, wm = {D(1), D(dc)}, om = {D(0), D(1)};
  for (int i = 0; i < s; ++i) {
    xm.push_back(D(2 + i) + " * " + std::to_string(w.strides[i]) + " + " + D(3 + s + i) + " * " +
                 std::to_string(w.dilations[i]));
    wm.push_back(D(3 + s + i));
    om.push_back(D(2 + i));
  }
  Shape out = {x.shape[0], Dim::Static(F)};
  out.insert(out.end(), w.out.begin(), w.out.end());
  std::string et = x.et;
  std::string init;
  if (c.HasIn(2)) {
    Val& bias = c.In(2);
    c.Mat(bias);
    int ol = 2 + s;
    init = b.Generic({&bias}, {Builder::Map(ol, {D(1)})}, Builder::IdentityMap(ol), out, et, ol,
                     std::vector<std::string>(ol, "parallel"), "",
                     [](const Args& a) { return a[0]; });
  } else {
    init = b.Filled(out, et, 0);
  }
  std::vector<std::string> iters(2 + s, "parallel");
  iters.resize(loops, "reduction");
  Val r;
  r.et = et;
  r.shape = out;
  r.name = b.Generic({&xp, &wt}, {Builder::Map(loops, xm), Builder::Map(loops, wm)},
                     Builder::Map(loops, om), out, et, loops, iters, init, [&](const Args& a) {
                       std::string p = b.Bin("arith.mulf", "", a[0], a[1], et);
                       return b.Bin("arith.addf", "", a[2], p, et);
                     });
  c.SetOut(0, r);
}

// ConvTranspose: y[n, f, o] = sum over (c, k) of x[n, g*Cg + c, (o + pad - k*d) / s] * W[g*Cg + c, f', k]
// where the division is exact and in range (f = g*Fg + f'). A window operand (tensor.empty of
// Cg x kernel) gives linalg the c and k loop ranges; x is read with tensor.extract.
void LowerConvTranspose(Context& c) {
  Builder& b = c.b;
  Val& x = c.In(0);
  Val& wt = c.In(1);
  if (!x.IsFloat()) c.Fail("element type " + x.et + " is not supported");
  int s = static_cast<int>(x.rank()) - 2;
  if (s < 1 || wt.rank() != x.rank()) c.Fail("expected N x C x spatial input and matching weights");
  for (const Dim& d : wt.shape)
    if (d.dynamic()) c.Fail("dynamic weight shape");
  int64_t group = c.AttrI("group", 1);
  int64_t C = wt.shape[0].v, Fg = wt.shape[1].v;
  if (group < 1 || C % group) c.Fail("weights do not fit the group count");
  int64_t Cg = C / group, F = Fg * group;
  std::vector<int64_t> kernel, strides = c.AttrInts("strides"), dil = c.AttrInts("dilations"),
                               pads = c.AttrInts("pads"), outpad = c.AttrInts("output_padding"),
                               outshape = c.AttrInts("output_shape");
  for (int i = 0; i < s; ++i) kernel.push_back(wt.shape[2 + i].v);
  if (strides.empty()) strides.assign(s, 1);
  if (dil.empty()) dil.assign(s, 1);
  if (pads.empty()) pads.assign(2 * s, 0);
  if (outpad.empty()) outpad.assign(s, 0);
  if (static_cast<int>(strides.size()) != s || static_cast<int>(dil.size()) != s ||
      static_cast<int>(pads.size()) != 2 * s || static_cast<int>(outpad.size()) != s)
    c.Fail("strides/dilations/pads/output_padding do not match the spatial dims");
  std::string auto_pad = c.AttrS("auto_pad", "NOTSET");
  Shape out = {x.shape[0], Dim::Static(F)};
  for (int i = 0; i < s; ++i) {
    int64_t span = (kernel[i] - 1) * dil[i] + 1;
    const Dim& in = x.shape[2 + i];
    if (!outshape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      if (in.dynamic()) c.Fail("output_shape / auto_pad SAME on a dynamic dimension");
      int64_t o = !outshape.empty() ? outshape[outshape.size() - s + i] : in.v * strides[i];
      int64_t total = strides[i] * (in.v - 1) + outpad[i] + span - o;
      bool upper = auto_pad == "SAME_UPPER";
      pads[i] = total < 0 ? 0 : upper ? total / 2 : total - total / 2;  // < 0: extend the end
      pads[s + i] = total - pads[i];
    } else if (auto_pad == "VALID") {
      pads[i] = pads[s + i] = 0;
    }
    out.push_back(b.Add(b.Mul(b.Sub(in, Dim::Static(1)), Dim::Static(strides[i])),
                        Dim::Static(outpad[i] + span - pads[i] - pads[s + i])));
  }
  c.Mat(x);
  c.Mat(wt);
  Val win;
  win.et = x.et;
  win.shape.push_back(Dim::Static(Cg));
  for (int64_t k : kernel) win.shape.push_back(Dim::Static(k));
  win.name = b.Empty(win.shape, x.et);
  std::vector<std::string> in_dims;
  for (int i = 0; i < s; ++i) in_dims.push_back(b.DimValue(x.shape[2 + i]));
  int loops = 3 + 2 * s, dc = 2 + s;
  std::vector<std::string> wm, km = {D(dc)}, om = {D(0), D(1)};
  wm.push_back(group == 1 ? D(dc) : "(" + D(1) + " floordiv " + std::to_string(Fg) + ") * " +
                                        std::to_string(Cg) + " + " + D(dc));
  wm.push_back(group == 1 ? D(1) : D(1) + " mod " + std::to_string(Fg));
  for (int i = 0; i < s; ++i) {
    wm.push_back(D(3 + s + i));
    km.push_back(D(3 + s + i));
    om.push_back(D(2 + i));
  }
  std::string et = x.et;
  std::string init;
  if (c.HasIn(2)) {
    Val& bias = c.In(2);
    c.Mat(bias);
    int ol = 2 + s;
    init = b.Generic({&bias}, {Builder::Map(ol, {D(1)})}, Builder::IdentityMap(ol), out, et, ol,
                     std::vector<std::string>(ol, "parallel"), "", [](const Args& a) { return a[0]; });
  } else {
    init = b.Filled(out, et, 0);
  }
  std::vector<std::string> iters(2 + s, "parallel");
  iters.resize(loops, "reduction");
  Val r;
  r.et = et;
  r.shape = out;
  r.name = b.Generic(
      {&wt, &win}, {Builder::Map(loops, wm), Builder::Map(loops, km)}, Builder::Map(loops, om), out,
      et, loops, iters, init, [&](const Args& a) {
        std::vector<std::string> idx;
        for (int i = 0; i < loops; ++i) {
          idx.push_back(b.Fresh());
          b.Line(idx.back() + " = linalg.index " + std::to_string(i) + " : index");
        }
        std::string zero = b.IndexConst(0), valid;
        auto all = [&](const std::string& cond) {
          if (valid.empty()) {
            valid = cond;
          } else {
            std::string v = b.Fresh();
            b.Line(v + " = arith.andi " + valid + ", " + cond + " : i1");
            valid = v;
          }
        };
        std::vector<std::string> src = {idx[0]};
        std::string g = b.Fresh(), gc = b.Fresh(), ch = b.Fresh();
        b.Line(g + " = arith.divui " + idx[1] + ", " + b.IndexConst(Fg) + " : index");
        b.Line(gc + " = arith.muli " + g + ", " + b.IndexConst(Cg) + " : index");
        b.Line(ch + " = arith.addi " + gc + ", " + idx[dc] + " : index");
        src.push_back(ch);
        for (int i = 0; i < s; ++i) {
          std::string kd = b.Fresh(), t0 = b.Fresh(), t = b.Fresh(), rem = b.Fresh(), q = b.Fresh();
          b.Line(kd + " = arith.muli " + idx[3 + s + i] + ", " + b.IndexConst(dil[i]) + " : index");
          b.Line(t0 + " = arith.addi " + idx[2 + i] + ", " + b.IndexConst(pads[i]) + " : index");
          b.Line(t + " = arith.subi " + t0 + ", " + kd + " : index");
          b.Line(rem + " = arith.remsi " + t + ", " + b.IndexConst(strides[i]) + " : index");
          b.Line(q + " = arith.divsi " + t + ", " + b.IndexConst(strides[i]) + " : index");
          std::string ge = b.Fresh(), ex = b.Fresh(), lt = b.Fresh();
          b.Line(ge + " = arith.cmpi sge, " + t + ", " + zero + " : index");
          b.Line(ex + " = arith.cmpi eq, " + rem + ", " + zero + " : index");
          b.Line(lt + " = arith.cmpi slt, " + q + ", " + in_dims[i] + " : index");
          all(ge);
          all(ex);
          all(lt);
          std::string last = b.Fresh(), lo = b.Fresh(), cl = b.Fresh();
          b.Line(last + " = arith.subi " + in_dims[i] + ", " + b.IndexConst(1) + " : index");
          b.Line(lo + " = arith.maxsi " + q + ", " + zero + " : index");
          b.Line(cl + " = arith.minsi " + lo + ", " + last + " : index");
          src.push_back(cl);
        }
        std::string list, e = b.Fresh();
        for (size_t j = 0; j < src.size(); ++j) list += (j ? ", " : "") + src[j];
        b.Line(e + " = tensor.extract " + x.name + "[" + list + "] : " + Builder::TensorType(x));
        std::string p = b.Bin("arith.mulf", "", e, a[0], et);
        std::string v = b.Select(valid, p, b.ScalarConst(et, 0), et);
        return b.Bin("arith.addf", "", a[2], v, et);
      });
  c.SetOut(0, r);
}

void LowerPool(Context& c, bool max) {
  Builder& b = c.b;
  Val& x = c.In(0);
  if (!x.IsFloat()) c.Fail("element type " + x.et + " is not supported");
  std::vector<int64_t> kernel = c.AttrInts("kernel_shape");
  int s = static_cast<int>(kernel.size());
  if (s == 0 || x.rank() != s + 2) c.Fail("kernel_shape does not match the input rank");
  if (c.node->output_size() > 1 && !c.node->output(1).empty()) c.Fail("the Indices output is not supported");
  std::string et = x.et;
  Window w = Geometry(c, x, kernel, c.AttrI("ceil_mode", 0) != 0);
  Val xp = PadSpatial(c, x, w, max ? -INFINITY : 0.0);
  c.Mat(xp);
  Val win;
  win.et = et;
  for (int64_t k : kernel) win.shape.push_back(Dim::Static(k));
  win.name = b.Empty(win.shape, et);
  int loops = 2 + 2 * s;
  std::vector<std::string> xm = {D(0), D(1)}, km, om = {D(0), D(1)};
  for (int i = 0; i < s; ++i) {
    xm.push_back(D(2 + i) + " * " + std::to_string(w.strides[i]) + " + " + D(2 + s + i) + " * " +
                 std::to_string(w.dilations[i]));
    km.push_back(D(2 + s + i));
    om.push_back(D(2 + i));
  }
  Shape out = {x.shape[0], x.shape[1]};
  out.insert(out.end(), w.out.begin(), w.out.end());
  std::vector<std::string> iters(2 + s, "parallel");
  iters.resize(loops, "reduction");
  std::string init = b.Filled(out, et, max ? -INFINITY : 0.0);
  Val r;
  r.et = et;
  r.shape = out;
  r.name = b.Generic({&xp, &win}, {Builder::Map(loops, xm), Builder::Map(loops, km)},
                     Builder::Map(loops, om), out, et, loops, iters, init, [&](const Args& a) {
                       return max ? b.Bin("arith.maximumf", "", a[2], a[0], et)
                                  : b.Bin("arith.addf", "", a[2], a[0], et);
                     });
  if (!max) {
    bool include_pad = c.AttrI("count_include_pad", 0) != 0;
    bool padded = false;
    for (int i = 0; i < s; ++i)
      padded = padded || w.pad_begin[i].v != 0 || w.pad_end[i].dynamic() || w.pad_end[i].v != 0;
    int64_t ksize = 1;
    for (int64_t k : kernel) ksize *= k;
    if (include_pad || !padded) {
      r = c.Elementwise({&r}, et, [&](const Args& a) {
        return b.Bin("arith.divf", "", a[0], b.ScalarConst(et, static_cast<double>(ksize)), et);
      });
    } else {
      // Count the window positions inside the unpadded input, per output position.
      std::vector<std::string> dims;
      for (int i = 0; i < s; ++i) dims.push_back(b.DimValue(x.shape[2 + i]));
      int cl = 2 * s;
      Shape cshape(w.out.begin(), w.out.end());
      std::vector<std::string> cm, co;
      for (int i = 0; i < s; ++i) {
        cm.push_back(D(s + i));
        co.push_back(D(i));
      }
      std::vector<std::string> citers(s, "parallel");
      citers.resize(cl, "reduction");
      std::string cinit = b.Filled(cshape, et, 0);
      Val cnt;
      cnt.et = et;
      cnt.shape = cshape;
      cnt.name = b.Generic({&win}, {Builder::Map(cl, cm)}, Builder::Map(cl, co), cshape, et, cl,
                           citers, cinit, [&](const Args& a) {
                             std::string valid;
                             for (int i = 0; i < s; ++i) {
                               std::string o = b.Fresh(), k = b.Fresh(), p = b.Fresh();
                               b.Line(o + " = linalg.index " + std::to_string(i) + " : index");
                               b.Line(k + " = linalg.index " + std::to_string(s + i) + " : index");
                               std::string os = b.Fresh(), kd = b.Fresh(), sum = b.Fresh();
                               b.Line(os + " = arith.muli " + o + ", " +
                                      b.IndexConst(w.strides[i]) + " : index");
                               b.Line(kd + " = arith.muli " + k + ", " +
                                      b.IndexConst(w.dilations[i]) + " : index");
                               b.Line(sum + " = arith.addi " + os + ", " + kd + " : index");
                               b.Line(p + " = arith.subi " + sum + ", " +
                                      b.IndexConst(w.pad_begin[i].v) + " : index");
                               std::string ge = b.Fresh(), lt = b.Fresh(), ok = b.Fresh();
                               b.Line(ge + " = arith.cmpi sge, " + p + ", " + b.IndexConst(0) + " : index");
                               b.Line(lt + " = arith.cmpi slt, " + p + ", " + dims[i] + " : index");
                               b.Line(ok + " = arith.andi " + ge + ", " + lt + " : i1");
                               if (valid.empty()) {
                                 valid = ok;
                               } else {
                                 std::string v2 = b.Fresh();
                                 b.Line(v2 + " = arith.andi " + valid + ", " + ok + " : i1");
                                 valid = v2;
                               }
                             }
                             std::string one = b.ScalarConst(et, 1), zero = b.ScalarConst(et, 0);
                             return b.Bin("arith.addf", "", a[1], b.Select(valid, one, zero, et), et);
                           });
      std::vector<std::string> rm;
      int rl = 2 + s;
      for (int i = 0; i < s; ++i) rm.push_back(D(2 + i));
      Val q;
      q.et = et;
      q.shape = out;
      c.Mat(r);
      q.name = b.Generic({&r, &cnt}, {Builder::IdentityMap(rl), Builder::Map(rl, rm)},
                         Builder::IdentityMap(rl), out, et, rl,
                         std::vector<std::string>(rl, "parallel"), "",
                         [&](const Args& a) { return b.Bin("arith.divf", "", a[0], a[1], et); });
      r = q;
    }
  }
  c.SetOut(0, r);
}

// Normalizes x over `axes` (mean/variance computed here), without scale/bias.
Val Normalize(Context& c, Val& x, const std::vector<int64_t>& axes, double eps) {
  Builder& b = c.b;
  std::string et = x.et;
  Val mean = c.Reduce(x, axes, true, "mean");
  Val cen = c.Elementwise({&x, &mean}, et, [&](const Args& a) {
    return b.Bin("arith.subf", "", a[0], a[1], et);
  });
  Val sq = c.Elementwise({&cen}, et, [&](const Args& a) {
    return b.Bin("arith.mulf", "", a[0], a[0], et);
  });
  Val var = c.Reduce(sq, axes, true, "mean");
  return c.Elementwise({&cen, &var}, et, [&](const Args& a) {
    std::string e = b.ScalarConst(et, eps);
    std::string d = b.Op1("math.sqrt", b.Bin("arith.addf", "", a[1], e, et), et);
    return b.Bin("arith.divf", "", a[0], d, et);
  });
}

// Reshapes a per-channel vector [C] to [C, 1, ..., 1] so it broadcasts against N x C x ....
Val PerChannel(Context& c, Val& v, int64_t rank) {
  Shape s = {v.shape[0]};
  for (int64_t i = 2; i < rank; ++i) s.push_back(Dim::Static(1));
  return c.ReshapeTo(v, s);
}

}  // namespace

bool LowerNN(Context& c) {
  const std::string& op = c.node->op_type();
  Builder& b = c.b;
  if (op == "MatMul" || op == "Gemm") {
    if (c.In(0).rank() == 0 || c.In(1).rank() == 0) c.Fail("operands must have rank >= 1");
    if (c.In(0).et != c.In(1).et) c.Fail("operands have different element types");
  }
  if (op == "MatMul") {
    c.SetOut(0, c.MatMul(c.In(0), c.In(1)));
    return true;
  }
  if (op == "Gemm") {
    Val a = c.In(0), bm = c.In(1);
    if (a.rank() != 2 || bm.rank() != 2) c.Fail("Gemm operands must be 2-D");
    if (c.AttrI("transA", 0)) a = c.Transpose(a, {1, 0});
    if (c.AttrI("transB", 0)) bm = c.Transpose(bm, {1, 0});
    Val y = c.MatMul(a, bm);
    float alpha = c.AttrF("alpha", 1.0f), beta = c.AttrF("beta", 1.0f);
    std::string et = y.et;
    if (alpha != 1.0f)
      y = c.Elementwise({&y}, et, [&](const Args& x) {
        return b.Bin("arith.mulf", "", x[0], b.ScalarConst(et, alpha), et);
      });
    if (c.HasIn(2) && beta != 0.0f) {
      Val& cc = c.In(2);
      y = c.Elementwise({&y, &cc}, et, [&](const Args& x) {
        std::string v = beta == 1.0f ? x[1] : b.Bin("arith.mulf", "", x[1], b.ScalarConst(et, beta), et);
        return b.Bin("arith.addf", "", x[0], v, et);
      });
    }
    c.SetOut(0, y);
    return true;
  }
  if (op == "Conv") {
    LowerConv(c);
    return true;
  }
  if (op == "ConvTranspose") {
    LowerConvTranspose(c);
    return true;
  }
  if (op == "MaxPool" || op == "AveragePool") {
    LowerPool(c, op == "MaxPool");
    return true;
  }
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    Val& x = c.In(0);
    std::vector<int64_t> axes;
    for (int64_t i = 2; i < x.rank(); ++i) axes.push_back(i);
    c.SetOut(0, c.Reduce(x, axes, true, op == "GlobalMaxPool" ? "max" : "mean"));
    return true;
  }
  if (op == "BatchNormalization") {
    if (c.node->output_size() > 1 && !c.node->output(1).empty() && c.AttrI("training_mode", 0))
      c.Fail("training mode is not supported");
    Val& x = c.In(0);
    Val sc = PerChannel(c, c.In(1), x.rank()), bi = PerChannel(c, c.In(2), x.rank()),
        mean = PerChannel(c, c.In(3), x.rank()), var = PerChannel(c, c.In(4), x.rank());
    double eps = c.AttrF("epsilon", 1e-5f);
    std::string et = x.et;
    c.SetOut(0, c.Elementwise({&x, &sc, &bi, &mean, &var}, et, [&](const Args& a) {
      std::string e = b.ScalarConst(et, eps);
      std::string d = b.Op1("math.sqrt", b.Bin("arith.addf", "", a[4], e, et), et);
      std::string n = b.Bin("arith.divf", "", b.Bin("arith.subf", "", a[0], a[3], et), d, et);
      return b.Bin("arith.addf", "", b.Bin("arith.mulf", "", n, a[1], et), a[2], et);
    }));
    return true;
  }
  if (op == "InstanceNormalization") {
    Val& x = c.In(0);
    std::vector<int64_t> axes;
    for (int64_t i = 2; i < x.rank(); ++i) axes.push_back(i);
    Val n = Normalize(c, x, axes, c.AttrF("epsilon", 1e-5f));
    Val sc = PerChannel(c, c.In(1), x.rank()), bi = PerChannel(c, c.In(2), x.rank());
    std::string et = x.et;
    c.SetOut(0, c.Elementwise({&n, &sc, &bi}, et, [&](const Args& a) {
      return b.Bin("arith.addf", "", b.Bin("arith.mulf", "", a[0], a[1], et), a[2], et);
    }));
    return true;
  }
  if (op == "LayerNormalization") {
    Val& x = c.In(0);
    int64_t axis = c.NormAxis(c.AttrI("axis", -1), x.rank());
    std::vector<int64_t> axes;
    for (int64_t i = axis; i < x.rank(); ++i) axes.push_back(i);
    std::string et = x.et;
    double eps = c.AttrF("epsilon", 1e-5f);
    Val mean = c.Reduce(x, axes, true, "mean");
    Val cen = c.Elementwise({&x, &mean}, et, [&](const Args& a) {
      return b.Bin("arith.subf", "", a[0], a[1], et);
    });
    Val sq = c.Elementwise({&cen}, et, [&](const Args& a) {
      return b.Bin("arith.mulf", "", a[0], a[0], et);
    });
    Val var = c.Reduce(sq, axes, true, "mean");
    Val inv = c.Elementwise({&var}, et, [&](const Args& a) {
      std::string d = b.Op1("math.sqrt", b.Bin("arith.addf", "", a[0], b.ScalarConst(et, eps), et), et);
      return b.Bin("arith.divf", "", b.ScalarConst(et, 1), d, et);
    });
    Val n = c.Elementwise({&cen, &inv}, et, [&](const Args& a) {
      return b.Bin("arith.mulf", "", a[0], a[1], et);
    });
    c.SetOut(1, mean);
    c.SetOut(2, inv);
    Val& sc = c.In(1);
    if (c.HasIn(2)) {
      Val& bi = c.In(2);
      c.SetOut(0, c.Elementwise({&n, &sc, &bi}, et, [&](const Args& a) {
        return b.Bin("arith.addf", "", b.Bin("arith.mulf", "", a[0], a[1], et), a[2], et);
      }));
    } else {
      c.SetOut(0, c.Elementwise({&n, &sc}, et, [&](const Args& a) {
        return b.Bin("arith.mulf", "", a[0], a[1], et);
      }));
    }
    return true;
  }
  if (op == "Softmax" || op == "LogSoftmax") {
    Val& x = c.In(0);
    std::string et = x.et;
    int64_t axis = c.NormAxis(c.AttrI("axis", c.opset < 13 ? 1 : -1), x.rank());
    std::vector<int64_t> axes = {axis};
    if (c.opset < 13)  // coerced to 2-D: everything from `axis` on is one row
      for (int64_t i = axis + 1; i < x.rank(); ++i) axes.push_back(i);
    Val mx = c.Reduce(x, axes, true, "max");
    Val e = c.Elementwise({&x, &mx}, et, [&](const Args& a) {
      return b.Op1("math.exp", b.Bin("arith.subf", "", a[0], a[1], et), et);
    });
    Val sum = c.Reduce(e, axes, true, "sum");
    if (op == "Softmax") {
      c.SetOut(0, c.Elementwise({&e, &sum}, et, [&](const Args& a) {
        return b.Bin("arith.divf", "", a[0], a[1], et);
      }));
    } else {
      c.SetOut(0, c.Elementwise({&x, &mx, &sum}, et, [&](const Args& a) {
        std::string d = b.Bin("arith.subf", "", a[0], a[1], et);
        return b.Bin("arith.subf", "", d, b.Op1("math.log", a[2], et), et);
      }));
    }
    return true;
  }
  if (op == "ArgMax" || op == "ArgMin") {
    Val& x = c.In(0);
    std::string et = x.et;
    int64_t axis = c.NormAxis(c.AttrI("axis", 0), x.rank());
    bool keep = c.AttrI("keepdims", 1) != 0, last = c.AttrI("select_last_index", 0) != 0;
    bool is_max = op == "ArgMax";
    Val best = c.Reduce(x, {axis}, true, is_max ? "max" : "min");
    // Second pass: the first (or last) index along `axis` whose value equals the extreme.
    Val idx = c.Elementwise({&x, &best}, "i64", [&](const Args& a) {
      std::string eq = b.Cmp("oeq", "eq", a[0], a[1], et);
      std::string i = b.Fresh(), i64 = b.Fresh();
      b.Line(i + " = linalg.index " + std::to_string(axis) + " : index");
      b.Line(i64 + " = arith.index_cast " + i + " : index to i64");
      std::string none = b.ScalarConst("i64", last ? -1 : INT64_MAX);
      return b.Select(eq, i64, none, "i64");
    });
    c.SetOut(0, c.Reduce(idx, {axis}, keep, last ? "max" : "min"));
    return true;
  }
  static const std::map<std::string, std::string> kReductions = {
      {"ReduceMean", "mean"}, {"ReduceSum", "sum"},       {"ReduceMax", "max"},
      {"ReduceMin", "min"},   {"ReduceProd", "prod"},     {"ReduceSumSquare", "sumsquare"},
      {"ReduceL1", "l1"},     {"ReduceL2", "l2"},         {"ReduceLogSum", "logsum"},
      {"ReduceLogSumExp", "logsumexp"}};
  auto red = kReductions.find(op);
  if (red != kReductions.end()) {
    Val& x = c.In(0);
    std::vector<int64_t> axes = c.AttrInts("axes");
    bool axes_input = op == "ReduceSum" ? c.opset >= 13 : c.opset >= 18;
    if (axes_input && c.HasIn(1)) axes = c.ConstInts(c.In(1), "axes");
    if (axes.empty() && c.AttrI("noop_with_empty_axes", 0)) {
      c.SetOut(0, x);
      return true;
    }
    if (!x.IsFloat() && red->second != "sum" && red->second != "max" && red->second != "min" &&
        red->second != "prod")
      c.Fail("element type " + x.et + " is not supported");
    c.SetOut(0, c.Reduce(x, axes, c.AttrI("keepdims", 1) != 0, red->second));
    return true;
  }
  return false;
}

}  // namespace hexir::importers::onnx
