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
