// ONNX losses (onnx/defs/math): NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
// (LogSoftmax along the class axis, then the same NLL). Per target position:
// loss = -x[n, t, d...] * w[t], 0 where t == ignore_index; reduction none keeps them, sum adds
// them, mean divides the sum by the sum of the weights of the positions not ignored.
#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {
namespace {

// x: [N, C, d...] log-probabilities, target: [N, d...] class indices; weight [C] or null.
StatusOr<Val> NllLoss(Context& c, Val& x, Val& target, Val* weight) {
  Builder& b = c.b;
  if (x.rank() < 2 || target.rank() != x.rank() - 1) return c.Error("expected input [N, C, d...] and target [N, d...]");
  if (target.IsFloat()) return c.Error("target must be integers");
  std::string reduction = c.AttrS("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return c.Error("reduction '" + reduction + "' is not supported");
  bool has_ignore = c.HasAttr("ignore_index");
  int64_t ignore = c.AttrI("ignore_index", 0);
  c.Mat(x);
  c.Mat(target);
  if (weight) c.Mat(*weight);
  std::string et = x.et, tt = target.et;
  // The class of a position (0 where ignored, so reads stay in range) and whether it counts.
  auto class_of = [&](const std::vector<std::string>& idx, std::string* counts) {
    std::string t = b.Fresh();
    b.Line(t + " = tensor.extract " + target.name + "[" + Builder::Join(idx) + "] : " + Builder::TensorType(target));
    std::string ti = b.Fresh();
    b.Line(ti + " = arith.index_cast " + t + " : " + tt + " to index");
    if (!has_ignore) {
      *counts = "";
      return ti;
    }
    *counts = b.Cmp("", "ne", t, b.ScalarConst(tt, static_cast<double>(ignore)), tt);
    return b.Select(*counts, ti, b.IndexConst(0), "index");
  };
  auto weight_of = [&](const std::string& cls) {
    if (!weight) return b.ScalarConst(et, 1);
    std::string w = b.Fresh();
    b.Line(w + " = tensor.extract " + weight->name + "[" + cls + "] : " + Builder::TensorType(*weight));
    return w;
  };
  auto zero_unless = [&](const std::string& counts, const std::string& v) {
    return counts.empty() ? v : b.Select(counts, v, b.ScalarConst(et, 0), et);
  };
  Val loss = b.Tabulate(target.shape, et, [&](std::vector<std::string> idx) {
    std::string counts;
    std::string cls = class_of(idx, &counts);
    std::vector<std::string> at = idx;
    at.insert(at.begin() + 1, cls);
    std::string v = b.Fresh();
    b.Line(v + " = tensor.extract " + x.name + "[" + Builder::Join(at) + "] : " + Builder::TensorType(x));
    std::string l = b.Op1("arith.negf", b.Bin("arith.mulf", "", v, weight_of(cls), et), et);
    return zero_unless(counts, l);
  });
  if (reduction == "none") return loss;
  std::vector<int64_t> all;
  for (int64_t i = 0; i < loss.rank(); ++i) all.push_back(i);
  HEXIR_ASSIGN_OR_RETURN(Val total, c.Reduce(loss, all, false, "sum"));
  if (reduction == "sum") return total;
  Val weights = b.Tabulate(target.shape, et, [&](std::vector<std::string> idx) {
    std::string counts;
    std::string cls = class_of(idx, &counts);
    return zero_unless(counts, weight_of(cls));
  });
  HEXIR_ASSIGN_OR_RETURN(Val denom, c.Reduce(weights, all, false, "sum"));
  return c.Elementwise({&total, &denom}, et, [&](const Args& a) { return b.Bin("arith.divf", "", a[0], a[1], et); });
}

StatusOr<Val*> Optional(Context& c, int i) {
  if (!c.HasIn(i)) return static_cast<Val*>(nullptr);
  HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(i));
  return &v;
}

}  // namespace

Status LowerNegativeLogLikelihoodLoss(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& target, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val* weight, Optional(c, 2));
  return c.SetOut(0, NllLoss(c, x, target, weight));
}

// log_prob = x - max - log(sum(exp(x - max))) along axis 1; loss = NLL(log_prob).
Status LowerSoftmaxCrossEntropyLoss(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& target, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val* weight, Optional(c, 2));
  if (!x.IsFloat() || x.rank() < 2) return c.Error("expected float scores [N, C, d...]");
  std::string et = x.et;
  HEXIR_ASSIGN_OR_RETURN(Val mx, c.Reduce(x, {1}, true, "max"));
  HEXIR_ASSIGN_OR_RETURN(Val shifted, c.Elementwise({&x, &mx}, et, [&](const Args& a) {
    return b.Bin("arith.subf", "", a[0], a[1], et);
  }));
  HEXIR_ASSIGN_OR_RETURN(Val ex, c.Elementwise({&shifted}, et, [&](const Args& a) { return b.Op1("math.exp", a[0], et); }));
  HEXIR_ASSIGN_OR_RETURN(Val sum, c.Reduce(ex, {1}, true, "sum"));
  HEXIR_ASSIGN_OR_RETURN(Val logp, c.Elementwise({&shifted, &sum}, et, [&](const Args& a) {
    return b.Bin("arith.subf", "", a[0], b.Op1("math.log", a[1], et), et);
  }));
  HEXIR_RETURN_IF_ERROR(c.SetOut(0, NllLoss(c, logp, target, weight)));
  c.SetOut(1, logp);
  return Status::Ok();
}

}  // namespace hexir::importers::onnx
