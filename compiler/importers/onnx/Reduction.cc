// ONNX reductions (onnx/defs/reduction): one reduction generic (+ a finishing elementwise for
// mean / log / sqrt forms, + a keepdims reshape) through Context::Reduce; ArgMax/ArgMin as
// the extreme value, then the first (or last) index that holds it.
#include <climits>

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {
namespace {

// A Reduce* op of Context::Reduce kind `kind`. Axes come from the attribute, or from input 1
// from opset 13 (ReduceSum) / 18 (the others) on.
Status LowerReduction(Context& c, const std::string& kind, int axes_input_opset) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  std::vector<int64_t> axes = c.AttrInts("axes");
  if (c.opset >= axes_input_opset && c.HasIn(1)) {
    HEXIR_ASSIGN_OR_RETURN(Val& axes_in, c.In(1));
    HEXIR_ASSIGN_OR_RETURN(axes, c.ConstInts(axes_in, "axes"));
  }
  if (axes.empty() && c.AttrI("noop_with_empty_axes", 0)) {
    c.SetOut(0, x);
    return Status::Ok();
  }
  bool integers_ok = kind == "sum" || kind == "max" || kind == "min" || kind == "prod";
  if (!x.IsFloat() && !integers_ok) return c.Error("element type " + x.et + " is not supported");
  return c.SetOut(0, c.Reduce(x, axes, c.AttrI("keepdims", 1) != 0, kind));
}

Status LowerArgExtreme(Context& c, bool is_max) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  std::string et = x.et;
  HEXIR_ASSIGN_OR_RETURN(int64_t axis, c.NormAxis(c.AttrI("axis", 0), x.rank()));
  bool keep = c.AttrI("keepdims", 1) != 0, last = c.AttrI("select_last_index", 0) != 0;
  HEXIR_ASSIGN_OR_RETURN(Val best, c.Reduce(x, {axis}, true, is_max ? "max" : "min"));
  // Second pass: the first (or last) index along `axis` whose value equals the extreme.
  HEXIR_ASSIGN_OR_RETURN(Val idx, c.Elementwise({&x, &best}, "i64", [&](const Args& a) {
    std::string eq = b.Cmp("oeq", "eq", a[0], a[1], et);
    std::string i = b.Fresh(), i64 = b.Fresh();
    b.Line(i + " = linalg.index " + std::to_string(axis) + " : index");
    b.Line(i64 + " = arith.index_cast " + i + " : index to i64");
    std::string none = b.ScalarConst("i64", last ? -1 : INT64_MAX);
    return b.Select(eq, i64, none, "i64");
  }));
  return c.SetOut(0, c.Reduce(idx, {axis}, keep, last ? "max" : "min"));
}

}  // namespace

Status LowerReduceL1(Context& c) { return LowerReduction(c, "l1", 18); }
Status LowerReduceL2(Context& c) { return LowerReduction(c, "l2", 18); }
Status LowerReduceLogSum(Context& c) { return LowerReduction(c, "logsum", 18); }
Status LowerReduceLogSumExp(Context& c) { return LowerReduction(c, "logsumexp", 18); }
Status LowerReduceMax(Context& c) { return LowerReduction(c, "max", 18); }
Status LowerReduceMean(Context& c) { return LowerReduction(c, "mean", 18); }
Status LowerReduceMin(Context& c) { return LowerReduction(c, "min", 18); }
Status LowerReduceProd(Context& c) { return LowerReduction(c, "prod", 18); }
Status LowerReduceSum(Context& c) { return LowerReduction(c, "sum", 13); }
Status LowerReduceSumSquare(Context& c) { return LowerReduction(c, "sumsquare", 18); }

Status LowerArgMax(Context& c) { return LowerArgExtreme(c, /*is_max=*/true); }
Status LowerArgMin(Context& c) { return LowerArgExtreme(c, /*is_max=*/false); }

}  // namespace hexir::importers::onnx
