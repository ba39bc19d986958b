#include "compiler/importers/onnx/Context.h"

#include "compiler/importers/onnx/TensorData.h"

#include <cctype>
#include <cmath>
#include <cstring>

namespace hexir::importers::onnx {

Status Context::Error(const std::string& what) const {
  std::string where;
  if (node) {
    std::string name = node->name();
    if (name.empty() && node->output_size() > 0) name = node->output(0);
    where = "node '" + name + "' (op " + node->op_type() + "): ";
  }
  return InvalidArgument(where, what);
}

bool Context::HasIn(int i) const { return i < node->input_size() && !node->input(i).empty(); }

StatusOr<Context::ValRef> Context::InAny(int i) {
  if (!HasIn(i)) return Error("missing input " + std::to_string(i));
  auto it = values.find(node->input(i));
  if (it == values.end()) return Error("input '" + node->input(i) + "' is not defined");
  return ValRef(it->second);
}

StatusOr<Context::ValRef> Context::In(int i) {
  HEXIR_ASSIGN_OR_RETURN(Val& v, InAny(i));
  if (v.IsList())
    return Error("input '" + node->input(i) + "' is " +
                 (v.list_kind == Val::List::kSequence ? "a sequence" : "an optional") + ", not a tensor");
  return ValRef(v);
}

StatusOr<Context::ValRef> Context::InList(int i) {
  HEXIR_ASSIGN_OR_RETURN(Val& v, InAny(i));
  if (!v.IsList()) return Error("input '" + node->input(i) + "' is a tensor, not a sequence or optional");
  return ValRef(v);
}

void Context::SetOut(int i, Val v) {
  if (i < node->output_size() && !node->output(i).empty()) values[node->output(i)] = std::move(v);
}

Status Context::SetOut(int i, StatusOr<Val> v) {
  if (!v.ok()) return std::move(v).status();
  SetOut(i, std::move(v).value());
  return Status::Ok();
}

Status Context::SetOut(int i, StatusOr<Val> v, bool is_unsigned) {
  if (!v.ok()) return std::move(v).status();
  Val r = std::move(v).value();
  r.is_unsigned = is_unsigned;
  SetOut(i, std::move(r));
  return Status::Ok();
}

static const ::onnx::AttributeProto* FindAttr(const ::onnx::NodeProto* n, const std::string& name) {
  for (const auto& a : n->attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool Context::HasAttr(const std::string& name) const { return FindAttr(node, name) != nullptr; }
int64_t Context::AttrI(const std::string& name, int64_t def) const {
  auto* a = FindAttr(node, name);
  return a ? a->i() : def;
}
float Context::AttrF(const std::string& name, float def) const {
  auto* a = FindAttr(node, name);
  return a ? a->f() : def;
}
std::string Context::AttrS(const std::string& name, const std::string& def) const {
  auto* a = FindAttr(node, name);
  return a ? a->s() : def;
}
std::vector<int64_t> Context::AttrInts(const std::string& name) const {
  auto* a = FindAttr(node, name);
  if (!a) return {};
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}
std::vector<float> Context::AttrFloats(const std::string& name) const {
  auto* a = FindAttr(node, name);
  if (!a) return {};
  return std::vector<float>(a->floats().begin(), a->floats().end());
}
const ::onnx::TensorProto* Context::AttrT(const std::string& name) const {
  auto* a = FindAttr(node, name);
  return a && a->has_t() ? &a->t() : nullptr;
}

const ::onnx::GraphProto* Context::AttrG(const std::string& name) const {
  auto* a = FindAttr(node, name);
  return a && a->has_g() ? &a->g() : nullptr;
}

std::string Context::ElementType(int t) {
  switch (t) {
    case ::onnx::TensorProto::FLOAT: return "f32";
    case ::onnx::TensorProto::DOUBLE: return "f64";
    case ::onnx::TensorProto::FLOAT16: return "f16";
    case ::onnx::TensorProto::BFLOAT16: return "bf16";
    case ::onnx::TensorProto::INT8: return "i8";
    case ::onnx::TensorProto::INT16: return "i16";
    case ::onnx::TensorProto::INT32: return "i32";
    case ::onnx::TensorProto::INT64: return "i64";
    case ::onnx::TensorProto::BOOL: return "i1";
    case ::onnx::TensorProto::UINT8: return "i8";
    case ::onnx::TensorProto::UINT16: return "i16";
    case ::onnx::TensorProto::UINT32: return "i32";
    case ::onnx::TensorProto::UINT64: return "i64";
    default: return "";
  }
}

std::string Context::UnsupportedType(int t) {
  if (t == ::onnx::TensorProto::STRING)
    return "element type string is not supported (Hexir tensors hold numbers, not strings)";
  std::string name = ::onnx::TensorProto_DataType_IsValid(t) ? ::onnx::TensorProto_DataType_Name(
                                                                  static_cast<::onnx::TensorProto_DataType>(t))
                                                            : std::to_string(t);
  for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return "element type " + name + " is not supported";
}

bool Context::IsUnsignedType(int t) {
  return t == ::onnx::TensorProto::UINT8 || t == ::onnx::TensorProto::UINT16 ||
         t == ::onnx::TensorProto::UINT32 || t == ::onnx::TensorProto::UINT64;
}

// Element i of integer contents, exactly (through a double, INT64_MAX, the end of PyTorch's
// open slices `x[3:]`, became INT64_MIN and the slice empty): u64 as its bit pattern.
static int64_t LoadInteger(const std::string& raw, const std::string& et, int64_t i, bool is_unsigned) {
  const char* p = raw.data() + i * ElementBytes(et);
  if (et == "i64") { int64_t v; std::memcpy(&v, p, 8); return v; }
  if (is_unsigned) {
    uint32_t v = 0;
    std::memcpy(&v, p, ElementBytes(et));
    return v;
  }
  if (et == "i32") { int32_t v; std::memcpy(&v, p, 4); return v; }
  if (et == "i16") { int16_t v; std::memcpy(&v, p, 2); return v; }
  if (et == "i8") return static_cast<int8_t>(*p);
  if (et == "i1") return *p != 0;
  return 0;
}

// Element i of f32 or f64 contents (f16/bf16 contents are not folded).
static double LoadFloat(const std::string& raw, const std::string& et, int64_t i) {
  const char* p = raw.data() + i * ElementBytes(et);
  if (et == "f32") { float f; std::memcpy(&f, p, 4); return f; }
  double d;
  std::memcpy(&d, p, 8);
  return d;
}

StatusOr<Val> Context::FromTensorProto(const ::onnx::TensorProto& t) {
  Val v;
  v.et = ElementType(t.data_type());
  v.is_unsigned = IsUnsignedType(t.data_type());
  if (v.et.empty())
    return Error("tensor '" + t.name() + "': " + UnsupportedType(t.data_type()));
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    v.shape.push_back(Dim::Static(d));
    n *= d;
  }
  auto bytes = ReadTensorBytes(t, v.et, model_dir);
  if (!bytes.ok()) return node ? Error(bytes.status().message()) : std::move(bytes).status();
  std::string raw = std::move(*bytes);
  if (n <= 4096) {
    if (v.IsFloat()) {
      if (v.et == "f32" || v.et == "f64") {
        v.has_floats = true;
        for (int64_t i = 0; i < n; ++i) v.floats.push_back(LoadFloat(raw, v.et, i));
      }
    } else {
      v.has_ints = true;
      for (int64_t i = 0; i < n; ++i)
        v.ints.push_back(Dim::Static(LoadInteger(raw, v.et, i, v.is_unsigned)));
    }
  }
  v.raw = std::move(raw);
  return v;
}

static std::string Hex(const std::string& raw) {
  static const char* digits = "0123456789ABCDEF";
  std::string s = "0x";
  s.reserve(2 + raw.size() * 2);
  for (unsigned char c : raw) {
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}

const std::string& Context::Mat(Val& v) {
  if (!v.name.empty()) return v.name;
  int64_t n = 1;
  for (const Dim& d : v.shape) n *= d.dynamic() ? 1 : d.v;
  std::string type = Builder::TensorType(v);
  bool static_ints = v.has_ints;
  for (const Dim& d : v.ints) static_ints = static_ints && !d.dynamic();
  if (n == 0) {
    v.name = b.Empty(v.shape, v.et);
  } else if (v.raw.empty() && v.has_ints && !static_ints) {
    // Symbolic shape values: element i is a host index; build the tensor from them.
    std::vector<std::string> elems;
    for (const Dim& d : v.ints) {
      std::string e = b.Fresh();
      b.Line(e + " = arith.index_cast " + b.DimValue(d) + " : index to " + v.et);
      elems.push_back(e);
    }
    int loops = static_cast<int>(v.rank());
    v.name = b.IndexGeneric(v.shape, v.et, [&](const std::vector<std::string>&) {
                         std::string lin = b.IndexConst(0);
                         if (loops == 1) {
                           lin = b.Fresh();
                           b.Line(lin + " = linalg.index 0 : index");
                         }
                         std::string r = elems[0];
                         for (size_t i = 1; i < elems.size(); ++i) {
                           std::string k = b.IndexConst(static_cast<int64_t>(i));
                           std::string c = b.Fresh();
                           b.Line(c + " = arith.cmpi eq, " + lin + ", " + k + " : index");
                           r = b.Select(c, elems[i], r, v.et);
                         }
                         return r;
                       });
  } else {
    if (v.raw.empty()) {  // known contents without bytes (folded results)
      v.raw.resize(n * ElementBytes(v.et));
      for (int64_t i = 0; i < n; ++i) {
        char* p = v.raw.data() + i * ElementBytes(v.et);
        if (v.has_ints) {
          int64_t x = v.ints[i].v;
          std::memcpy(p, &x, ElementBytes(v.et));
        } else if (v.has_floats && v.et == "f32") {
          float f = static_cast<float>(v.floats[i]);
          std::memcpy(p, &f, 4);
        } else if (v.has_floats && v.et == "f64") {
          std::memcpy(p, &v.floats[i], 8);
        }
      }
    }
    std::string lit;
    if (v.et == "i1") {
      lit = "[";
      for (int64_t i = 0; i < n; ++i) lit += std::string(i ? ", " : "") + (v.raw[i] ? "true" : "false");
      lit += "]";
      if (v.rank() == 0) lit = v.raw[0] ? "true" : "false";
      // Nested brackets are required for rank > 1: use a splat-free reshape of a 1-D constant.
      if (v.rank() > 1) {
        Val flat = v;
        flat.name.clear();
        flat.shape = {Dim::Static(n)};
        // A materialized tensor, not known contents: a reshape of known contents would fold
        // back to an unnamed constant.
        flat.has_ints = flat.has_floats = false;
        flat.ints.clear();
        flat.raw.clear();
        std::string f = b.Fresh();
        b.Line(f + " = arith.constant dense<" + lit + "> : " + Builder::TensorType(flat));
        flat.name = f;
        v.name = ReshapeChecked(flat, v.shape).name;
        return v.name;
      }
    } else {
      lit = "\"" + Hex(v.raw) + "\"";
    }
    v.name = b.Fresh();
    b.Line(v.name + " = arith.constant dense<" + lit + "> : " + type);
  }
  return v.name;
}

StatusOr<std::vector<int64_t>> Context::ConstInts(Val& v, const char* what) {
  if (!v.has_ints) return Error(std::string(what) + " must be a constant (initializer or Constant)");
  std::vector<int64_t> r;
  for (const Dim& d : v.ints) {
    if (d.dynamic()) return Error(std::string(what) + " depends on a dynamic dimension");
    r.push_back(d.v);
  }
  return r;
}

StatusOr<Val> Context::ShapeOperand(Val& v, const char* what) {
  if (v.has_ints) return v;
  bool readable = !v.IsFloat() && v.rank() <= 1 && (v.rank() == 0 || !v.shape[0].dynamic()) &&
                  (v.rank() == 0 || v.shape[0].v <= kMaxHostReadElements);
  if (!readable)
    return Error(std::string(what) + " must be a constant, computed from shapes, or a 1-D integer "
                 "tensor of at most " + std::to_string(kMaxHostReadElements) + " elements");
  Val r = v;
  Mat(r);
  int64_t n = v.rank() == 0 ? 1 : v.shape[0].v;
  r.has_ints = true;
  r.ints.clear();
  for (int64_t i = 0; i < n; ++i) {
    std::string e = b.Fresh(), x = b.Fresh();
    std::string at = v.rank() == 0 ? "" : b.IndexConst(i);
    b.Line(e + " = tensor.extract " + r.name + "[" + at + "] : " + Builder::TensorType(r));
    b.Line(x + " = arith.index_cast" + std::string(v.is_unsigned ? "ui " : " ") + e + " : " + v.et + " to index");
    r.ints.push_back(Dim::Dynamic(x));
  }
  return r;
}

StatusOr<std::vector<double>> Context::ConstFloats(Val& v, const char* what) {
  if (v.has_floats) return v.floats;
  if (v.has_ints) {
    HEXIR_ASSIGN_OR_RETURN(std::vector<int64_t> ints, ConstInts(v, what));
    return std::vector<double>(ints.begin(), ints.end());
  }
  return Error(std::string(what) + " must be a constant");
}

StatusOr<int64_t> Context::NormAxis(int64_t axis, int64_t rank) const {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    return Error("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

StatusOr<Shape> Context::BroadcastShapes(const std::vector<const Val*>& vs) const {
  int64_t rank = 0;
  for (const Val* v : vs) rank = std::max(rank, v->rank());
  Shape out(rank, Dim::Static(1));
  for (const Val* v : vs) {
    int64_t off = rank - v->rank();
    for (int64_t i = 0; i < v->rank(); ++i) {
      const Dim& d = v->shape[i];
      Dim& o = out[off + i];
      if (!d.dynamic() && d.v == 1) continue;
      if (!o.dynamic() && o.v == 1) { o = d; continue; }
      if (!o.dynamic() && !d.dynamic() && o.v != d.v)
        return Error("shapes cannot be broadcast: " + std::to_string(o.v) + " vs " +
                     std::to_string(d.v));
      if (o.dynamic() && !d.dynamic()) o = d;  // prefer the static extent
    }
  }
  return out;
}

std::string Context::BroadcastMap(const Val& v, const Shape& out) {
  int64_t off = static_cast<int64_t>(out.size()) - v.rank();
  std::vector<std::string> r;
  for (int64_t i = 0; i < v.rank(); ++i) {
    const Dim& d = v.shape[i];
    const Dim& o = out[off + i];
    bool unit = !d.dynamic() && d.v == 1 && !(!o.dynamic() && o.v == 1);
    r.push_back(unit ? "0" : "d" + std::to_string(off + i));
  }
  return Builder::Map(static_cast<int>(out.size()), r);
}

StatusOr<Val> Context::Elementwise(std::vector<Val*> ins, const std::string& out_et,
                                   const BodyFn& body) {
  std::vector<const Val*> cins(ins.begin(), ins.end());
  HEXIR_ASSIGN_OR_RETURN(Shape out, BroadcastShapes(cins));
  if (MeetsAtRunTime(ins, out)) return BroadcastAtRunTime(ins, ins.size(), out, out_et, body);
  std::vector<std::string> maps;
  for (Val* v : ins) {
    Mat(*v);
    maps.push_back(BroadcastMap(*v, out));
  }
  int loops = static_cast<int>(out.size());
  Val r;
  r.et = out_et;
  r.shape = out;
  r.name = b.Generic(cins, maps, Builder::IdentityMap(loops), out, out_et, loops,
                     std::vector<std::string>(loops, "parallel"), "", body);
  return r;
}

StatusOr<Val> Context::Reduce(Val& x, std::vector<int64_t> axes, bool keepdims,
                              const std::string& kind) {
  int64_t rank = x.rank();
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  std::vector<bool> red(rank, false);
  for (int64_t a : axes) {
    HEXIR_ASSIGN_OR_RETURN(int64_t axis, NormAxis(a, rank));
    red[axis] = true;
  }
  Shape out;
  std::vector<std::string> out_map, iters;
  for (int64_t i = 0; i < rank; ++i) {
    iters.push_back(red[i] ? "reduction" : "parallel");
    if (!red[i]) {
      out.push_back(x.shape[i]);
      out_map.push_back("d" + std::to_string(i));
    }
  }
  if (IsKnown(x) && (kind == "sum" || kind == "prod" || kind == "max" || kind == "min"))
    return ReduceKnown(x, red, keepdims, kind);
  const std::string et = x.et;
  bool fl = x.IsFloat();
  double init = 0;
  if (kind == "max") init = fl ? -INFINITY : static_cast<double>(INT64_MIN);
  if (kind == "min") init = fl ? INFINITY : static_cast<double>(INT64_MAX);
  if (kind == "prod") init = 1;
  bool unsigned_ints = !fl && x.is_unsigned;
  if (!fl && (kind == "max" || kind == "min")) {
    int bits = ElementBytes(et) * 8;
    init = kind == "max" ? -std::ldexp(1.0, bits - 1) : std::ldexp(1.0, bits - 1) - 1;
    if (unsigned_ints) init = kind == "max" ? 0 : -1;  // -1: all bits set, the largest unsigned
  }
  // Host scalars used in bodies are defined before the producing generic: hexir-compile's
  // elementwise fusion moves a consumer into its producer's region.
  Dim count = Dim::Static(1);
  for (int64_t i = 0; i < rank; ++i)
    if (red[i]) count = b.Mul(count, x.shape[i]);
  std::string cf = kind == "mean" && count.dynamic() ? b.DimAsFloat(count, et) : "";
  Mat(x);
  std::string filled = b.Filled(out, et, init);
  int loops = static_cast<int>(rank);
  Val r;
  r.et = et;
  r.shape = out;
  r.name = b.Generic({&x}, {Builder::IdentityMap(loops)}, Builder::Map(loops, out_map), out, et,
                     loops, iters, filled, [&](const std::vector<std::string>& a) {
                       std::string v = a[0];
                       if (kind == "sumsquare" || kind == "l2") v = b.Bin("arith.mulf", "arith.muli", v, v, et);
                       if (kind == "l1") v = b.Op1(fl ? "math.absf" : "math.absi", v, et);
                       if (kind == "max") return b.Bin("arith.maximumf", unsigned_ints ? "arith.maxui" : "arith.maxsi", a[1], v, et);
                       if (kind == "min") return b.Bin("arith.minimumf", unsigned_ints ? "arith.minui" : "arith.minsi", a[1], v, et);
                       if (kind == "prod") return b.Bin("arith.mulf", "arith.muli", a[1], v, et);
                       if (kind == "logsumexp") v = b.Op1("math.exp", v, et);
                       return b.Bin("arith.addf", "arith.addi", a[1], v, et);
                     });
  if (kind == "mean") {
    if (!fl) return Error("ReduceMean on integers is not supported");
    HEXIR_ASSIGN_OR_RETURN(r, Elementwise({&r}, et, [&](const std::vector<std::string>& a) {
      std::string n = cf.empty() ? b.ScalarConst(et, static_cast<double>(count.v)) : cf;
      return b.Bin("arith.divf", "", a[0], n, et);
    }));
  } else if (kind == "logsum" || kind == "logsumexp" || kind == "l2") {
    HEXIR_ASSIGN_OR_RETURN(r, Elementwise({&r}, et, [&](const std::vector<std::string>& a) {
      return b.Op1(kind == "l2" ? "math.sqrt" : "math.log", a[0], et);
    }));
  }
  if (keepdims) {
    Shape kept;
    for (int64_t i = 0; i < rank; ++i) kept.push_back(red[i] ? Dim::Static(1) : x.shape[i]);
    r = ReshapeChecked(r, kept);
  }
  return r;
}

Val Context::ReduceKnown(const Val& x, const std::vector<bool>& reduced, bool keepdims,
                         const std::string& kind) {
  std::vector<int64_t> in = StaticExtents(x.shape), out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!reduced[i] || keepdims) out.push_back(reduced[i] ? 1 : in[i]);
  int64_t n_out = 1, n_in = 1;
  for (int64_t e : out) n_out *= e;
  for (int64_t e : in) n_in *= e;
  std::vector<Dim> ints(n_out);
  std::vector<double> floats(n_out);
  std::vector<bool> started(n_out, false);
  std::vector<int64_t> pos(in.size(), 0);
  for (int64_t k = 0; k < n_in; ++k) {
    int64_t o = 0;
    for (size_t i = 0; i < in.size(); ++i)
      if (!reduced[i]) o = o * in[i] + pos[i];
    if (!started[o]) {
      started[o] = true;
      if (x.has_ints) ints[o] = x.ints[k];
      else floats[o] = x.floats[k];
    } else if (x.has_ints) {
      const Dim& v = x.ints[k];
      ints[o] = kind == "sum" ? b.Add(ints[o], v) : kind == "prod" ? b.Mul(ints[o], v)
                : kind == "max" ? b.Max(ints[o], v) : b.Min(ints[o], v);
    } else {
      double v = x.floats[k];
      floats[o] = kind == "sum" ? floats[o] + v : kind == "prod" ? floats[o] * v
                  : kind == "max" ? std::max(floats[o], v) : std::min(floats[o], v);
    }
    for (int64_t i = static_cast<int64_t>(in.size()) - 1; i >= 0; --i) {
      if (++pos[i] < in[i]) break;
      pos[i] = 0;
    }
  }
  for (int64_t o = 0; o < n_out; ++o)  // reductions over nothing: the identity
    if (!started[o]) {
      ints[o] = Dim::Static(kind == "prod" ? 1 : 0);
      floats[o] = kind == "prod" ? 1 : kind == "max" ? -INFINITY : kind == "min" ? INFINITY : 0;
    }
  Val r;
  r.et = x.et;
  for (int64_t e : out) r.shape.push_back(Dim::Static(e));
  if (x.has_ints) {
    r.has_ints = true;
    r.ints = std::move(ints);
  } else {
    r.has_floats = true;
    r.floats = std::move(floats);
  }
  return r;
}

// True when a and b are the same extent (equal static values or the same SSA value).
// Element counts of a shape: (all static, product of the static extents).
static std::pair<bool, int64_t> StaticCount(const Shape& shape) {
  bool all_static = true;
  int64_t n = 1;
  for (const Dim& d : shape) {
    all_static = all_static && !d.dynamic();
    n *= d.dynamic() ? 1 : d.v;
  }
  return {all_static, n};
}

StatusOr<Val> Context::ReshapeTo(Val& x, const Shape& target) {
  auto [xs, xn] = StaticCount(x.shape);
  auto [ts, tn] = StaticCount(target);
  if (xs && ts && xn != tn)
    return Error("cannot reshape " + std::to_string(xn) + " elements into " + std::to_string(tn));
  return ReshapeChecked(x, target);
}

// Row-major reshapes of x (rank > 0) into target (rank > 0) split into consecutive groups
// whose element counts are provably equal (Builder::SameProduct): x's group i becomes
// target's group i. Each break pairs a prefix of x with the longest prefix of target of the
// same count (trailing unit dims join the group before them); no break covering both whole
// shapes: no grouping.
static std::optional<std::vector<std::pair<size_t, size_t>>> ReshapeBreaks(const Builder& b,
                                                                           const Shape& x,
                                                                           const Shape& target) {
  if (x.empty() || target.empty()) return std::nullopt;
  std::vector<std::pair<size_t, size_t>> breaks;  // ends of groups: (x end, target end)
  size_t prev = 0;
  for (size_t i = 1; i <= x.size(); ++i) {
    size_t found = 0;
    for (size_t j = target.size(); j > prev && !found; --j)
      if (b.SameProduct(x, 0, i, target, 0, j)) found = j;
    if (found) {
      breaks.push_back({i, found});
      prev = found;
    } else if (!breaks.empty() && b.SameProduct(x, 0, i, target, 0, prev)) {
      breaks.back().first = i;  // x's unit dims after the last break
    }
  }
  if (breaks.empty() || breaks.back() != std::make_pair(x.size(), target.size())) return std::nullopt;
  return breaks;
}

std::optional<Val> Context::ReshapeByGroups(Val& x, const Shape& target) {
  std::optional<std::vector<std::pair<size_t, size_t>>> breaks = ReshapeBreaks(b, x.shape, target);
  if (!breaks) return std::nullopt;
  // The reassociation lists of both sides and the collapsed shape (one dim per group).
  std::string xgroups, tgroups;
  bool collapse = false, expand = false;
  Shape mid;
  size_t xi = 0, ti = 0;
  for (auto [xe, te] : *breaks) {
    auto list = [](size_t begin, size_t end) {
      std::string l;
      for (size_t k = begin; k < end; ++k) l += (k > begin ? ", " : "") + std::to_string(k);
      return "[" + l + "]";
    };
    xgroups += (xgroups.empty() ? "" : ", ") + list(xi, xe);
    tgroups += (tgroups.empty() ? "" : ", ") + list(ti, te);
    collapse = collapse || xe - xi > 1;
    expand = expand || te - ti > 1;
    mid.push_back(xe - xi == 1 ? x.shape[xi] : te - ti == 1 ? target[ti] : b.Product(x.shape, xi, xe));
    xi = xe;
    ti = te;
  }
  Val r;
  r.et = x.et;
  r.shape = mid;
  r.name = x.name;
  if (collapse) {
    r.name = b.Fresh();
    b.Line(r.name + " = tensor.collapse_shape " + x.name + " [" + xgroups + "] : " +
           Builder::TensorType(x) + " into " + Builder::TensorType(r));
  }
  if (expand) {
    std::string sizes, from = Builder::TensorType(r);
    for (const Dim& d : target) sizes += (sizes.empty() ? "" : ", ") + (d.dynamic() ? d.ssa : std::to_string(d.v));
    r.shape = target;
    std::string name = b.Fresh();
    b.Line(name + " = tensor.expand_shape " + r.name + " [" + tgroups + "] output_shape [" + sizes +
           "] : " + from + " into " + Builder::TensorType(r));
    r.name = name;
  }
  r.shape = target;
  return r;
}

Val Context::ReshapeChecked(Val& x, const Shape& target) {
  Val r;
  r.et = x.et;
  r.shape = target;
  auto [xs, xn] = StaticCount(x.shape);
  bool ts = StaticCount(target).first;
  if ((x.name.empty() && !x.raw.empty()) || x.has_ints || x.has_floats) {
    bool static_ints = true;
    for (const Dim& d : x.ints) static_ints = static_ints && !d.dynamic();
    if (ts && (static_ints || !x.has_ints)) {  // constants: same bytes, new shape
      r.raw = x.name.empty() ? x.raw : std::string();
      r.has_ints = x.has_ints;
      r.ints = x.ints;
      r.has_floats = x.has_floats;
      r.floats = x.floats;
      return r;
    }
    if (x.has_ints) {
      r.has_ints = true;
      r.ints = x.ints;
      return r;
    }
  }
  Mat(x);
  if (xs && ts) {
    bool same = x.rank() == static_cast<int64_t>(target.size());
    for (size_t i = 0; same && i < target.size(); ++i) same = x.shape[i].v == target[i].v;
    if (same) return x;
    std::string flat = x.name, flat_type = Builder::TensorType({Dim::Static(xn)}, x.et);
    if (x.rank() == 0) {
      flat = b.Fresh();
      b.Line(flat + " = tensor.expand_shape " + x.name + " [] output_shape [1] : " +
             Builder::TensorType(x) + " into " + flat_type);
    } else if (x.rank() > 1) {
      std::string re;
      for (int64_t i = 0; i < x.rank(); ++i) re += (i ? ", " : "") + std::to_string(i);
      flat = b.Fresh();
      b.Line(flat + " = tensor.collapse_shape " + x.name + " [[" + re + "]] : " +
             Builder::TensorType(x) + " into " + flat_type);
    }
    if (target.size() == 1) {
      r.name = flat;
    } else if (target.empty()) {
      r.name = b.Fresh();
      b.Line(r.name + " = tensor.collapse_shape " + flat + " [] : " + flat_type + " into " +
             Builder::TensorType(r));
    } else {
      std::string re, os;
      for (size_t i = 0; i < target.size(); ++i) {
        re += (i ? ", " : "") + std::to_string(i);
        os += (i ? ", " : "") + std::to_string(target[i].v);
      }
      r.name = b.Fresh();
      b.Line(r.name + " = tensor.expand_shape " + flat + " [[" + re + "]] output_shape [" + os +
             "] : " + flat_type + " into " + Builder::TensorType(r));
    }
    return r;
  }
  // Dynamic: groups of dims whose products are provably equal become a collapse_shape and an
  // expand_shape, views without a copy (unit dims inserted or removed, the dynamic export's
  // [T, N, 32] -> [T, 4N, 8] of attention heads).
  if (std::optional<Val> view = ReshapeByGroups(x, target)) return *view;
  // General dynamic reshape: linearize the output index, delinearize into the input's.
  int loops = static_cast<int>(target.size());
  std::vector<std::string> xdims, tdims;
  for (const Dim& d : x.shape) xdims.push_back(b.DimValue(d));
  for (const Dim& d : target) tdims.push_back(b.DimValue(d));
  r.name = b.IndexGeneric(target, x.et, [&](const std::vector<std::string>&) {
                       std::string lin = b.IndexConst(0);
                       for (int i = 0; i < loops; ++i) {
                         std::string idx = b.Fresh();
                         b.Line(idx + " = linalg.index " + std::to_string(i) + " : index");
                         std::string m = b.Fresh();
                         b.Line(m + " = arith.muli " + lin + ", " + tdims[i] + " : index");
                         lin = b.Fresh();
                         b.Line(lin + " = arith.addi " + m + ", " + idx + " : index");
                       }
                       std::vector<std::string> src = b.Delinearize(lin, xdims);
                       return b.Extract(x, src);
                     });
  return r;
}

Val Context::GatherAlong(Val& data, int64_t axis, Val& indices) {
  Mat(data);
  Mat(indices);
  Shape out(data.shape.begin(), data.shape.begin() + axis);
  out.insert(out.end(), indices.shape.begin(), indices.shape.end());
  out.insert(out.end(), data.shape.begin() + axis + 1, data.shape.end());
  int loops = static_cast<int>(out.size());
  int64_t ir = indices.rank();
  std::vector<std::string> im;
  for (int64_t i = 0; i < ir; ++i) im.push_back("d" + std::to_string(axis + i));
  std::string extent = b.DimValue(data.shape[axis]);
  Val r;
  r.et = data.et;
  r.is_unsigned = data.is_unsigned;
  r.shape = out;
  r.name = b.Generic({&indices}, {Builder::Map(loops, im)}, Builder::IdentityMap(loops), out, data.et, loops,
                     std::vector<std::string>(loops, "parallel"), "", [&](const std::vector<std::string>& a) {
                       std::string i = b.ToIndex(a[0], indices.et), neg = b.Fresh(), wrapped = b.Fresh();
                       b.Line(neg + " = arith.cmpi slt, " + i + ", " + b.IndexConst(0) + " : index");
                       b.Line(wrapped + " = arith.addi " + i + ", " + extent + " : index");
                       std::string at = b.Select(neg, wrapped, i, "index");
                       std::vector<std::string> loop = b.LoopIndices(loops), src;
                       for (int64_t j = 0; j < data.rank(); ++j)
                         src.push_back(j < axis ? loop[j] : j == axis ? at : loop[j - 1 + ir]);
                       return b.Extract(data, src);
                     });
  return r;
}

Val Context::Pad(Val& x, const std::vector<Dim>& begin, const std::vector<Dim>& end,
                 const std::string& mode, double value) {
  bool any = false;
  for (size_t i = 0; i < begin.size(); ++i)
    any = any || begin[i].dynamic() || begin[i].v != 0 || end[i].dynamic() || end[i].v != 0;
  if (!any) return x;
  Mat(x);
  Shape out;
  for (int64_t i = 0; i < x.rank(); ++i) out.push_back(b.Add(b.Add(x.shape[i], begin[i]), end[i]));
  std::vector<std::string> dims;
  for (const Dim& d : x.shape) dims.push_back(b.DimValue(d));
  std::vector<std::string> pb;
  for (const Dim& d : begin) pb.push_back(b.DimValue(d));
  int loops = static_cast<int>(x.rank());
  Val r;
  r.et = x.et;
  r.shape = out;
  // Every amount a run-time value or a static 0 (a dynamic export's end-only pad: the extra
  // elements a ceil-mode pool's last window, or a window larger than its input, may reach;
  // usually none): the host chooses x itself when they are all 0 at run time, so the consumer
  // reads x in place instead of a padded copy (SqueezeNet 1.1's stem and three pools).
  bool runTimeOnly = true;
  for (size_t i = 0; i < begin.size(); ++i)
    for (const Dim& d : {begin[i], end[i]}) runTimeOnly = runTimeOnly && (d.dynamic() || d.v == 0);
  std::string none;  // i1: every run-time amount is 0
  for (size_t i = 0; runTimeOnly && i < begin.size(); ++i)
    for (const Dim& d : {begin[i], end[i]}) {
      if (!d.dynamic()) continue;
      std::string zero = b.Fresh();
      b.Line(zero + " = arith.cmpi eq, " + b.DimValue(d) + ", " + b.IndexConst(0) + " : index");
      none = b.AndI1(none, zero);
    }
  auto padded = [&] {
    return b.IndexGeneric(out, x.et, [&](const std::vector<std::string>&) {
        std::string zero = b.IndexConst(0), one = b.IndexConst(1);
        std::string valid;
        std::vector<std::string> src;
        for (int i = 0; i < loops; ++i) {
          std::string idx = b.Fresh();
          b.Line(idx + " = linalg.index " + std::to_string(i) + " : index");
          if (!begin[i].dynamic() && begin[i].v == 0 && !end[i].dynamic() && end[i].v == 0) {
            src.push_back(idx);
            continue;
          }
          std::string s = b.Fresh();
          b.Line(s + " = arith.subi " + idx + ", " + pb[i] + " : index");
          std::string last = b.Fresh();
          b.Line(last + " = arith.subi " + dims[i] + ", " + one + " : index");
          if (mode == "reflect") {  // -s below 0, 2*last - s above last
            std::string neg = b.Fresh(), lt = b.Fresh(), s1 = b.Fresh(), two = b.Fresh(),
                        hi = b.Fresh(), gt = b.Fresh(), s2 = b.Fresh();
            b.Line(neg + " = arith.subi " + zero + ", " + s + " : index");
            b.Line(lt + " = arith.cmpi slt, " + s + ", " + zero + " : index");
            b.Line(s1 + " = arith.select " + lt + ", " + neg + ", " + s + " : index");
            b.Line(two + " = arith.addi " + last + ", " + last + " : index");
            b.Line(hi + " = arith.subi " + two + ", " + s1 + " : index");
            b.Line(gt + " = arith.cmpi sgt, " + s1 + ", " + last + " : index");
            b.Line(s2 + " = arith.select " + gt + ", " + hi + ", " + s1 + " : index");
            s = s2;
          } else if (mode == "wrap") {  // s modulo the extent, in [0, extent)
            std::string rem = b.Fresh(), neg = b.Fresh(), up = b.Fresh(), wrapped = b.Fresh();
            b.Line(rem + " = arith.remsi " + s + ", " + dims[i] + " : index");
            b.Line(neg + " = arith.cmpi slt, " + rem + ", " + zero + " : index");
            b.Line(up + " = arith.addi " + rem + ", " + dims[i] + " : index");
            b.Line(wrapped + " = arith.select " + neg + ", " + up + ", " + rem + " : index");
            s = wrapped;
          }
          std::string lo = b.Fresh(), c = b.Fresh();
          b.Line(lo + " = arith.maxsi " + s + ", " + zero + " : index");
          b.Line(c + " = arith.minsi " + lo + ", " + last + " : index");
          src.push_back(c);
          if (mode == "constant") {
            std::string ok1 = b.Fresh(), ok2 = b.Fresh(), ok = b.Fresh();
            b.Line(ok1 + " = arith.cmpi sge, " + s + ", " + zero + " : index");
            b.Line(ok2 + " = arith.cmpi slt, " + s + ", " + dims[i] + " : index");
            b.Line(ok + " = arith.andi " + ok1 + ", " + ok2 + " : i1");
            valid = b.AndI1(valid, ok);
          }
        }
        std::string e = b.Fresh(), list = Builder::Join(src);
        b.Line(e + " = tensor.extract " + x.name + "[" + list + "] : " + Builder::TensorType(x));
        if (valid.empty()) return e;
        std::string pv = b.ScalarConst(x.et, value);
        return b.Select(valid, e, pv, x.et);
      });
  };
  r.name = none.empty() ? padded() : b.XOr(none, x, Builder::TensorType(r), padded);
  return r;
}

Val Context::Transpose(Val& x, const std::vector<int64_t>& perm) {
  if (IsKnown(x)) {
    std::vector<int64_t> in = StaticExtents(x.shape), out;
    for (int64_t p : perm) out.push_back(in[p]);
    return KnownPositions(x, out, [&](const std::vector<int64_t>& pos) {
      std::vector<int64_t> src(in.size());
      for (size_t i = 0; i < perm.size(); ++i) src[perm[i]] = pos[i];
      int64_t flat = 0;
      for (size_t i = 0; i < in.size(); ++i) flat = flat * in[i] + src[i];
      return flat;
    });
  }
  int loops = static_cast<int>(x.rank());
  std::vector<std::string> in_map(loops);
  Shape out(loops);
  for (int i = 0; i < loops; ++i) {
    in_map[perm[i]] = "d" + std::to_string(i);
    out[i] = x.shape[perm[i]];
  }
  Mat(x);
  Val r;
  r.et = x.et;
  r.shape = out;
  r.name = b.Generic({&x}, {Builder::Map(loops, in_map)}, Builder::IdentityMap(loops), out, x.et,
                     loops, std::vector<std::string>(loops, "parallel"), "",
                     [](const std::vector<std::string>& a) { return a[0]; });
  return r;
}

StatusOr<Val> Context::MatMul(Val& a0, Val& b0) {
  Val a = a0, bm = b0;
  bool squeeze_m = false, squeeze_n = false;
  if (a.rank() == 1) { a = ReshapeChecked(a0, {Dim::Static(1), a0.shape[0]}); squeeze_m = true; }
  if (bm.rank() == 1) { bm = ReshapeChecked(b0, {b0.shape[0], Dim::Static(1)}); squeeze_n = true; }
  Mat(a);
  Mat(bm);
  Val ab = a, bb = bm;  // batch parts for broadcasting
  ab.shape.resize(a.rank() - 2);
  bb.shape.resize(bm.rank() - 2);
  HEXIR_ASSIGN_OR_RETURN(Shape batch, BroadcastShapes({&ab, &bb}));
  if (MeetsAtRunTime({&ab, &bb}, batch)) {  // a `?` batch extent may be 1 at run time
    batch = BroadcastBatchAtRunTime(a, bm, batch);
    ab.shape.assign(a.shape.begin(), a.shape.end() - 2);
    bb.shape.assign(bm.shape.begin(), bm.shape.end() - 2);
  }
  int nb = static_cast<int>(batch.size());
  int loops = nb + 3;
  // Batch dims broadcast (unit dims read at 0), then the two matrix dims.
  auto bmap = [&](const Val& part, const std::string& r0, const std::string& r1) {
    std::vector<std::string> res;
    int64_t off = nb - part.rank();
    for (int64_t i = 0; i < part.rank(); ++i) {
      bool unit = !part.shape[i].dynamic() && part.shape[i].v == 1 &&
                  !(!batch[off + i].dynamic() && batch[off + i].v == 1);
      res.push_back(unit ? "0" : "d" + std::to_string(off + i));
    }
    res.push_back(r0);
    res.push_back(r1);
    return Builder::Map(loops, res);
  };
  std::string dm = "d" + std::to_string(nb), dn = "d" + std::to_string(nb + 1),
              dk = "d" + std::to_string(nb + 2);
  Shape out = batch;
  out.push_back(a.shape[a.rank() - 2]);
  out.push_back(bm.shape[bm.rank() - 1]);
  std::vector<std::string> out_map;
  for (int i = 0; i < nb + 2; ++i) out_map.push_back("d" + std::to_string(i));
  std::vector<std::string> iters(nb + 2, "parallel");
  iters.push_back("reduction");
  std::string et = a.et;
  std::string init = b.Filled(out, et, 0);
  Val r;
  r.et = et;
  r.shape = out;
  r.name = b.Generic({&a, &bm}, {bmap(ab, dm, dk), bmap(bb, dk, dn)},
                     Builder::Map(loops, out_map), out, et, loops, iters, init,
                     [&](const std::vector<std::string>& x) {
                       std::string p = b.Bin("arith.mulf", "arith.muli", x[0], x[1], et);
                       return b.Bin("arith.addf", "arith.addi", x[2], p, et);
                     });
  if (squeeze_m || squeeze_n) {
    Shape s = batch;
    if (!squeeze_m) s.push_back(out[nb]);
    if (!squeeze_n) s.push_back(out[nb + 1]);
    r = ReshapeChecked(r, s);
  }
  return r;
}

bool IsKnown(const Val& v) {
  int64_t n = 1;
  for (const Dim& d : v.shape) {
    if (d.dynamic() || d.v < 0) return false;
    n *= d.v;
    if (n > kMaxKnownElements) return false;
  }
  if (v.has_ints) return static_cast<int64_t>(v.ints.size()) == n;
  return v.has_floats && (v.et == "f32" || v.et == "f64") &&
         static_cast<int64_t>(v.floats.size()) == n;
}

std::vector<int64_t> StaticExtents(const Shape& shape) {
  std::vector<int64_t> r;
  for (const Dim& d : shape) r.push_back(d.v);
  return r;
}

Val KnownPositions(const Val& x, const std::vector<int64_t>& out,
                   const std::function<int64_t(const std::vector<int64_t>& position)>& source) {
  Val r;
  r.et = x.et;
  int64_t n = 1;
  for (int64_t e : out) {
    r.shape.push_back(Dim::Static(e));
    n *= e;
  }
  r.has_ints = x.has_ints;
  r.has_floats = x.has_floats;
  std::vector<int64_t> pos(out.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t from = source(pos);
    if (x.has_ints) r.ints.push_back(x.ints[from]);
    else r.floats.push_back(x.floats[from]);
    for (int64_t i = static_cast<int64_t>(out.size()) - 1; i >= 0; --i) {
      if (++pos[i] < out[i]) break;
      pos[i] = 0;
    }
  }
  return r;
}

Val KnownInts(const std::string& et, std::vector<Dim> ints, bool scalar) {
  Val v;
  v.et = et;
  if (!scalar) v.shape = {Dim::Static(static_cast<int64_t>(ints.size()))};
  v.has_ints = true;
  v.ints = std::move(ints);
  return v;
}

}  // namespace hexir::importers::onnx
