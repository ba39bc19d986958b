// ONNX generators (onnx/defs/generator): values made from attributes and shape values.
// Constants and integer fills keep their contents known (they may feed shape computations);
// Range needs constant operands and is folded; the cosine windows are computed at import.
#include <algorithm>
#include <cmath>

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {

Status LowerConstant(Context& c) {
  if (const ::onnx::TensorProto* t = c.AttrT("value")) return c.SetOut(0, c.FromTensorProto(*t));
  if (c.HasAttr("value_float") || c.HasAttr("value_floats")) {
    Val v;
    v.et = "f32";
    v.has_floats = true;
    if (c.HasAttr("value_float")) {
      v.floats = {c.AttrF("value_float", 0)};
    } else {
      for (float f : c.AttrFloats("value_floats")) v.floats.push_back(f);
      v.shape = {Dim::Static(static_cast<int64_t>(v.floats.size()))};
    }
    c.SetOut(0, v);
    return Status::Ok();
  }
  if (c.HasAttr("value_int")) {
    c.SetOut(0, KnownInts("i64", {Dim::Static(c.AttrI("value_int", 0))}, true));
    return Status::Ok();
  }
  if (c.HasAttr("value_ints")) {
    std::vector<Dim> d;
    for (int64_t x : c.AttrInts("value_ints")) d.push_back(Dim::Static(x));
    c.SetOut(0, KnownInts("i64", d));
    return Status::Ok();
  }
  return c.Error("only tensor/float/int constants are supported");
}

// A tensor of the shape input 0 filled with the `value` attribute (default f32 0).
Status LowerConstantOfShape(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& s_in, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val s, c.ShapeOperand(s_in, "the shape"));
  for (const Dim& d : s.ints)
    if (d.dynamic()) c.b.MarkNonNegative(d.ssa);
  std::string et = "f32";
  double value = 0;
  int64_t int_value = 0;  // exact (INT64_MAX as a double does not convert back)
  if (const ::onnx::TensorProto* t = c.AttrT("value")) {
    HEXIR_ASSIGN_OR_RETURN(Val v, c.FromTensorProto(*t));
    et = v.et;
    if (v.has_ints && !v.ints.empty()) int_value = v.ints[0].v;
    value = v.has_floats && !v.floats.empty() ? v.floats[0] : static_cast<double>(int_value);
  }
  Val r;
  r.et = et;
  r.shape = s.ints;
  int64_t n = 1;
  bool known = !IsFloatType(et);
  for (const Dim& d : s.ints) {
    known = known && !d.dynamic();
    n *= d.dynamic() ? 1 : d.v;
  }
  bool known_float = et == "f32" || et == "f64";
  for (const Dim& d : s.ints) known_float = known_float && !d.dynamic();
  if (known && n <= kMaxKnownElements) {  // integer fills may feed shape computations
    r.has_ints = true;
    r.ints.assign(n, Dim::Static(int_value));
  } else if (known_float && n <= kMaxKnownElements) {
    r.has_floats = true;
    r.floats.assign(n, et == "f32" ? static_cast<float>(value) : value);
  } else {
    r.name = c.b.Filled(r.shape, et, value);
  }
  c.SetOut(0, r);
  return Status::Ok();
}

// 1 where column == row + k, 0 elsewhere, shaped like the 2-D input (dtype: attribute or its).
Status LowerEyeLike(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  if (x.rank() != 2) return c.Error("expected a 2-D input");
  std::string et = c.HasAttr("dtype") ? Context::ElementType(static_cast<int>(c.AttrI("dtype", 1))) : x.et;
  if (et.empty()) return c.Error("dtype: " + Context::UnsupportedType(static_cast<int>(c.AttrI("dtype", 1))));
  int64_t k = c.AttrI("k", 0);
  Val r = b.Tabulate(x.shape, et, [&](std::vector<std::string> idx) {
                       std::string s = b.Fresh(), eq = b.Fresh();
                       b.Line(s + " = arith.addi " + idx[0] + ", " + b.IndexConst(k) + " : index");
                       b.Line(eq + " = arith.cmpi eq, " + s + ", " + idx[1] + " : index");
                       return b.Select(eq, b.ScalarConst(et, 1), b.ScalarConst(et, 0), et);
                     });
  c.SetOut(0, r);
  return Status::Ok();
}

namespace {

// The one element of 0-D/1-element v on the host, as element type v.et.
std::string HostScalar(Context& c, Val& v) {
  c.Mat(v);
  std::vector<std::string> idx(v.rank(), c.b.IndexConst(0));
  std::string s = c.b.Fresh();
  c.b.Line(s + " = tensor.extract " + v.name + "[" + Builder::Join(idx) + "] : " + Builder::TensorType(v));
  return s;
}

// Range over operands computed at run time. Integers: host index arithmetic,
// n = max((limit - start + delta - sign(delta)) / delta, 0) (a dim of known contents is used
// as is). Floats: n = max(ceil((limit - start) / delta), 0) in f64 on the host. A generic
// computes start + i * delta.
Status RunTimeRange(Context& c, Val& start, Val& limit, Val& delta) {
  Builder& b = c.b;
  std::string et = start.et;
  Val r;
  r.et = et;
  if (!start.IsFloat()) {
    Dim d3[3];
    Val* in[3] = {&start, &limit, &delta};
    const char* names[3] = {"start", "limit", "delta"};
    for (int i = 0; i < 3; ++i) {
      HEXIR_ASSIGN_OR_RETURN(Val v, c.ShapeOperand(*in[i], names[i]));
      d3[i] = v.ints[0];
    }
    Dim sign = b.SelectDim(b.Compare("sgt", d3[2], Dim::Static(0)), Dim::Static(1), Dim::Static(-1));
    Dim n = b.Max(b.TruncDiv(b.Sub(b.Add(b.Sub(d3[1], d3[0]), d3[2]), sign), d3[2]), Dim::Static(0));
    if (n.dynamic()) b.MarkNonNegative(n.ssa);
    std::string s0 = b.DimValue(d3[0]), step = b.DimValue(d3[2]);
    r.shape = {n};
    r.name = b.IndexGeneric(r.shape, et, [&](const Args&) {
      std::string i = b.LoopIndices(1)[0], m = b.Fresh(), v = b.Fresh(), o = b.Fresh();
      b.Line(m + " = arith.muli " + i + ", " + step + " : index");
      b.Line(v + " = arith.addi " + m + ", " + s0 + " : index");
      b.Line(o + " = arith.index_cast " + v + " : index to " + et);
      return o;
    });
    c.SetOut(0, r);
    return Status::Ok();
  }
  std::string s = HostScalar(c, start), l = HostScalar(c, limit), d = HostScalar(c, delta);
  auto f64 = [&](const std::string& v) { return b.Convert(v, et, "f64"); };
  std::string q = b.Bin("arith.divf", "", b.Bin("arith.subf", "", f64(l), f64(s), "f64"), f64(d), "f64");
  // ceil on the host: trunc, plus one where it fell below q (the VM has no host ceil).
  std::string t = b.Fresh(), tf = b.Fresh(), t1 = b.Fresh(), up = b.Fresh(), n = b.Fresh();
  b.Line(t + " = arith.fptosi " + q + " : f64 to i64");
  b.Line(tf + " = arith.sitofp " + t + " : i64 to f64");
  std::string below = b.Cmp("olt", "", tf, q, "f64");
  b.Line(t1 + " = arith.addi " + t + ", " + b.ScalarConst("i64", 1) + " : i64");
  b.Line(up + " = arith.select " + below + ", " + t1 + ", " + t + " : i64");
  b.Line(n + " = arith.index_cast " + up + " : i64 to index");
  Dim count = b.Max(Dim::Dynamic(n), Dim::Static(0));
  b.MarkNonNegative(count.ssa);
  r.shape = {count};
  r.name = b.IndexGeneric(r.shape, et, [&](const Args&) {
    std::string i = b.LoopIndices(1)[0], i64 = b.Fresh();
    b.Line(i64 + " = arith.index_cast " + i + " : index to i64");
    std::string iv = b.Convert(i64, "i64", et);
    return b.Bin("arith.addf", "", s, b.Bin("arith.mulf", "", iv, d, et), et);
  });
  c.SetOut(0, r);
  return Status::Ok();
}

}  // namespace

// start, start + delta, ... below limit: folded when the operands are known, else computed
// at run time (the length read back as a host index).
Status LowerRange(Context& c) {
  std::vector<double> operand[3];
  const char* names[3] = {"start", "limit", "delta"};
  bool known = true;
  for (int i = 0; i < 3; ++i) {
    HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(i));
    if (v.rank() > 1 || (v.rank() == 1 && (v.shape[0].dynamic() || v.shape[0].v != 1)))
      return c.Error(std::string(names[i]) + " must be a scalar");
    bool static_ints = v.has_ints && !v.ints.empty() && !v.ints[0].dynamic();
    if (!v.has_floats && !static_ints) {
      known = false;
      continue;
    }
    HEXIR_ASSIGN_OR_RETURN(operand[i], c.ConstFloats(v, names[i]));
    if (operand[i].empty()) return c.Error(std::string(names[i]) + " is empty");
  }
  HEXIR_ASSIGN_OR_RETURN(Val& first, c.In(0));
  if (!known) {
    HEXIR_ASSIGN_OR_RETURN(Val& limit_in, c.In(1));
    HEXIR_ASSIGN_OR_RETURN(Val& delta_in, c.In(2));
    return RunTimeRange(c, first, limit_in, delta_in);
  }
  double start = operand[0][0], limit = operand[1][0], delta = operand[2][0];
  if (delta == 0) return c.Error("delta is 0");
  std::string et = first.et;
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit - start) / delta)));
  Val r;
  r.et = et;
  r.shape = {Dim::Static(n)};
  if (IsFloatType(et)) {
    r.has_floats = true;
    for (int64_t i = 0; i < n; ++i) r.floats.push_back(start + i * delta);
  } else {
    r.has_ints = true;
    for (int64_t i = 0; i < n; ++i) r.ints.push_back(Dim::Static(static_cast<int64_t>(start + i * delta)));
  }
  c.SetOut(0, r);
  return Status::Ok();
}

namespace {

// a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N) for n in [0, size), N = size (periodic) or
// size - 1 (symmetric): the generalized cosine windows, computed at import time.
Status CosineWindow(Context& c, double a0, double a1, double a2) {
  HEXIR_ASSIGN_OR_RETURN(Val& size_in, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(std::vector<int64_t> size, c.ConstInts(size_in, "size"));
  if (size.size() != 1 || size[0] < 0) return c.Error("size must be one non-negative value");
  std::string et = Context::ElementType(static_cast<int>(c.AttrI("output_datatype", ::onnx::TensorProto::FLOAT)));
  if (et != "f32" && et != "f64") return c.Error("output_datatype " + std::to_string(c.AttrI("output_datatype", 0)) + " is not supported");
  int64_t n = size[0];
  double period = c.AttrI("periodic", 1) ? n : n - 1;
  Val r;
  r.et = et;
  r.shape = {Dim::Static(n)};
  r.has_floats = true;
  for (int64_t i = 0; i < n; ++i) {
    double t = period > 0 ? 2 * M_PI * static_cast<double>(i) / period : 0;
    double v = a0 - a1 * std::cos(t) + a2 * std::cos(2 * t);
    r.floats.push_back(et == "f32" ? static_cast<float>(v) : v);
  }
  c.SetOut(0, r);
  return Status::Ok();
}

}  // namespace

Status LowerBlackmanWindow(Context& c) { return CosineWindow(c, 0.42, 0.5, 0.08); }
Status LowerHammingWindow(Context& c) { return CosineWindow(c, 25.0 / 46, 21.0 / 46, 0); }
Status LowerHannWindow(Context& c) { return CosineWindow(c, 0.5, 0.5, 0); }

}  // namespace hexir::importers::onnx
