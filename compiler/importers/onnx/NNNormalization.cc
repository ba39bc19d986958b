// ONNX normalizations (onnx/defs/nn): compositions of reductions and broadcast elementwise
// generics (BatchNormalization in training mode normalizes by the batch statistics);
// per-channel vectors [C] broadcast as [C, 1, ..., 1] against N x C x ....
#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {
namespace {

// x - mean(x) and the (biased) variance over `axes`, both keeping the reduced dims as 1s.
struct Moments {
  Val mean, centered, variance;
};

StatusOr<Moments> CenteredMoments(Context& c, Val& x, const std::vector<int64_t>& axes) {
  Builder& b = c.b;
  std::string et = x.et;
  Moments m;
  HEXIR_ASSIGN_OR_RETURN(m.mean, c.Reduce(x, axes, true, "mean"));
  HEXIR_ASSIGN_OR_RETURN(m.centered, c.Elementwise({&x, &m.mean}, et, [&](const Args& a) {
    return b.Bin("arith.subf", "", a[0], a[1], et);
  }));
  HEXIR_ASSIGN_OR_RETURN(Val sq, c.Elementwise({&m.centered}, et, [&](const Args& a) {
    return b.Bin("arith.mulf", "", a[0], a[0], et);
  }));
  HEXIR_ASSIGN_OR_RETURN(m.variance, c.Reduce(sq, axes, true, "mean"));
  return m;
}

// (x - mean) / sqrt(var + eps) over `axes`, without scale/bias.
StatusOr<Val> Normalize(Context& c, Val& x, const std::vector<int64_t>& axes, double eps) {
  Builder& b = c.b;
  std::string et = x.et;
  HEXIR_ASSIGN_OR_RETURN(Moments m, CenteredMoments(c, x, axes));
  return c.Elementwise({&m.centered, &m.variance}, et, [&](const Args& a) {
    std::string e = b.ScalarConst(et, eps);
    std::string d = b.Op1("math.sqrt", b.Bin("arith.addf", "", a[1], e, et), et);
    return b.Bin("arith.divf", "", a[0], d, et);
  });
}

// Input i ([C]) reshaped to [C, 1, ..., 1] so it broadcasts against N x C x ....
StatusOr<Val> PerChannel(Context& c, int i, int64_t rank) {
  HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(i));
  if (v.rank() == 0) return c.Error("input " + std::to_string(i) + " must have a channel dim");
  Shape s = {v.shape[0]};
  for (int64_t d = 2; d < rank; ++d) s.push_back(Dim::Static(1));
  return c.ReshapeTo(v, s);
}

// The spatial axes 2.. of an N x C x ... value.
std::vector<int64_t> SpatialAxes(const Val& x) {
  std::vector<int64_t> axes;
  for (int64_t i = 2; i < x.rank(); ++i) axes.push_back(i);
  return axes;
}

}  // namespace

// Training mode (opset 14+): normalizes by the batch's own mean and (population) variance over
// N and the spatial dims; outputs 1 and 2 are the running statistics
// input * momentum + batch * (1 - momentum).
Status BatchNormalizationTraining(Context& c, Val& x) {
  Builder& b = c.b;
  std::vector<int64_t> axes = SpatialAxes(x);
  axes.insert(axes.begin(), 0);
  std::string et = x.et;
  double eps = c.AttrF("epsilon", 1e-5f), momentum = c.AttrF("momentum", 0.9f);
  HEXIR_ASSIGN_OR_RETURN(Moments m, CenteredMoments(c, x, axes));
  HEXIR_ASSIGN_OR_RETURN(Val sc, PerChannel(c, 1, x.rank()));
  HEXIR_ASSIGN_OR_RETURN(Val bi, PerChannel(c, 2, x.rank()));
  HEXIR_RETURN_IF_ERROR(c.SetOut(0, c.Elementwise({&m.centered, &m.variance, &sc, &bi}, et, [&](const Args& a) {
    std::string d = b.Op1("math.sqrt", b.Bin("arith.addf", "", a[1], b.ScalarConst(et, eps), et), et);
    return b.Bin("arith.addf", "", b.Bin("arith.mulf", "", b.Bin("arith.divf", "", a[0], d, et), a[2], et), a[3], et);
  })));
  for (int k = 0; k < 2; ++k) {
    HEXIR_ASSIGN_OR_RETURN(Val& running, c.In(3 + k));
    HEXIR_ASSIGN_OR_RETURN(Val batch, c.ReshapeTo(k == 0 ? m.mean : m.variance, running.shape));
    HEXIR_RETURN_IF_ERROR(c.SetOut(1 + k, c.Elementwise({&running, &batch}, et, [&](const Args& a) {
      return b.Bin("arith.addf", "", b.Bin("arith.mulf", "", a[0], b.ScalarConst(et, momentum), et),
                   b.Bin("arith.mulf", "", a[1], b.ScalarConst(et, 1 - momentum), et), et);
    })));
  }
  return Status::Ok();
}

Status LowerBatchNormalization(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  if (c.AttrI("training_mode", 0)) return BatchNormalizationTraining(c, x);
  HEXIR_ASSIGN_OR_RETURN(Val sc, PerChannel(c, 1, x.rank()));
  HEXIR_ASSIGN_OR_RETURN(Val bi, PerChannel(c, 2, x.rank()));
  HEXIR_ASSIGN_OR_RETURN(Val mean, PerChannel(c, 3, x.rank()));
  HEXIR_ASSIGN_OR_RETURN(Val var, PerChannel(c, 4, x.rank()));
  double eps = c.AttrF("epsilon", 1e-5f);
  std::string et = x.et;
  return c.SetOut(0, c.Elementwise({&x, &sc, &bi, &mean, &var}, et, [&](const Args& a) {
    std::string e = b.ScalarConst(et, eps);
    std::string d = b.Op1("math.sqrt", b.Bin("arith.addf", "", a[4], e, et), et);
    std::string n = b.Bin("arith.divf", "", b.Bin("arith.subf", "", a[0], a[3], et), d, et);
    return b.Bin("arith.addf", "", b.Bin("arith.mulf", "", n, a[1], et), a[2], et);
  }));
}

Status LowerInstanceNormalization(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val n, Normalize(c, x, SpatialAxes(x), c.AttrF("epsilon", 1e-5f)));
  HEXIR_ASSIGN_OR_RETURN(Val sc, PerChannel(c, 1, x.rank()));
  HEXIR_ASSIGN_OR_RETURN(Val bi, PerChannel(c, 2, x.rank()));
  std::string et = x.et;
  return c.SetOut(0, c.Elementwise({&n, &sc, &bi}, et, [&](const Args& a) {
    return b.Bin("arith.addf", "", b.Bin("arith.mulf", "", a[0], a[1], et), a[2], et);
  }));
}

// N x C x ... split into num_groups groups of C / num_groups channels, each normalized over
// its channels and spatial dims: x viewed as [N, G, C / G, ...], then scale * n + bias with
// scale and bias per group (opset 18, deprecated) or per channel (opset 21).
Status LowerGroupNormalization(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& scale, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val& bias, c.In(2));
  if (!c.HasAttr("num_groups")) return c.Error("the num_groups attribute is missing");
  const int64_t groups = c.AttrI("num_groups", 1);
  if (x.rank() < 2 || !x.IsFloat()) return c.Error("expected a float N x C x ... input");
  const bool per_channel = c.opset >= 21;
  // A run-time channel count is the per-channel scale's extent (checked when x is viewed as
  // groups below).
  Dim channels = x.shape[1];
  if (channels.dynamic() && per_channel && scale.rank() == 1) channels = scale.shape[0];
  if (groups < 1 || channels.dynamic() || channels.v % groups != 0)
    return c.Error("num_groups " + std::to_string(groups) + " does not divide the " +
                   (channels.dynamic() ? std::string("run-time") : std::to_string(channels.v)) + " channels");
  const int64_t params = per_channel ? channels.v : groups;
  for (Val* v : {&scale, &bias})
    if (v->rank() != 1 || v->shape[0].dynamic() || v->shape[0].v != params)
      return c.Error(std::string(v == &scale ? "scale" : "bias") + " must have " + std::to_string(params) +
                     " values (one per " + (per_channel ? "channel" : "group") + " at opset " +
                     std::to_string(c.opset) + ")");
  if (x.shape[1].dynamic()) {
    std::string ok = b.Fresh(), v = b.DimValue(x.shape[1]);
    b.Line(ok + " = arith.cmpi eq, " + v + ", " + b.IndexConst(channels.v) + " : index");
    b.CheckIndex(ok, c.Error("").message() + "the input has ", v,
                 " channels where scale and bias have " + std::to_string(channels.v));
  }
  Shape grouped = {x.shape[0], Dim::Static(groups), Dim::Static(channels.v / groups)};
  grouped.insert(grouped.end(), x.shape.begin() + 2, x.shape.end());
  HEXIR_ASSIGN_OR_RETURN(Val xg, c.ReshapeTo(x, grouped));
  std::vector<int64_t> axes;
  for (int64_t i = 2; i < xg.rank(); ++i) axes.push_back(i);
  HEXIR_ASSIGN_OR_RETURN(Val n, Normalize(c, xg, axes, c.AttrF("epsilon", 1e-5f)));
  // scale and bias against [N, G, C / G, ...]: [G, 1, 1...] or [G, C / G, 1...].
  Shape param_shape(xg.rank() - 1, Dim::Static(1));
  param_shape[0] = Dim::Static(groups);
  if (per_channel) param_shape[1] = Dim::Static(channels.v / groups);
  HEXIR_ASSIGN_OR_RETURN(Val sc, c.ReshapeTo(scale, param_shape));
  HEXIR_ASSIGN_OR_RETURN(Val bi, c.ReshapeTo(bias, param_shape));
  std::string et = x.et;
  HEXIR_ASSIGN_OR_RETURN(Val y, c.Elementwise({&n, &sc, &bi}, et, [&](const Args& a) {
    return b.Bin("arith.addf", "", b.Bin("arith.mulf", "", a[0], a[1], et), a[2], et);
  }));
  return c.SetOut(0, c.ReshapeTo(y, x.shape));
}

// Opset 23 (and onnxruntime's SimplifiedLayerNormalization of any opset): x / sqrt(mean(x^2
// over dims axis..) + epsilon) * scale (scale broadcast).
Status LowerRMSNormalization(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& scale, c.In(1));
  if (!x.IsFloat()) return c.Error("element type " + x.et + " is not supported");
  HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(c.AttrI("axis", -1), x.rank()));
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < x.rank(); ++i) axes.push_back(i);
  std::string et = x.et;
  double eps = c.AttrF("epsilon", 1e-5f);
  HEXIR_ASSIGN_OR_RETURN(Val squares, c.Elementwise({&x}, et, [&](const Args& a) {
    return b.Bin("arith.mulf", "", a[0], a[0], et);
  }));
  HEXIR_ASSIGN_OR_RETURN(Val mean_square, c.Reduce(squares, axes, true, "mean"));
  HEXIR_ASSIGN_OR_RETURN(Val inv_rms, c.Elementwise({&mean_square}, et, [&](const Args& a) {
    std::string rms = b.Op1("math.sqrt", b.Bin("arith.addf", "", a[0], b.ScalarConst(et, eps), et), et);
    return b.Bin("arith.divf", "", b.ScalarConst(et, 1), rms, et);
  }));
  // onnxruntime's SimplifiedLayerNormalization also returns 1 / rms (output 1).
  if (c.node->output_size() > 1 && !c.node->output(1).empty()) c.SetOut(1, inv_rms);
  return c.SetOut(0, c.Elementwise({&x, &inv_rms, &scale}, et, [&](const Args& a) {
    return b.Bin("arith.mulf", "", b.Bin("arith.mulf", "", a[0], a[1], et), a[2], et);
  }));
}

// x / ||x||_p along `axis` (p 1 or 2; a zero norm gives 0 / 0, as onnxruntime's).
Status LowerLpNormalization(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  if (!x.IsFloat()) return c.Error("element type " + x.et + " is not supported");
  HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(c.AttrI("axis", -1), x.rank()));
  int64_t p = c.AttrI("p", 2);
  if (p != 1 && p != 2) return c.Error("p " + std::to_string(p) + " is not supported (1 and 2 are)");
  std::string et = x.et;
  HEXIR_ASSIGN_OR_RETURN(Val m, c.Elementwise({&x}, et, [&](const Args& a) {
    return p == 1 ? b.Op1("math.absf", a[0], et) : b.Bin("arith.mulf", "", a[0], a[0], et);
  }));
  HEXIR_ASSIGN_OR_RETURN(Val sum, c.Reduce(m, {axis}, true, "sum"));
  return c.SetOut(0, c.Elementwise({&x, &sum}, et, [&](const Args& a) {
    std::string norm = p == 1 ? a[1] : b.Op1("math.sqrt", a[1], et);
    return b.Bin("arith.divf", "", a[0], norm, et);
  }));
}

// Outputs: Y, Mean, InvStdDev (the last two keep the normalized dims as 1s).
Status LowerLayerNormalization(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(c.AttrI("axis", -1), x.rank()));
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < x.rank(); ++i) axes.push_back(i);
  std::string et = x.et;
  double eps = c.AttrF("epsilon", 1e-5f);
  HEXIR_ASSIGN_OR_RETURN(Moments m, CenteredMoments(c, x, axes));
  HEXIR_ASSIGN_OR_RETURN(Val inv, c.Elementwise({&m.variance}, et, [&](const Args& a) {
    std::string d = b.Op1("math.sqrt", b.Bin("arith.addf", "", a[0], b.ScalarConst(et, eps), et), et);
    return b.Bin("arith.divf", "", b.ScalarConst(et, 1), d, et);
  }));
  HEXIR_ASSIGN_OR_RETURN(Val n, c.Elementwise({&m.centered, &inv}, et, [&](const Args& a) {
    return b.Bin("arith.mulf", "", a[0], a[1], et);
  }));
  c.SetOut(1, m.mean);
  c.SetOut(2, inv);
  HEXIR_ASSIGN_OR_RETURN(Val& sc, c.In(1));
  if (!c.HasIn(2))
    return c.SetOut(0, c.Elementwise({&n, &sc}, et, [&](const Args& a) {
      return b.Bin("arith.mulf", "", a[0], a[1], et);
    }));
  HEXIR_ASSIGN_OR_RETURN(Val& bi, c.In(2));
  return c.SetOut(0, c.Elementwise({&n, &sc, &bi}, et, [&](const Args& a) {
    return b.Bin("arith.addf", "", b.Bin("arith.mulf", "", a[0], a[1], et), a[2], et);
  }));
}

// (x - mean) / (sqrt(var) + 1e-9) over `axes` (default N, H, W).
Status LowerMeanVarianceNormalization(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  std::vector<int64_t> axes = c.AttrInts("axes");
  if (axes.empty()) axes = {0, 2, 3};
  std::string et = x.et;
  HEXIR_ASSIGN_OR_RETURN(Moments m, CenteredMoments(c, x, axes));
  return c.SetOut(0, c.Elementwise({&m.centered, &m.variance}, et, [&](const Args& a) {
    std::string d = b.Op1("math.sqrt", a[1], et);
    d = b.Bin("arith.addf", "", d, b.ScalarConst(et, 1e-9), et);
    return b.Bin("arith.divf", "", a[0], d, et);
  }));
}

// scale * x + bias[c] over N x C x H x W (an experimental op of opsets 1 to 9, in Caffe2
// exports such as the model zoo's Tiny YOLOv2).
Status LowerImageScaler(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  if (!x.IsFloat() || x.rank() < 2) return c.Error("expected a float N x C x ... input");
  std::vector<float> bias = c.AttrFloats("bias");
  double scale = c.AttrF("scale", 1.0f);
  if (x.shape[1].dynamic() || static_cast<int64_t>(bias.size()) != x.shape[1].v)
    return c.Error("bias has " + std::to_string(bias.size()) + " values, the input " +
                   (x.shape[1].dynamic() ? std::string("a run-time channel count")
                                         : std::to_string(x.shape[1].v) + " channels"));
  Val channel_bias;
  channel_bias.et = "f32";
  channel_bias.shape.assign(x.rank() - 1, Dim::Static(1));
  channel_bias.shape[0] = x.shape[1];
  channel_bias.has_floats = true;
  channel_bias.floats.assign(bias.begin(), bias.end());
  std::string et = x.et;
  return c.SetOut(0, c.Elementwise({&x, &channel_bias}, et, [&](const Args& a) {
    std::string scaled = b.Bin("arith.mulf", "", a[0], b.ScalarConst(et, scale), et);
    return b.Bin("arith.addf", "", scaled, b.Convert(a[1], "f32", et), et);
  }));
}

// x / (bias + alpha / size * sum of squares over a channel window of `size`) ^ beta.
Status LowerLRN(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  int64_t size = c.AttrI("size", 1);
  double alpha = c.AttrF("alpha", 1e-4f), beta = c.AttrF("beta", 0.75f), bias = c.AttrF("bias", 1.0f);
  if (x.rank() < 3 || size < 1) return c.Error("expected N x C x ... input and size >= 1");
  std::string et = x.et;
  HEXIR_ASSIGN_OR_RETURN(Val sq, c.Elementwise({&x}, et, [&](const Args& a) {
    return b.Bin("arith.mulf", "", a[0], a[0], et);
  }));
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
  return c.SetOut(0, c.Elementwise({&x, &sum}, et, [&](const Args& a) {
    std::string s = b.Bin("arith.mulf", "", a[1], b.ScalarConst(et, alpha / size), et);
    s = b.Bin("arith.addf", "", s, b.ScalarConst(et, bias), et);
    std::string p = b.Fresh();
    b.Line(p + " = math.powf " + s + ", " + b.ScalarConst(et, beta) + " : " + et);
    return b.Bin("arith.divf", "", a[0], p, et);
  }));
}

}  // namespace hexir::importers::onnx
