#include "compiler/importers/onnx/Folding.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace hexir::importers::onnx {
namespace {

// One element: an integer or i1 (0/1) as a Dim (static, or a host index), or an f32/f64.
struct Scalar {
  Dim i;
  double f = 0;
  bool is_float = false;
};
Scalar Int(Dim d) { return Scalar{std::move(d), 0, false}; }
Scalar Float(double v) { return Scalar{Dim::Static(0), v, true}; }

// Computes one output element from the inputs' elements at the same (broadcast) position;
// false when these operands do not fold (the node is then lowered instead).
using ElementFn = StatusOr<bool> (*)(Context& c, const std::vector<Scalar>& x, Scalar* out);
// The output element type from the inputs' ("": none that folds).
using TypeFn = std::string (*)(Context& c, const std::vector<Val*>& ins);

struct FoldRule {
  const char* op_type;
  TypeFn out_type;
  ElementFn element;
};

std::string SameAsFirst(Context&, const std::vector<Val*>& ins) { return ins[0]->et; }
std::string Boolean(Context&, const std::vector<Val*>&) { return "i1"; }
std::string SameAsSecond(Context&, const std::vector<Val*>& ins) {
  return ins.size() == 3 ? ins[1]->et : "";
}
std::string CastTarget(Context& c, const std::vector<Val*>&) {
  return Context::ElementType(static_cast<int>(c.AttrI("to", 0)));
}

bool AllInts(const std::vector<Scalar>& x) {
  for (const Scalar& s : x)
    if (s.is_float) return false;
  return true;
}
bool AllFloats(const std::vector<Scalar>& x) {
  for (const Scalar& s : x)
    if (!s.is_float) return false;
  return true;
}

// Left fold of a variadic op: integers through `int_op`, floats through `float_op`.
template <typename IntOp, typename FloatOp>
bool Variadic(const std::vector<Scalar>& x, Scalar* out, IntOp int_op, FloatOp float_op) {
  if (AllInts(x)) {
    Dim acc = x[0].i;
    for (size_t k = 1; k < x.size(); ++k) acc = int_op(acc, x[k].i);
    *out = Int(acc);
    return true;
  }
  if (!AllFloats(x)) return false;
  double acc = x[0].f;
  for (size_t k = 1; k < x.size(); ++k) acc = float_op(acc, x[k].f);
  *out = Float(acc);
  return true;
}

StatusOr<bool> Add(Context& c, const std::vector<Scalar>& x, Scalar* out) {
  return Variadic(x, out, [&](const Dim& a, const Dim& b) { return c.b.Add(a, b); },
                  [](double a, double b) { return a + b; });
}
StatusOr<bool> Sub(Context& c, const std::vector<Scalar>& x, Scalar* out) {
  return Variadic(x, out, [&](const Dim& a, const Dim& b) { return c.b.Sub(a, b); },
                  [](double a, double b) { return a - b; });
}
StatusOr<bool> Mul(Context& c, const std::vector<Scalar>& x, Scalar* out) {
  return Variadic(x, out, [&](const Dim& a, const Dim& b) { return c.b.Mul(a, b); },
                  [](double a, double b) { return a * b; });
}
// Integer Div rounds toward zero (as onnxruntime and C do).
StatusOr<bool> Div(Context& c, const std::vector<Scalar>& x, Scalar* out) {
  if (AllInts(x) && !x[1].i.dynamic() && x[1].i.v == 0)
    return c.Error("integer division by zero in a constant computation");
  return Variadic(x, out, [&](const Dim& a, const Dim& b) { return c.b.TruncDiv(a, b); },
                  [](double a, double b) { return a / b; });
}
StatusOr<bool> Max(Context& c, const std::vector<Scalar>& x, Scalar* out) {
  return Variadic(x, out, [&](const Dim& a, const Dim& b) { return c.b.Max(a, b); },
                  [](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); });
}
StatusOr<bool> Min(Context& c, const std::vector<Scalar>& x, Scalar* out) {
  return Variadic(x, out, [&](const Dim& a, const Dim& b) { return c.b.Min(a, b); },
                  [](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); });
}

// fmod=0 (integers only): the result takes the divisor's sign; fmod=1: the dividend's.
StatusOr<bool> Mod(Context& c, const std::vector<Scalar>& x, Scalar* out) {
  bool fmod = c.AttrI("fmod", 0) != 0;
  if (AllFloats(x)) {
    if (!fmod) return false;  // the lowering reports it
    *out = Float(std::fmod(x[0].f, x[1].f));
    return true;
  }
  if (!AllInts(x)) return false;
  Builder& b = c.b;
  const Dim &a = x[0].i, &d = x[1].i;
  if (!d.dynamic() && d.v == 0) return c.Error("integer Mod by zero in a constant computation");
  Dim r = b.Rem(a, d);
  if (!fmod) {  // r != 0 && (r < 0) != (d < 0) -> r + d
    Dim zero = Dim::Static(0);
    Dim differ = b.Compare("ne", b.Compare("slt", r, zero), b.Compare("slt", d, zero));
    Dim fix = b.Mul(b.Compare("ne", r, zero), differ);
    r = b.SelectDim(fix, b.Add(r, d), r);
  }
  *out = Int(r);
  return true;
}

// Comparisons: integers through Builder::Compare (host cmpi when not decided at import).
template <int kPred>
StatusOr<bool> Compare(Context& c, const std::vector<Scalar>& x, Scalar* out) {
  static const char* const kPreds[] = {"eq", "slt", "sle", "sgt", "sge"};
  const char* pred = kPreds[kPred];
  if (AllInts(x)) {
    *out = Int(c.b.Compare(pred, x[0].i, x[1].i));
    return true;
  }
  if (!AllFloats(x)) return false;
  double a = x[0].f, b = x[1].f;
  bool r = kPred == 0 ? a == b : kPred == 1 ? a < b : kPred == 2 ? a <= b : kPred == 3 ? a > b : a >= b;
  *out = Int(Dim::Static(r));
  return true;
}

// Booleans are 0/1: and = product, or = max, xor = differ, not = 1 - x.
StatusOr<bool> And(Context& c, const std::vector<Scalar>& x, Scalar* out) {
  *out = Int(c.b.Mul(x[0].i, x[1].i));
  return AllInts(x);
}
StatusOr<bool> Or(Context& c, const std::vector<Scalar>& x, Scalar* out) {
  *out = Int(c.b.Max(x[0].i, x[1].i));
  return AllInts(x);
}
StatusOr<bool> Xor(Context& c, const std::vector<Scalar>& x, Scalar* out) {
  *out = Int(c.b.Compare("ne", x[0].i, x[1].i));
  return AllInts(x);
}
StatusOr<bool> Not(Context& c, const std::vector<Scalar>& x, Scalar* out) {
  *out = Int(c.b.Sub(Dim::Static(1), x[0].i));
  return AllInts(x);
}

StatusOr<bool> Neg(Context& c, const std::vector<Scalar>& x, Scalar* out) {
  *out = x[0].is_float ? Float(-x[0].f) : Int(c.b.Sub(Dim::Static(0), x[0].i));
  return true;
}
StatusOr<bool> Abs(Context& c, const std::vector<Scalar>& x, Scalar* out) {
  Builder& b = c.b;
  const Dim& d = x[0].i;
  *out = x[0].is_float        ? Float(std::fabs(x[0].f))
         : b.NonNegative(d) ? Int(d)
                            : Int(b.Max(d, b.Sub(Dim::Static(0), d)));
  return true;
}
StatusOr<bool> Sign(Context& c, const std::vector<Scalar>& x, Scalar* out) {
  Builder& b = c.b;
  if (x[0].is_float) {
    double v = x[0].f;
    *out = Float(v > 0 ? 1 : v < 0 ? -1 : v);
    return true;
  }
  Dim zero = Dim::Static(0);
  *out = Int(b.Sub(b.Compare("sgt", x[0].i, zero), b.Compare("slt", x[0].i, zero)));
  return true;
}

StatusOr<bool> Floor(Context&, const std::vector<Scalar>& x, Scalar* out) {
  *out = Float(std::floor(x[0].f));
  return x[0].is_float;
}
StatusOr<bool> Ceil(Context&, const std::vector<Scalar>& x, Scalar* out) {
  *out = Float(std::ceil(x[0].f));
  return x[0].is_float;
}

StatusOr<bool> Where(Context& c, const std::vector<Scalar>& x, Scalar* out) {
  const Dim& cond = x[0].i;
  if (!x[1].is_float && !x[2].is_float) {
    *out = Int(c.b.SelectDim(cond, x[1].i, x[2].i));
    return true;
  }
  if (cond.dynamic()) return false;  // a float chosen at run time
  *out = cond.v != 0 ? x[1] : x[2];
  return true;
}

// Integers wrap to the target width (i1: != 0); floats round toward zero into integers.
StatusOr<bool> Cast(Context& c, const std::vector<Scalar>& x, Scalar* out) {
  std::string to = CastTarget(c, {});
  const Scalar& v = x[0];
  if (IsFloatType(to)) {
    if (!v.is_float && v.i.dynamic()) return false;
    *out = Float(v.is_float ? v.f : static_cast<double>(v.i.v));
    return true;
  }
  if (v.is_float) {
    if (!std::isfinite(v.f) || std::fabs(v.f) >= 9.2e18) return false;
    if (to == "i1") {
      *out = Int(Dim::Static(v.f != 0));
      return true;
    }
    *out = Int(Dim::Static(static_cast<int64_t>(std::trunc(v.f))));
  } else if (to == "i1") {
    *out = Int(c.b.Compare("ne", v.i, Dim::Static(0)));
    return true;
  } else {
    *out = v;
  }
  if (out->i.dynamic()) return true;  // dims fit every integer type
  int64_t w = out->i.v;
  bool to_unsigned = Context::IsUnsignedType(static_cast<int>(c.AttrI("to", 0)));
  if (to == "i8") w = to_unsigned ? static_cast<int64_t>(static_cast<uint8_t>(w)) : static_cast<int8_t>(w);
  if (to == "i16") w = to_unsigned ? static_cast<int64_t>(static_cast<uint16_t>(w)) : static_cast<int16_t>(w);
  if (to == "i32") w = to_unsigned ? static_cast<int64_t>(static_cast<uint32_t>(w)) : static_cast<int32_t>(w);
  out->i = Dim::Static(w);
  return true;
}

// Sorted by op type.
const FoldRule kFoldRules[] = {
    {"Abs", SameAsFirst, Abs},
    {"Add", SameAsFirst, Add},
    {"And", Boolean, And},
    {"Cast", CastTarget, Cast},
    {"Ceil", SameAsFirst, Ceil},
    {"Div", SameAsFirst, Div},
    {"Equal", Boolean, Compare<0>},
    {"Floor", SameAsFirst, Floor},
    {"Greater", Boolean, Compare<3>},
    {"GreaterOrEqual", Boolean, Compare<4>},
    {"Less", Boolean, Compare<1>},
    {"LessOrEqual", Boolean, Compare<2>},
    {"Max", SameAsFirst, Max},
    {"Min", SameAsFirst, Min},
    {"Mod", SameAsFirst, Mod},
    {"Mul", SameAsFirst, Mul},
    {"Neg", SameAsFirst, Neg},
    {"Not", Boolean, Not},
    {"Or", Boolean, Or},
    {"Sign", SameAsFirst, Sign},
    {"Sub", SameAsFirst, Sub},
    {"Sum", SameAsFirst, Add},
    {"Where", SameAsSecond, Where},
    {"Xor", Boolean, Xor},
};

const FoldRule* FindRule(const std::string& op_type) {
  for (const FoldRule& r : kFoldRules)
    if (op_type == r.op_type) return &r;
  return nullptr;
}

// numpy broadcasting of static extents; false when they do not broadcast.
bool Broadcast(const std::vector<Val*>& ins, std::vector<int64_t>* out) {
  size_t rank = 0;
  for (Val* v : ins) rank = std::max(rank, v->shape.size());
  out->assign(rank, 1);
  for (Val* v : ins) {
    size_t off = rank - v->shape.size();
    for (size_t i = 0; i < v->shape.size(); ++i) {
      int64_t d = v->shape[i].v, &o = (*out)[off + i];
      if (d == o || d == 1) continue;
      if (o != 1) return false;
      o = d;
    }
  }
  return true;
}

Scalar ElementAt(const Val& v, int64_t k) {
  return v.has_ints ? Int(v.ints[k]) : Float(v.floats[k]);
}

}  // namespace

StatusOr<bool> FoldKnownNode(Context& c) {
  const FoldRule* rule = FindRule(c.node->op_type());
  if (!rule || c.NumIn() == 0) return false;
  std::vector<Val*> ins;
  for (int i = 0; i < c.NumIn(); ++i) {
    if (!c.HasIn(i)) return false;
    HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(i));
    if (!IsKnown(v)) return false;
    ins.push_back(&v);
  }
  std::string et = rule->out_type(c, ins);
  bool float_out = !et.empty() && IsFloatType(et);
  if (et.empty() || (float_out && et != "f32" && et != "f64")) return false;
  std::vector<int64_t> out;
  if (!Broadcast(ins, &out)) return false;
  int64_t n = 1;
  for (int64_t e : out) n *= e;
  if (n > kMaxKnownElements) return false;
  Val r;
  r.et = et;
  for (int64_t e : out) r.shape.push_back(Dim::Static(e));
  r.has_ints = !float_out;
  r.has_floats = float_out;
  std::vector<int64_t> pos(out.size(), 0);
  std::vector<Scalar> x(ins.size());
  for (int64_t k = 0; k < n; ++k) {
    for (size_t j = 0; j < ins.size(); ++j) {  // the input's flat index (broadcast dims read 0)
      const Shape& s = ins[j]->shape;
      size_t off = out.size() - s.size();
      int64_t flat = 0;
      for (size_t i = 0; i < s.size(); ++i) flat = flat * s[i].v + (s[i].v == 1 ? 0 : pos[off + i]);
      x[j] = ElementAt(*ins[j], flat);
    }
    Scalar y;
    HEXIR_ASSIGN_OR_RETURN(bool ok, rule->element(c, x, &y));
    if (!ok || y.is_float != float_out) return false;
    if (float_out) r.floats.push_back(et == "f32" ? static_cast<float>(y.f) : y.f);
    else r.ints.push_back(y.i);
    for (int64_t i = static_cast<int64_t>(out.size()) - 1; i >= 0; --i) {
      if (++pos[i] < out[i]) break;
      pos[i] = 0;
    }
  }
  r.is_unsigned = c.node->op_type() == std::string("Cast")
                     ? Context::IsUnsignedType(static_cast<int>(c.AttrI("to", 0)))
                     : ins[0]->is_unsigned && ins[0]->et == et;
  c.SetOut(0, std::move(r));
  return true;
}

}  // namespace hexir::importers::onnx
