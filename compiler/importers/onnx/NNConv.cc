// ONNX convolutions (onnx/defs/nn): Conv reads a pre-padded input through affine maps
// (o * stride + k * dilation); grouped convolutions pick the input channel with
// `(f floordiv F/G) * C/G + c`. ConvTranspose gathers x with tensor.extract where the
// transposed index is exact and in range. Bias (input 2) is the init of the reduction.
#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"
#include "compiler/importers/onnx/NNWindow.h"

namespace hexir::importers::onnx {
namespace {

// The reduction's init over `out` (N x F x spatial): the bias broadcast along F, or zeros.
StatusOr<std::string> BiasInit(Context& c, const Shape& out, const std::string& et, Val* bias_in) {
  Builder& b = c.b;
  if (!bias_in) return b.Filled(out, et, 0);
  Val& bias = *bias_in;
  c.Mat(bias);
  int ol = static_cast<int>(out.size());
  return b.Generic({&bias}, {Builder::Map(ol, {D(1)})}, Builder::IdentityMap(ol), out, et, ol,
                   std::vector<std::string>(ol, "parallel"), "", [](const Args& a) { return a[0]; });
}

// A convolution generic's init (BiasInit) and iterators: N, F and the spatial dims parallel,
// the other `loops` (channels, kernel) reductions.
struct ConvLoops {
  std::string init;
  std::vector<std::string> iterators;
};
StatusOr<ConvLoops> ConvLoopsOf(Context& c, const Shape& out, const std::string& et, Val* bias, int spatial,
                                int loops) {
  HEXIR_ASSIGN_OR_RETURN(std::string init, BiasInit(c, out, et, bias));
  std::vector<std::string> iterators(2 + spatial, "parallel");
  iterators.resize(loops, "reduction");
  return ConvLoops{init, iterators};
}

// The spatial rank of a float N x C x spatial input x with weights of the same rank.
StatusOr<int> SpatialRank(Context& c, const Val& x, const Val& wt) {
  if (!x.IsFloat()) return c.Error("element type " + x.et + " is not supported");
  int s = static_cast<int>(x.rank()) - 2;
  if (s < 1 || wt.rank() != x.rank()) return c.Error("expected N x C x spatial input and matching weights");
  return s;
}

}  // namespace

Status LowerConv(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& wt, c.In(1));
  if (!x.IsFloat()) return c.Error("element type " + x.et + " is not supported");
  Val* bias = nullptr;
  if (c.HasIn(2)) {
    HEXIR_ASSIGN_OR_RETURN(Val& bv, c.In(2));
    bias = &bv;
  }
  return c.SetOut(0, ConvolutionOf(c, x, wt, bias));
}

StatusOr<Val> ConvolutionOf(Context& c, Val& x, Val& wt, Val* bias) {
  Builder& b = c.b;
  int s = static_cast<int>(x.rank()) - 2;
  if (s < 1 || wt.rank() != x.rank()) return c.Error("expected N x C x spatial input and matching weights");
  std::vector<int64_t> kernel;
  for (int i = 0; i < s; ++i) {
    if (wt.shape[2 + i].dynamic()) return c.Error("dynamic kernel size");
    kernel.push_back(wt.shape[2 + i].v);
  }
  int64_t group = c.AttrI("group", 1);
  if (wt.shape[0].dynamic() || wt.shape[1].dynamic()) return c.Error("dynamic weight shape");
  int64_t F = wt.shape[0].v, Cg = wt.shape[1].v;
  if (group < 1 || F % group != 0 || (!x.shape[1].dynamic() && x.shape[1].v != Cg * group))
    return c.Error("weights " + std::to_string(F) + "x" + std::to_string(Cg) + " do not fit group " +
           std::to_string(group) + " and the input channels");
  int64_t Fg = F / group;
  HEXIR_ASSIGN_OR_RETURN(Window w, WindowGeometry(c, x, kernel, false));
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
  HEXIR_ASSIGN_OR_RETURN(ConvLoops conv, ConvLoopsOf(c, out, et, bias, s, loops));
  Val r;
  r.et = et;
  r.shape = out;
  r.name = b.Generic({&xp, &wt}, {Builder::Map(loops, xm), Builder::Map(loops, wm)},
                     Builder::Map(loops, om), out, et, loops, conv.iterators, conv.init, [&](const Args& a) {
                       std::string p = b.Bin("arith.mulf", "arith.muli", a[0], a[1], et);
                       return b.Bin("arith.addf", "arith.addi", a[2], p, et);
                     });
  return r;
}

// ConvTranspose: y[n, f, o] = sum over (c, k) of x[n, g*Cg + c, (o + pad - k*d) / s] * W[g*Cg + c, f', k]
// where the division is exact and in range (f = g*Fg + f'). A window operand (tensor.empty of
// Cg x kernel) gives linalg the c and k loop ranges; x is read with tensor.extract.
Status LowerConvTranspose(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& wt, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(int s, SpatialRank(c, x, wt));
  for (const Dim& d : wt.shape)
    if (d.dynamic()) return c.Error("dynamic weight shape");
  int64_t group = c.AttrI("group", 1);
  int64_t C = wt.shape[0].v, Fg = wt.shape[1].v;
  if (group < 1 || C % group) return c.Error("weights do not fit the group count");
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
    return c.Error("strides/dilations/pads/output_padding do not match the spatial dims");
  if (!outshape.empty() && static_cast<int>(outshape.size()) < s)
    return c.Error("output_shape has fewer entries than spatial dims");
  std::string auto_pad = c.AttrS("auto_pad", "NOTSET");
  Shape out = {x.shape[0], Dim::Static(F)};
  for (int i = 0; i < s; ++i) {
    int64_t span = (kernel[i] - 1) * dil[i] + 1;
    const Dim& in = x.shape[2 + i];
    if (!outshape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      if (in.dynamic()) return c.Error("output_shape / auto_pad SAME on a dynamic dimension");
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
  Val* bias = nullptr;
  if (c.HasIn(2)) {
    HEXIR_ASSIGN_OR_RETURN(Val& bv, c.In(2));
    bias = &bv;
  }
  HEXIR_ASSIGN_OR_RETURN(ConvLoops conv, ConvLoopsOf(c, out, et, bias, s, loops));
  Val r;
  r.et = et;
  r.shape = out;
  r.name = b.Generic(
      {&wt, &win}, {Builder::Map(loops, wm), Builder::Map(loops, km)}, Builder::Map(loops, om), out,
      et, loops, conv.iterators, conv.init, [&](const Args& a) {
        std::vector<std::string> idx = b.LoopIndices(loops);
        std::string zero = b.IndexConst(0), valid;
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
          valid = b.AndI1(valid, ge);
          valid = b.AndI1(valid, ex);
          valid = b.AndI1(valid, lt);
          std::string last = b.Fresh(), lo = b.Fresh(), cl = b.Fresh();
          b.Line(last + " = arith.subi " + in_dims[i] + ", " + b.IndexConst(1) + " : index");
          b.Line(lo + " = arith.maxsi " + q + ", " + zero + " : index");
          b.Line(cl + " = arith.minsi " + lo + ", " + last + " : index");
          src.push_back(cl);
        }
        std::string e = b.Fresh(), list = Builder::Join(src);
        b.Line(e + " = tensor.extract " + x.name + "[" + list + "] : " + Builder::TensorType(x));
        std::string p = b.Bin("arith.mulf", "", e, a[0], et);
        std::string v = b.Select(valid, p, b.ScalarConst(et, 0), et);
        return b.Bin("arith.addf", "", a[2], v, et);
      });
  c.SetOut(0, r);
  return Status::Ok();
}

}  // namespace hexir::importers::onnx
