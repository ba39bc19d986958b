#include "compiler/importers/onnx/Builder.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <optional>

#include "dialects/hexir/IR/HexirAttributes.h"

namespace hexir::importers::onnx {

int ElementBytes(const std::string& et) {
  if (et == "f64" || et == "i64") return 8;
  if (et == "f32" || et == "i32") return 4;
  if (et == "f16" || et == "bf16" || et == "i16") return 2;
  return 1;
}

bool IsFloatType(const std::string& et) { return et[0] == 'f' || et == "bf16"; }

std::string Builder::Fresh() { return "%v" + std::to_string(next_++); }

void Builder::Line(const std::string& text) { out_ << "    " << text << "\n"; }

std::string Builder::TakeSince(size_t mark) {
  std::string all = out_.str();
  out_.str(all.substr(0, mark));
  out_.seekp(0, std::ios_base::end);
  return all.substr(mark);
}

std::string Builder::TensorType(const Shape& shape, const std::string& et) {
  std::string s = "tensor<";
  for (const Dim& d : shape) s += (d.dynamic() ? std::string("?") : std::to_string(d.v)) + "x";
  return s + et + ">";
}

std::string Builder::FloatBits(double value, const std::string& et) {
  char buf[32];
  if (et == "f64") {
    uint64_t bits;
    std::memcpy(&bits, &value, 8);
    std::snprintf(buf, sizeof buf, "0x%016llX", static_cast<unsigned long long>(bits));
    return buf;
  }
  float f = static_cast<float>(value);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (et == "f16" || et == "bf16") {
    // Rounded through f32; bf16 keeps the high half, f16 is converted by hand.
    if (et == "bf16") {
      std::snprintf(buf, sizeof buf, "0x%04X", (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
      return buf;
    }
    uint32_t sign = (bits >> 16) & 0x8000;
    int exp = static_cast<int>((bits >> 23) & 0xFF) - 127 + 15;
    uint32_t mant = bits & 0x7FFFFF;
    uint16_t h;
    if (((bits >> 23) & 0xFF) == 0xFF) h = sign | 0x7C00 | (mant ? 0x200 : 0);
    else if (exp >= 31) h = sign | 0x7C00;
    else if (exp <= 0) h = sign;
    else h = sign | (exp << 10) | (mant >> 13);
    std::snprintf(buf, sizeof buf, "0x%04X", h);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "0x%08X", bits);
  return buf;
}

std::string Builder::CheckText(const std::string& s) {
  std::string r;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') r += '\\';
    r += ch == '{' ? '(' : ch == '}' ? ')' : ch;
  }
  return r;
}

void Builder::CheckIndex(const std::string& ok, const std::string& before, const std::string& index,
                         const std::string& after) {
  Line("hexir.check " + ok + ", \"" + CheckText(before) + "{}" + CheckText(after) + "\"(" + index + ") : index");
}

std::string Builder::IndexConst(int64_t v) {
  if (body_depth_ > 0) {
    std::string n = Fresh();
    Line(n + " = arith.constant " + std::to_string(v) + " : index");
    return n;
  }
  auto it = index_consts_.find(v);
  if (it != index_consts_.end()) return it->second;
  std::string n = Fresh();
  Line(n + " = arith.constant " + std::to_string(v) + " : index");
  index_consts_[v] = n;
  return n;
}

std::string Builder::ScalarConst(const std::string& et, double v) {
  std::string n = Fresh();
  if (IsFloatType(et)) {
    Line(n + " = arith.constant " + FloatBits(v, et) + " : " + et);
  } else if (et == "i1") {
    Line(n + " = arith.constant " + std::string(v != 0 ? "true" : "false"));
  } else {
    // Saturate: doubles at or beyond +-2^63 do not convert to int64_t.
    int64_t i = v >= 9.2233720368547758e18 ? INT64_MAX
                : v <= -9.2233720368547758e18 ? INT64_MIN
                                              : static_cast<int64_t>(v);
    Line(n + " = arith.constant " + std::to_string(i) + " : " + et);
  }
  return n;
}

std::string Builder::DimValue(const Dim& d) { return d.dynamic() ? d.ssa : IndexConst(d.v); }


// `arith.<op>` on two index values; the result is non-negative when `keeps_sign` and both
// operands are.
static Dim HostIndexOp(Builder& b, const char* op, const Dim& x, const Dim& y, bool keeps_sign) {
  std::string n = b.Fresh();
  b.Line(n + " = arith." + op + " " + b.DimValue(x) + ", " + b.DimValue(y) + " : index");
  if (keeps_sign && b.NonNegative(x) && b.NonNegative(y)) b.MarkNonNegative(n);
  return Dim::Dynamic(n);
}

// An op whose result is a polynomial of its operands' forms (SymbolicDims.h): the value of
// that form when there is one already, else the op emitted and its form recorded (an atom
// when the form is not representable).
Dim Builder::Polynomial(const char* op, const Dim& a, const Dim& b, bool keeps_sign,
                        const std::optional<SymbolicDims::Poly>& form) {
  if (form) {
    if (std::optional<Dim> known = dims_.Known(*form)) {
      if (known->dynamic() && keeps_sign && NonNegative(a) && NonNegative(b)) MarkNonNegative(known->ssa);
      return *known;
    }
  }
  Dim r = HostIndexOp(*this, op, a, b, keeps_sign);
  if (form) dims_.Record(r.ssa, *form, body_depth_ == 0);
  return r;
}

// An op whose result is an atom: computed once per operand forms (in the entry block).
Dim Builder::Atom(const std::string& op, std::vector<Dim> operands, bool commutative,
                  const std::function<Dim()>& emit) {
  if (commutative)
    std::sort(operands.begin(), operands.end(), [&](const Dim& x, const Dim& y) {
      return dims_.OpKey("", {x}) < dims_.OpKey("", {y});
    });
  std::string key = dims_.OpKey(op, operands);
  if (std::optional<Dim> known = dims_.KnownOp(key)) return *known;
  Dim r = emit();
  if (r.dynamic()) dims_.RecordOp(key, r.ssa, body_depth_ == 0);
  return r;
}

Dim Builder::Add(const Dim& a, const Dim& b) {
  if (!a.dynamic() && !b.dynamic()) return Dim::Static(a.v + b.v);
  if (!b.dynamic() && b.v == 0) return a;
  if (!a.dynamic() && a.v == 0) return b;
  return Polynomial("addi", a, b, true, SymbolicDims::Sum(dims_.Of(a), dims_.Of(b), 1));
}
Dim Builder::Sub(const Dim& a, const Dim& b) {
  if (!a.dynamic() && !b.dynamic()) return Dim::Static(a.v - b.v);
  if (!b.dynamic() && b.v == 0) return a;
  if (a.dynamic() && b.dynamic() && a.ssa == b.ssa) return Dim::Static(0);
  return Polynomial("subi", a, b, false, SymbolicDims::Sum(dims_.Of(a), dims_.Of(b), -1));
}
Dim Builder::Mul(const Dim& a, const Dim& b) {
  if (!a.dynamic() && !b.dynamic()) return Dim::Static(a.v * b.v);
  if ((!a.dynamic() && a.v == 0) || (!b.dynamic() && b.v == 0)) return Dim::Static(0);
  if (!b.dynamic() && b.v == 1) return a;
  if (!a.dynamic() && a.v == 1) return b;
  return Polynomial("muli", a, b, true, SymbolicDims::Product(dims_.Of(a), dims_.Of(b)));
}
// divsi of non-negative values (floor and truncation agree) or of a TruncDiv: exact quotients
// are polynomials, the rest atoms.
Dim Builder::Quotient(const Dim& a, const Dim& b) {
  if (!b.dynamic() && b.v == 1) return a;
  std::optional<SymbolicDims::Poly> q = SymbolicDims::ExactQuotient(dims_.Of(a), dims_.Of(b));
  if (q) return Polynomial("divsi", a, b, true, q);
  return Atom("divsi", {a, b}, false, [&] { return HostIndexOp(*this, "divsi", a, b, true); });
}
Dim Builder::FloorDiv(const Dim& a, const Dim& b) {
  if (!a.dynamic() && !b.dynamic()) {
    if (b.v == 0) {
      RecordError("division by zero in a shape computation");
      return Dim::Static(0);
    }
    int64_t q = a.v / b.v;
    if ((a.v % b.v != 0) && ((a.v < 0) != (b.v < 0))) --q;
    return Dim::Static(q);
  }
  return Quotient(a, b);  // shape values are non-negative
}
Dim Builder::TruncDiv(const Dim& a, const Dim& b) {
  if (!a.dynamic() && !b.dynamic()) {
    if (b.v == 0) {
      RecordError("division by zero in a shape computation");
      return Dim::Static(0);
    }
    return Dim::Static(a.v / b.v);
  }
  return Quotient(a, b);
}
Dim Builder::Rem(const Dim& a, const Dim& b) {
  if (!a.dynamic() && !b.dynamic()) {
    if (b.v == 0) {
      RecordError("division by zero in a shape computation");
      return Dim::Static(0);
    }
    return Dim::Static(a.v % b.v);
  }
  if (!b.dynamic() && (b.v == 1 || b.v == -1)) return Dim::Static(0);
  if (SymbolicDims::ExactQuotient(dims_.Of(a), dims_.Of(b))) return Dim::Static(0);
  return Atom("remsi", {a, b}, false, [&] { return HostIndexOp(*this, "remsi", a, b, true); });
}
Dim Builder::Min(const Dim& a, const Dim& b) {
  if (!a.dynamic() && !b.dynamic()) return Dim::Static(std::min(a.v, b.v));
  if (a.dynamic() && b.dynamic() && a.ssa == b.ssa) return a;
  return Atom("minsi", {a, b}, true, [&] { return HostIndexOp(*this, "minsi", a, b, true); });
}
Dim Builder::Max(const Dim& a, const Dim& b) {
  if (!a.dynamic() && !b.dynamic()) return Dim::Static(std::max(a.v, b.v));
  if (a.dynamic() && b.dynamic() && a.ssa == b.ssa) return a;
  return Atom("maxsi", {a, b}, true, [&] {
    std::string n = Fresh();
    Line(n + " = arith.maxsi " + DimValue(a) + ", " + DimValue(b) + " : index");
    if (NonNegative(a) || NonNegative(b)) MarkNonNegative(n);
    return Dim::Dynamic(n);
  });
}

Dim Builder::Compare(const std::string& pred, const Dim& a, const Dim& b) {
  auto holds = [&](int order) {  // order: sign of a - b
    if (pred == "eq") return order == 0;
    if (pred == "ne") return order != 0;
    if (pred == "slt") return order < 0;
    if (pred == "sle") return order <= 0;
    if (pred == "sgt") return order > 0;
    return order >= 0;  // sge
  };
  if (!a.dynamic() && !b.dynamic()) return Dim::Static(holds(a.v < b.v ? -1 : a.v > b.v ? 1 : 0));
  if (a.dynamic() && b.dynamic() && a.ssa == b.ssa) return Dim::Static(holds(0));
  // A non-negative dim against a constant c <= 0: a > c when c < 0; a >= c always.
  auto against_constant = [&](const Dim& dyn, int64_t c, bool dyn_first) -> int {
    if (!NonNegative(dyn) || c > 0) return 2;
    if (c < 0) return dyn_first ? 1 : -1;
    // c == 0: only sge (dyn first) / sle (dyn second) and their negations are decided.
    if (pred == "sge" || pred == "slt") return dyn_first ? 1 : 2;
    if (pred == "sle" || pred == "sgt") return dyn_first ? 2 : -1;
    return 2;
  };
  int order = a.dynamic() && !b.dynamic() ? against_constant(a, b.v, true)
              : !a.dynamic() && b.dynamic() ? against_constant(b, a.v, false)
                                            : 2;
  if (order != 2) return Dim::Static(holds(order));
  return Atom("cmpi " + pred, {a, b}, false, [&] {
    std::string c = Fresh(), n = Fresh();
    Line(c + " = arith.cmpi " + pred + ", " + DimValue(a) + ", " + DimValue(b) + " : index");
    Line(n + " = arith.select " + c + ", " + IndexConst(1) + ", " + IndexConst(0) + " : index");
    MarkNonNegative(n);
    return Dim::Dynamic(n);
  });
}

Dim Builder::SelectDim(const Dim& cond, const Dim& a, const Dim& b) {
  if (!cond.dynamic()) return cond.v != 0 ? a : b;
  if (!a.dynamic() && !b.dynamic() && a.v == b.v) return a;
  if (a.dynamic() && b.dynamic() && a.ssa == b.ssa) return a;
  return Atom("select", {cond, a, b}, false, [&] {
    std::string c = Fresh(), n = Fresh();
    Line(c + " = arith.cmpi ne, " + cond.ssa + ", " + IndexConst(0) + " : index");
    Line(n + " = arith.select " + c + ", " + DimValue(a) + ", " + DimValue(b) + " : index");
    if (NonNegative(a) && NonNegative(b)) MarkNonNegative(n);
    return Dim::Dynamic(n);
  });
}

Dim Builder::Product(const Shape& s, size_t begin, size_t end) {
  Dim p = Dim::Static(1);
  for (size_t i = begin; i < end; ++i) p = Mul(p, s[i]);
  return p;
}

bool Builder::SameProduct(const Shape& a, size_t ab, size_t ae, const Shape& b, size_t bb,
                          size_t be) const {
  auto form = [&](const Shape& s, size_t begin, size_t end) -> std::optional<SymbolicDims::Poly> {
    std::optional<SymbolicDims::Poly> p = SymbolicDims::Poly{{SymbolicDims::Monomial{}, 1}};
    for (size_t i = begin; p && i < end; ++i) p = SymbolicDims::Product(*p, dims_.Of(s[i]));
    return p;
  };
  std::optional<SymbolicDims::Poly> x = form(a, ab, ae), y = form(b, bb, be);
  return x && y && *x == *y;
}

std::string Builder::DimAsFloat(const Dim& d, const std::string& et) {
  if (!d.dynamic()) return ScalarConst(et, static_cast<double>(d.v));
  std::string i = Fresh(), f = Fresh();
  Line(i + " = arith.index_cast " + d.ssa + " : index to i64");
  Line(f + " = arith.sitofp " + i + " : i64 to " + et);
  return f;
}

std::string Builder::Empty(const Shape& shape, const std::string& et) {
  std::string args;
  for (const Dim& d : shape)
    if (d.dynamic()) args += (args.empty() ? "" : ", ") + d.ssa;
  std::string n = Fresh();
  Line(n + " = tensor.empty(" + args + ") : " + TensorType(shape, et));
  return n;
}

std::string Builder::Filled(const Shape& shape, const std::string& et, double value) {
  std::string e = Empty(shape, et);
  std::string c = ScalarConst(et, value);
  std::string n = Fresh();
  std::string t = TensorType(shape, et);
  Line(n + " = linalg.fill ins(" + c + " : " + et + ") outs(" + e + " : " + t + ") -> " + t);
  return n;
}

std::string Builder::Map(int loops, const std::vector<std::string>& results) {
  std::string s = "affine_map<(";
  for (int i = 0; i < loops; ++i) s += (i ? ", d" : "d") + std::to_string(i);
  s += ") -> (";
  for (size_t i = 0; i < results.size(); ++i) s += (i ? ", " : "") + results[i];
  return s + ")>";
}

std::string Builder::IdentityMap(int loops, int first) {
  std::vector<std::string> r;
  for (int i = first; i < loops; ++i) r.push_back("d" + std::to_string(i));
  return Map(loops, r);
}

std::string Builder::Generic(const std::vector<const Val*>& ins,
                             const std::vector<std::string>& in_maps, const std::string& out_map,
                             const Shape& out_shape, const std::string& out_et, int loops,
                             const std::vector<std::string>& iterators, const std::string& init,
                             const BodyFn& body) {
  for (const Dim& d : out_shape)  // nothing to compute (and hexir-compile rejects empty loops)
    if (!d.dynamic() && d.v == 0) return Empty(out_shape, out_et);
  std::string out_init = init.empty() ? Empty(out_shape, out_et) : init;
  std::string out_type = TensorType(out_shape, out_et);
  std::string maps, iters, in_names, in_types;
  for (const std::string& m : in_maps) maps += m + ", ";
  maps += out_map;
  for (int i = 0; i < loops; ++i) iters += (i ? ", \"" : "\"") + iterators[i] + "\"";
  for (size_t i = 0; i < ins.size(); ++i) {
    in_names += (i ? ", " : "") + ins[i]->name;
    in_types += (i ? ", " : "") + TensorType(*ins[i]);
  }
  std::string n = Fresh();
  std::string head = n + " = linalg.generic {indexing_maps = [" + maps + "], iterator_types = [" +
                     iters + "]" +
                     (device_ >= 0 ? ", " + std::string(kDeviceAttr) + " = " + std::to_string(device_) + " : i64" : "") + "} ";
  if (!ins.empty()) head += "ins(" + in_names + " : " + in_types + ") ";
  head += "outs(" + out_init + " : " + out_type + ") {";
  Line(head);
  std::vector<std::string> args;
  std::string bb = "^bb0(";
  for (size_t i = 0; i <= ins.size(); ++i) {
    std::string a = Fresh();
    args.push_back(a);
    bb += (i ? ", " : "") + a + ": " + (i < ins.size() ? ins[i]->et : out_et);
  }
  Line(bb + "):");
  ++body_depth_;
  std::string y = body(args);
  --body_depth_;
  Line("  linalg.yield " + y + " : " + out_et);
  Line("} -> " + out_type);
  return n;
}

std::string Builder::Bin(const std::string& fop, const std::string& iop, const std::string& a,
                         const std::string& b, const std::string& et) {
  const std::string& op = IsFloatType(et) ? fop : iop;
  std::string n = Fresh();
  if (op.empty()) {
    RecordError("operation not defined for element type " + et);
    return n;
  }
  Line(n + " = " + op + " " + a + ", " + b + " : " + et);
  return n;
}

std::string Builder::Op1(const std::string& op, const std::string& a, const std::string& et) {
  std::string n = Fresh();
  Line(n + " = " + op + " " + a + " : " + et);
  return n;
}

std::string Builder::Cmp(const std::string& fpred, const std::string& ipred, const std::string& a,
                         const std::string& b, const std::string& et) {
  std::string n = Fresh();
  if (IsFloatType(et)) Line(n + " = arith.cmpf " + fpred + ", " + a + ", " + b + " : " + et);
  else Line(n + " = arith.cmpi " + ipred + ", " + a + ", " + b + " : " + et);
  return n;
}

std::string Builder::Select(const std::string& c, const std::string& a, const std::string& b,
                            const std::string& et) {
  std::string n = Fresh();
  Line(n + " = arith.select " + c + ", " + a + ", " + b + " : " + et);
  return n;
}

std::string Builder::Convert(const std::string& v, const std::string& from, const std::string& to,
                             bool from_unsigned, bool to_unsigned) {
  if (from == to) return v;
  std::string n = Fresh();
  bool ff = IsFloatType(from), tf = IsFloatType(to);
  if (to == "i1") {
    std::string z = ScalarConst(from, 0);
    return Cmp("une", "ne", v, z, from);
  }
  if (ff && tf) {
    Line(n + " = arith." + std::string(ElementBytes(to) > ElementBytes(from) ? "extf " : "truncf ") +
         v + " : " + from + " to " + to);
  } else if (ff) {
    Line(n + " = arith." + std::string(to_unsigned ? "fptoui " : "fptosi ") + v + " : " + from + " to " + to);
  } else if (tf) {
    Line(n + " = arith." + std::string(from == "i1" || from_unsigned ? "uitofp " : "sitofp ") + v + " : " + from +
         " to " + to);
  } else {
    const char* op = ElementBytes(to) > ElementBytes(from) || (from == "i1" && to != "i1")
                         ? (from == "i1" || from_unsigned ? "extui " : "extsi ")
                         : "trunci ";
    Line(n + " = arith." + op + v + " : " + from + " to " + to);
  }
  return n;
}

std::string Builder::IndexGeneric(const Shape& out_shape, const std::string& out_et,
                                  const BodyFn& body) {
  int loops = static_cast<int>(out_shape.size());
  return Generic({}, {}, IdentityMap(loops), out_shape, out_et, loops,
                 std::vector<std::string>(loops, "parallel"), "", body);
}

Val Builder::Tabulate(const Shape& out_shape, const std::string& out_et,
                      const std::function<std::string(std::vector<std::string> idx)>& element) {
  Val r;
  r.et = out_et;
  r.shape = out_shape;
  const int loops = static_cast<int>(out_shape.size());
  r.name = IndexGeneric(out_shape, out_et, [&](const std::vector<std::string>&) { return element(LoopIndices(loops)); });
  return r;
}

std::string Builder::Extract(const Val& v, const std::vector<std::string>& idx) {
  std::string e = Fresh();
  Line(e + " = tensor.extract " + v.name + "[" + Join(idx) + "] : " + TensorType(v));
  return e;
}

std::string Builder::ToIndex(const std::string& v, const std::string& et) {
  std::string n = Fresh();
  Line(n + " = arith.index_cast " + v + " : " + et + " to index");
  return n;
}

std::string Builder::ToI64(const std::string& index) {
  std::string n = Fresh();
  Line(n + " = arith.index_cast " + index + " : index to i64");
  return n;
}

std::string Builder::Linearize(const std::vector<std::string>& coords, const std::vector<std::string>& extents) {
  std::string lin = IndexConst(0);
  for (size_t i = 0; i < coords.size(); ++i) {
    std::string scaled = Fresh(), next = Fresh();
    Line(scaled + " = arith.muli " + lin + ", " + extents[i] + " : index");
    Line(next + " = arith.addi " + scaled + ", " + coords[i] + " : index");
    lin = next;
  }
  return lin;
}

std::vector<std::string> Builder::Delinearize(const std::string& lin, const std::vector<std::string>& extents) {
  std::vector<std::string> coords(extents.size());
  std::string rest = lin;
  for (size_t k = extents.size(); k-- > 0;) {
    coords[k] = Fresh();
    Line(coords[k] + " = arith.remui " + rest + ", " + extents[k] + " : index");
    if (k == 0) break;
    std::string q = Fresh();
    Line(q + " = arith.divui " + rest + ", " + extents[k] + " : index");
    rest = q;
  }
  return coords;
}

std::string Builder::AndI1(const std::string& acc, const std::string& cond) {
  if (acc.empty()) return cond;
  std::string v = Fresh();
  Line(v + " = arith.andi " + acc + ", " + cond + " : i1");
  return v;
}

std::string Builder::XOr(const std::string& cond, const Val& x, const std::string& type,
                         const std::function<std::string()>& otherwise) {
  const std::string from = TensorType(x), r = Fresh();
  Line(r + " = scf.if " + cond + " -> (" + type + ") {");
  EnterRegion();
  std::string plain = x.name;
  if (from != type) {
    plain = Fresh();
    Line("  " + plain + " = tensor.cast " + x.name + " : " + from + " to " + type);
  }
  Line("  scf.yield " + plain + " : " + type);
  Line("} else {");
  std::string other = otherwise();
  Line("  scf.yield " + other + " : " + type);
  ExitRegion();
  Line("}");
  return r;
}

std::vector<std::string> Builder::LoopIndices(int loops) {
  std::vector<std::string> idx;
  for (int i = 0; i < loops; ++i) {
    idx.push_back(Fresh());
    Line(idx.back() + " = linalg.index " + std::to_string(i) + " : index");
  }
  return idx;
}

std::string Builder::Join(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s;
}

std::string Builder::TakeError() {
  std::string e = std::move(error_);
  error_.clear();
  return e;
}

}  // namespace hexir::importers::onnx
