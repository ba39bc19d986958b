// ONNX optimizers (onnx/defs/training, domain ai.onnx.preview.training, version 1): Adagrad,
// Adam, Momentum. Inputs are the learning rate R and the update count T (scalars, read at run
// time), then n tensors X, n gradients G and n of each optimizer state; outputs are the n new
// X, then the n new states of each kind. Every output is one elementwise generic that reads R
// and T as 0-D operands (a generic per output: the states feed X's update).
#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {
namespace {

// The node's operands split into R, T and `groups` lists of n tensors each.
struct OptimizerOperands {
  Val* r = nullptr;
  Val* t = nullptr;
  std::vector<std::vector<Val*>> groups;  // [X, G, states...][i]
};

StatusOr<OptimizerOperands> SplitOperands(Context& c, int groups) {
  int tensors = c.NumIn() - 2;
  if (tensors <= 0 || tensors % groups != 0)
    return c.Error("expected R, T and " + std::to_string(groups) + " lists of equally many tensors, got " +
                   std::to_string(c.NumIn()) + " operands");
  if (c.node->output_size() > tensors / groups * (groups - 1))
    return c.Error("more outputs than the " + std::to_string(tensors / groups * (groups - 1)) + " updated tensors");
  OptimizerOperands ops;
  HEXIR_ASSIGN_OR_RETURN(Val& r, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& t, c.In(1));
  if (r.rank() != 0 || !r.IsFloat()) return c.Error("R must be a float scalar, got " + Builder::TensorType(r));
  if (t.rank() != 0 || t.et != "i64") return c.Error("T must be an int64 scalar, got " + Builder::TensorType(t));
  ops.r = &r;
  ops.t = &t;
  int n = tensors / groups;
  ops.groups.resize(groups);
  for (int g = 0; g < groups; ++g) {
    for (int i = 0; i < n; ++i) {
      HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(2 + g * n + i));
      if (!v.IsFloat()) return c.Error("operand " + std::to_string(2 + g * n + i) + " must be a float tensor");
      ops.groups[g].push_back(&v);
    }
  }
  return ops;
}

StatusOr<float> RequiredFloat(Context& c, const char* name) {
  if (!c.HasAttr(name)) return c.Error(std::string("attribute '") + name + "' is required");
  return c.AttrF(name, 0);
}

// Named scalar arithmetic inside a generic body of element type et.
struct Scalars {
  Builder& b;
  std::string et;
  std::string K(double v) { return b.ScalarConst(et, v); }
  std::string Add(const std::string& x, const std::string& y) { return b.Bin("arith.addf", "", x, y, et); }
  std::string Sub(const std::string& x, const std::string& y) { return b.Bin("arith.subf", "", x, y, et); }
  std::string Mul(const std::string& x, const std::string& y) { return b.Bin("arith.mulf", "", x, y, et); }
  std::string Div(const std::string& x, const std::string& y) { return b.Bin("arith.divf", "", x, y, et); }
  std::string Sqrt(const std::string& x) { return b.Op1("math.sqrt", x, et); }
  // norm * x + g: the gradient with its L2 regularization term.
  std::string Regularized(double norm, const std::string& x, const std::string& g) { return Add(Mul(K(norm), x), g); }
  // T > 0 (T an i64 operand).
  std::string Positive(const std::string& t) { return b.Cmp("", "sgt", t, b.ScalarConst("i64", 0), "i64"); }
  std::string R(const std::string& r, const std::string& r_et) { return b.Convert(r, r_et, et); }
  std::string T(const std::string& t) { return b.Convert(t, "i64", et); }
};

// One output: elementwise over `ins` followed by R and T (body args: ins..., r, t, out).
Status SetUpdate(Context& c, int out, std::vector<Val*> ins, OptimizerOperands& ops,
                 const std::function<std::string(Scalars& s, const Args& a, const std::string& r, const std::string& t)>& body) {
  if (out >= c.node->output_size() || c.node->output(out).empty()) return Status::Ok();
  std::string et = ins[0]->et;
  size_t n = ins.size();
  std::string r_et = ops.r->et;
  ins.push_back(ops.r);
  ins.push_back(ops.t);
  return c.SetOut(out, c.Elementwise(ins, et, [&](const Args& a) {
    Scalars s{c.b, et};
    return body(s, a, s.R(a[n], r_et), a[n + 1]);
  }));
}

}  // namespace

// X_new = X - r G' / (sqrt(H_new) + epsilon), H_new = H + G'^2, r = R / (1 + T decay_factor),
// G' = norm_coefficient X + G.
Status LowerAdagrad(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(OptimizerOperands ops, SplitOperands(c, 3));
  double decay = c.AttrF("decay_factor", 0), epsilon = c.AttrF("epsilon", 0), norm = c.AttrF("norm_coefficient", 0);
  size_t n = ops.groups[0].size();
  for (size_t i = 0; i < n; ++i) {
    Val *x = ops.groups[0][i], *g = ops.groups[1][i], *h = ops.groups[2][i];
    auto h_new = [&](Scalars& s, const std::string& xv, const std::string& gv, const std::string& hv) {
      std::string gr = s.Regularized(norm, xv, gv);
      return s.Add(hv, s.Mul(gr, gr));
    };
    HEXIR_RETURN_IF_ERROR(SetUpdate(c, static_cast<int>(i), {x, g, h}, ops, [&](Scalars& s, const Args& a, const std::string& r, const std::string& t) {
      std::string rate = s.Div(r, s.Add(s.K(1), s.Mul(s.T(t), s.K(decay))));
      std::string gr = s.Regularized(norm, a[0], a[1]);
      std::string denominator = s.Add(s.Sqrt(h_new(s, a[0], a[1], a[2])), s.K(epsilon));
      return s.Sub(a[0], s.Div(s.Mul(rate, gr), denominator));
    }));
    HEXIR_RETURN_IF_ERROR(SetUpdate(c, static_cast<int>(n + i), {x, g, h}, ops, [&](Scalars& s, const Args& a, const std::string&, const std::string&) {
      return h_new(s, a[0], a[1], a[2]);
    }));
  }
  return Status::Ok();
}

// V_new = alpha V + (1 - alpha) G', H_new = beta H + (1 - beta) G'^2, X_new = (1 -
// norm_coefficient_post) (X - R' V_new / (sqrt(H_new) + epsilon)), R' = R sqrt(1 - beta^T) /
// (1 - alpha^T) when T > 0, else R.
Status LowerAdam(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(OptimizerOperands ops, SplitOperands(c, 4));
  double alpha = c.AttrF("alpha", 0.9f), beta = c.AttrF("beta", 0.999f), epsilon = c.AttrF("epsilon", 0);
  double norm = c.AttrF("norm_coefficient", 0), norm_post = c.AttrF("norm_coefficient_post", 0);
  size_t n = ops.groups[0].size();
  for (size_t i = 0; i < n; ++i) {
    Val *x = ops.groups[0][i], *g = ops.groups[1][i], *v = ops.groups[2][i], *h = ops.groups[3][i];
    auto v_new = [&](Scalars& s, const Args& a) {
      return s.Add(s.Mul(s.K(alpha), a[2]), s.Mul(s.K(1 - alpha), s.Regularized(norm, a[0], a[1])));
    };
    auto h_new = [&](Scalars& s, const Args& a) {
      std::string gr = s.Regularized(norm, a[0], a[1]);
      return s.Add(s.Mul(s.K(beta), a[3]), s.Mul(s.K(1 - beta), s.Mul(gr, gr)));
    };
    HEXIR_RETURN_IF_ERROR(SetUpdate(c, static_cast<int>(i), {x, g, v, h}, ops, [&](Scalars& s, const Args& a, const std::string& r, const std::string& t) {
      std::string tf = s.T(t);
      std::string beta_t = s.b.Bin("math.powf", "", s.K(beta), tf, s.et);
      std::string alpha_t = s.b.Bin("math.powf", "", s.K(alpha), tf, s.et);
      std::string corrected = s.Div(s.Mul(r, s.Sqrt(s.Sub(s.K(1), beta_t))), s.Sub(s.K(1), alpha_t));
      std::string rate = s.b.Select(s.Positive(t), corrected, r, s.et);
      std::string denominator = s.Add(s.Sqrt(h_new(s, a)), s.K(epsilon));
      std::string x_new = s.Sub(a[0], s.Mul(rate, s.Div(v_new(s, a), denominator)));
      return s.Mul(s.K(1 - norm_post), x_new);
    }));
    HEXIR_RETURN_IF_ERROR(SetUpdate(c, static_cast<int>(n + i), {x, g, v, h}, ops, [&](Scalars& s, const Args& a, const std::string&, const std::string&) {
      return v_new(s, a);
    }));
    HEXIR_RETURN_IF_ERROR(SetUpdate(c, static_cast<int>(2 * n + i), {x, g, v, h}, ops, [&](Scalars& s, const Args& a, const std::string&, const std::string&) {
      return h_new(s, a);
    }));
  }
  return Status::Ok();
}

// V_new = alpha V + beta' G' (beta' = beta when T > 0, else 1); standard: X_new = X - R V_new,
// nesterov: X_new = X - R (G' + alpha V_new).
Status LowerMomentum(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(OptimizerOperands ops, SplitOperands(c, 3));
  HEXIR_ASSIGN_OR_RETURN(float alpha, RequiredFloat(c, "alpha"));
  HEXIR_ASSIGN_OR_RETURN(float beta, RequiredFloat(c, "beta"));
  HEXIR_ASSIGN_OR_RETURN(float norm, RequiredFloat(c, "norm_coefficient"));
  std::string mode = c.AttrS("mode", "");
  if (mode != "standard" && mode != "nesterov") return c.Error("mode '" + mode + "' is not 'standard' or 'nesterov'");
  size_t n = ops.groups[0].size();
  for (size_t i = 0; i < n; ++i) {
    Val *x = ops.groups[0][i], *g = ops.groups[1][i], *v = ops.groups[2][i];
    auto v_new = [&](Scalars& s, const Args& a, const std::string& t) {
      std::string scale = s.b.Select(s.Positive(t), s.K(beta), s.K(1), s.et);
      return s.Add(s.Mul(s.K(alpha), a[2]), s.Mul(scale, s.Regularized(norm, a[0], a[1])));
    };
    HEXIR_RETURN_IF_ERROR(SetUpdate(c, static_cast<int>(i), {x, g, v}, ops, [&](Scalars& s, const Args& a, const std::string& r, const std::string& t) {
      std::string step = v_new(s, a, t);
      if (mode == "nesterov") step = s.Add(s.Regularized(norm, a[0], a[1]), s.Mul(s.K(alpha), step));
      return s.Sub(a[0], s.Mul(r, step));
    }));
    HEXIR_RETURN_IF_ERROR(SetUpdate(c, static_cast<int>(n + i), {x, g, v}, ops, [&](Scalars& s, const Args& a, const std::string&, const std::string& t) {
      return v_new(s, a, t);
    }));
  }
  return Status::Ok();
}

}  // namespace hexir::importers::onnx
