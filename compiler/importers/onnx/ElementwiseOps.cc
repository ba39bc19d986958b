// Elementwise ONNX ops (numpy broadcasting): one linalg.generic each, bodies in arith/math.
// Integer shape arithmetic on known contents (Shape -> Gather -> Mul ...) is folded instead.
#include <cmath>
#include <functional>
#include <map>

#include "compiler/importers/onnx/Context.h"

namespace hexir::importers::onnx {
namespace {

using Args = std::vector<std::string>;
using Unary = std::function<std::string(Builder&, const std::string&, const std::string&, Context&)>;

std::string Sigmoid(Builder& b, const std::string& x, const std::string& et) {
  std::string one = b.ScalarConst(et, 1);
  std::string n = b.Op1("arith.negf", x, et);
  std::string e = b.Op1("math.exp", n, et);
  std::string d = b.Bin("arith.addf", "", one, e, et);
  return b.Bin("arith.divf", "", one, d, et);
}

std::string Clamp(Builder& b, const std::string& x, const std::string& lo, const std::string& hi,
                  const std::string& et) {
  std::string v = lo.empty() ? x : b.Bin("arith.maximumf", "arith.maxsi", x, lo, et);
  return hi.empty() ? v : b.Bin("arith.minimumf", "arith.minsi", v, hi, et);
}

const std::map<std::string, Unary>& UnaryOps() {
  static const auto* ops = new std::map<std::string, Unary>{
      {"Relu", [](Builder& b, const std::string& x, const std::string& et, Context&) {
         return b.Bin("arith.maximumf", "arith.maxsi", x, b.ScalarConst(et, 0), et);
       }},
      {"Sigmoid", [](Builder& b, const std::string& x, const std::string& et, Context&) {
         return Sigmoid(b, x, et);
       }},
      {"Tanh", [](Builder& b, const std::string& x, const std::string& et, Context&) {
         return b.Op1("math.tanh", x, et);
       }},
      {"Exp", [](Builder& b, const std::string& x, const std::string& et, Context&) {
         return b.Op1("math.exp", x, et);
       }},
      {"Log", [](Builder& b, const std::string& x, const std::string& et, Context&) {
         return b.Op1("math.log", x, et);
       }},
      {"Sqrt", [](Builder& b, const std::string& x, const std::string& et, Context&) {
         return b.Op1("math.sqrt", x, et);
       }},
      {"Neg", [](Builder& b, const std::string& x, const std::string& et, Context&) {
         if (IsFloatType(et)) return b.Op1("arith.negf", x, et);
         return b.Bin("", "arith.subi", b.ScalarConst(et, 0), x, et);
       }},
      {"Abs", [](Builder& b, const std::string& x, const std::string& et, Context&) {
         return b.Op1(IsFloatType(et) ? "math.absf" : "math.absi", x, et);
       }},
      {"Reciprocal", [](Builder& b, const std::string& x, const std::string& et, Context&) {
         return b.Bin("arith.divf", "", b.ScalarConst(et, 1), x, et);
       }},
      {"Floor", [](Builder& b, const std::string& x, const std::string& et, Context&) {
         return b.Op1("math.floor", x, et);
       }},
      {"Ceil", [](Builder& b, const std::string& x, const std::string& et, Context&) {
         return b.Op1("math.ceil", x, et);
       }},
      {"Round", [](Builder& b, const std::string& x, const std::string& et, Context&) {
         return b.Op1("math.roundeven", x, et);
       }},
      {"Sin", [](Builder& b, const std::string& x, const std::string& et, Context&) { return b.Op1("math.sin", x, et); }},
      {"Cos", [](Builder& b, const std::string& x, const std::string& et, Context&) { return b.Op1("math.cos", x, et); }},
      {"Tan", [](Builder& b, const std::string& x, const std::string& et, Context&) { return b.Op1("math.tan", x, et); }},
      {"Atan", [](Builder& b, const std::string& x, const std::string& et, Context&) { return b.Op1("math.atan", x, et); }},
      {"Asin", [](Builder& b, const std::string& x, const std::string& et, Context&) { return b.Op1("math.asin", x, et); }},
      {"Acos", [](Builder& b, const std::string& x, const std::string& et, Context&) { return b.Op1("math.acos", x, et); }},
      {"Sinh", [](Builder& b, const std::string& x, const std::string& et, Context&) { return b.Op1("math.sinh", x, et); }},
      {"Cosh", [](Builder& b, const std::string& x, const std::string& et, Context&) { return b.Op1("math.cosh", x, et); }},
      {"Asinh", [](Builder& b, const std::string& x, const std::string& et, Context&) { return b.Op1("math.asinh", x, et); }},
      {"Acosh", [](Builder& b, const std::string& x, const std::string& et, Context&) { return b.Op1("math.acosh", x, et); }},
      {"Atanh", [](Builder& b, const std::string& x, const std::string& et, Context&) { return b.Op1("math.atanh", x, et); }},
      {"Erf", [](Builder& b, const std::string& x, const std::string& et, Context&) { return b.Op1("math.erf", x, et); }},
      {"Not", [](Builder& b, const std::string& x, const std::string& et, Context&) {
         return b.Bin("", "arith.xori", x, b.ScalarConst("i1", 1), et);
       }},
      {"Sign", [](Builder& b, const std::string& x, const std::string& et, Context&) {
         std::string z = b.ScalarConst(et, 0), one = b.ScalarConst(et, 1), m = b.ScalarConst(et, -1);
         std::string gt = b.Cmp("ogt", "sgt", x, z, et), lt = b.Cmp("olt", "slt", x, z, et);
         return b.Select(gt, one, b.Select(lt, m, z, et), et);
       }},
      {"Softplus", [](Builder& b, const std::string& x, const std::string& et, Context&) {
         return b.Op1("math.log1p", b.Op1("math.exp", x, et), et);
       }},
      {"Softsign", [](Builder& b, const std::string& x, const std::string& et, Context&) {
         std::string d = b.Bin("arith.addf", "", b.ScalarConst(et, 1), b.Op1("math.absf", x, et), et);
         return b.Bin("arith.divf", "", x, d, et);
       }},
      {"LeakyRelu", [](Builder& b, const std::string& x, const std::string& et, Context& c) {
         std::string a = b.ScalarConst(et, c.AttrF("alpha", 0.01f));
         std::string neg = b.Cmp("olt", "slt", x, b.ScalarConst(et, 0), et);
         return b.Select(neg, b.Bin("arith.mulf", "", x, a, et), x, et);
       }},
      {"ThresholdedRelu", [](Builder& b, const std::string& x, const std::string& et, Context& c) {
         std::string gt = b.Cmp("ogt", "", x, b.ScalarConst(et, c.AttrF("alpha", 1.0f)), et);
         return b.Select(gt, x, b.ScalarConst(et, 0), et);
       }},
      {"Elu", [](Builder& b, const std::string& x, const std::string& et, Context& c) {
         std::string a = b.ScalarConst(et, c.AttrF("alpha", 1.0f));
         std::string em1 = b.Op1("math.expm1", x, et);
         std::string neg = b.Cmp("olt", "", x, b.ScalarConst(et, 0), et);
         return b.Select(neg, b.Bin("arith.mulf", "", a, em1, et), x, et);
       }},
      {"Selu", [](Builder& b, const std::string& x, const std::string& et, Context& c) {
         std::string a = b.ScalarConst(et, c.AttrF("alpha", 1.67326319217681884765625f));
         std::string g = b.ScalarConst(et, c.AttrF("gamma", 1.05070102214813232421875f));
         std::string em1 = b.Bin("arith.mulf", "", a, b.Op1("math.expm1", x, et), et);
         std::string neg = b.Cmp("ole", "", x, b.ScalarConst(et, 0), et);
         return b.Bin("arith.mulf", "", g, b.Select(neg, em1, x, et), et);
       }},
      {"HardSigmoid", [](Builder& b, const std::string& x, const std::string& et, Context& c) {
         std::string a = b.ScalarConst(et, c.AttrF("alpha", 0.2f));
         std::string be = b.ScalarConst(et, c.AttrF("beta", 0.5f));
         std::string v = b.Bin("arith.addf", "", b.Bin("arith.mulf", "", a, x, et), be, et);
         return Clamp(b, v, b.ScalarConst(et, 0), b.ScalarConst(et, 1), et);
       }},
      {"HardSwish", [](Builder& b, const std::string& x, const std::string& et, Context&) {
         std::string a = b.ScalarConst(et, 1.0 / 6.0), be = b.ScalarConst(et, 0.5);
         std::string v = b.Bin("arith.addf", "", b.Bin("arith.mulf", "", a, x, et), be, et);
         v = Clamp(b, v, b.ScalarConst(et, 0), b.ScalarConst(et, 1), et);
         return b.Bin("arith.mulf", "", x, v, et);
       }},
  };
  return *ops;
}

struct BinaryOp {
  std::string fop, iop;  // arith op names (float, integer); empty = not defined
  std::string fpred, ipred;  // comparisons (result i1)
};

const std::map<std::string, BinaryOp>& BinaryOps() {
  static const auto* ops = new std::map<std::string, BinaryOp>{
      {"Add", {"arith.addf", "arith.addi", "", ""}},
      {"Sub", {"arith.subf", "arith.subi", "", ""}},
      {"Mul", {"arith.mulf", "arith.muli", "", ""}},
      {"Div", {"arith.divf", "arith.divsi", "", ""}},
      {"Max", {"arith.maximumf", "arith.maxsi", "", ""}},
      {"Min", {"arith.minimumf", "arith.minsi", "", ""}},
      {"Sum", {"arith.addf", "arith.addi", "", ""}},
      {"Pow", {"math.powf", "", "", ""}},
      {"And", {"", "arith.andi", "", ""}},
      {"Or", {"", "arith.ori", "", ""}},
      {"Xor", {"", "arith.xori", "", ""}},
      {"Equal", {"", "", "oeq", "eq"}},
      {"Less", {"", "", "olt", "slt"}},
      {"Greater", {"", "", "ogt", "sgt"}},
      {"LessOrEqual", {"", "", "ole", "sle"}},
      {"GreaterOrEqual", {"", "", "oge", "sge"}},
  };
  return *ops;
}

// Folds integer arithmetic on known contents (shape computations).
bool FoldInts(Context& c, const std::string& op) {
  if (c.NumIn() != 2 || !c.HasIn(0) || !c.HasIn(1)) return false;
  Val &x = c.In(0), &y = c.In(1);
  if (!x.has_ints || !y.has_ints || x.IsFloat()) return false;
  if (op != "Add" && op != "Sub" && op != "Mul" && op != "Div") return false;
  size_t n = std::max(x.ints.size(), y.ints.size());
  if ((x.ints.size() != n && x.ints.size() != 1) || (y.ints.size() != n && y.ints.size() != 1))
    return false;
  Val r;
  r.et = x.et;
  r.shape = x.ints.size() >= y.ints.size() ? x.shape : y.shape;
  r.has_ints = true;
  for (size_t i = 0; i < n; ++i) {
    const Dim& a = x.ints[x.ints.size() == 1 ? 0 : i];
    const Dim& b = y.ints[y.ints.size() == 1 ? 0 : i];
    if (op == "Add") r.ints.push_back(c.b.Add(a, b));
    if (op == "Sub") r.ints.push_back(c.b.Sub(a, b));
    if (op == "Mul") r.ints.push_back(c.b.Mul(a, b));
    if (op == "Div") {
      if (!a.dynamic() && !b.dynamic() && b.v != 0) r.ints.push_back(Dim::Static(a.v / b.v));
      else r.ints.push_back(c.b.FloorDiv(a, b));  // shape values are non-negative
    }
  }
  c.SetOut(0, r);
  return true;
}

}  // namespace

bool LowerElementwise(Context& c) {
  const std::string& op = c.node->op_type();
  Builder& b = c.b;
  auto u = UnaryOps().find(op);
  if (u != UnaryOps().end()) {
    Val& x = c.In(0);
    if ((op == "Neg" || op == "Abs") && x.has_ints && x.name.empty()) {  // shape arithmetic
      Val r = x;
      r.raw.clear();
      for (Dim& d : r.ints) {
        if (d.dynamic()) c.Fail("Neg/Abs of a dynamic dimension");
        d.v = op == "Neg" ? -d.v : std::abs(d.v);
      }
      c.SetOut(0, r);
      return true;
    }
    std::string et = x.et;
    if (op == "Not" ? et != "i1" : (!x.IsFloat() && op != "Relu" && op != "Neg" && op != "Abs" && op != "Sign"))
      c.Fail("element type " + et + " is not supported");
    c.SetOut(0, c.Elementwise({&x}, et, [&](const Args& a) { return u->second(b, a[0], et, c); }));
    return true;
  }
  auto bi = BinaryOps().find(op);
  if (bi != BinaryOps().end()) {
    if (FoldInts(c, op)) return true;
    const BinaryOp& bo = bi->second;
    bool cmp = !bo.fpred.empty();
    Val acc = c.In(0);
    std::string et = acc.et;
    if (c.NumIn() == 1) {
      c.SetOut(0, acc);
      return true;
    }
    for (int i = 1; i < c.NumIn(); ++i) {
      Val& y = c.In(i);
      if (op == "Pow" && (y.et != et || !IsFloatType(et))) {  // mixed or integer Pow
        std::string yt = y.et;
        acc = c.Elementwise({&acc, &y}, et, [&](const Args& a) {
          std::string x64 = b.Convert(a[0], et, "f64"), y64 = b.Convert(a[1], yt, "f64");
          std::string n = b.Fresh();
          b.Line(n + " = math.powf " + x64 + ", " + y64 + " : f64");
          return b.Convert(n, "f64", et);
        });
        continue;
      }
      if (y.et != et) c.Fail("operands have different element types " + et + " and " + y.et);
      if ((IsFloatType(et) ? bo.fop : bo.iop).empty() && !cmp)
        c.Fail("element type " + et + " is not supported");
      if (op == "Pow" && y.has_floats && y.floats.size() == 1 && y.floats[0] == 2.0) {
        acc = c.Elementwise({&acc}, et, [&](const Args& a) {
          return b.Bin("arith.mulf", "", a[0], a[0], et);
        });
        continue;
      }
      acc = c.Elementwise({&acc, &y}, cmp ? "i1" : et, [&](const Args& a) {
        if (cmp) return b.Cmp(bo.fpred, bo.ipred, a[0], a[1], et);
        if (op == "Pow") {
          std::string n = b.Fresh();
          b.Line(n + " = math.powf " + a[0] + ", " + a[1] + " : " + et);
          return n;
        }
        return b.Bin(bo.fop, bo.iop, a[0], a[1], et);
      });
    }
    c.SetOut(0, acc);
    return true;
  }
  if (op == "Mean") {
    Val acc = c.In(0);
    std::string et = acc.et;
    for (int i = 1; i < c.NumIn(); ++i)
      acc = c.Elementwise({&acc, &c.In(i)}, et, [&](const Args& a) {
        return b.Bin("arith.addf", "", a[0], a[1], et);
      });
    c.SetOut(0, c.Elementwise({&acc}, et, [&](const Args& a) {
      return b.Bin("arith.divf", "", a[0], b.ScalarConst(et, c.NumIn()), et);
    }));
    return true;
  }
  if (op == "PRelu") {
    Val &x = c.In(0), &s = c.In(1);
    std::string et = x.et;
    c.SetOut(0, c.Elementwise({&x, &s}, et, [&](const Args& a) {
      std::string neg = b.Cmp("olt", "slt", a[0], b.ScalarConst(et, 0), et);
      return b.Select(neg, b.Bin("arith.mulf", "arith.muli", a[0], a[1], et), a[0], et);
    }));
    return true;
  }
  if (op == "Where") {
    Val &cond = c.In(0), &x = c.In(1), &y = c.In(2);
    std::string et = x.et;
    c.SetOut(0, c.Elementwise({&cond, &x, &y}, et,
                              [&](const Args& a) { return b.Select(a[0], a[1], a[2], et); }));
    return true;
  }
  if (op == "Clip") {
    Val& x = c.In(0);
    std::string et = x.et;
    bool fl = x.IsFloat();
    double lo = fl ? -INFINITY : -1e300, hi = fl ? INFINITY : 1e300;
    bool has_lo = false, has_hi = false;
    if (c.opset < 11) {
      lo = c.AttrF("min", -3.402823e38f);
      hi = c.AttrF("max", 3.402823e38f);
      has_lo = has_hi = true;
    } else {
      bool const_lo = !c.HasIn(1) || c.In(1).has_floats || c.In(1).has_ints;
      bool const_hi = !c.HasIn(2) || c.In(2).has_floats || c.In(2).has_ints;
      if (!const_lo || !const_hi) {  // runtime bounds: 0-D operands broadcast over x
        std::vector<Val*> ins = {&x};
        if (c.HasIn(1)) ins.push_back(&c.In(1));
        if (c.HasIn(2)) ins.push_back(&c.In(2));
        bool with_lo = c.HasIn(1);
        c.SetOut(0, c.Elementwise(ins, et, [&](const Args& a) {
          std::string l = with_lo ? a[1] : "", h = c.HasIn(2) ? a[with_lo ? 2 : 1] : "";
          return Clamp(b, a[0], l, h, et);
        }));
        return true;
      }
      if (c.HasIn(1)) { lo = c.ConstFloats(c.In(1), "Clip min")[0]; has_lo = true; }
      if (c.HasIn(2)) { hi = c.ConstFloats(c.In(2), "Clip max")[0]; has_hi = true; }
    }
    c.SetOut(0, c.Elementwise({&x}, et, [&](const Args& a) {
      std::string l = has_lo ? b.ScalarConst(et, lo) : "", h = has_hi ? b.ScalarConst(et, hi) : "";
      return Clamp(b, a[0], l, h, et);
    }));
    return true;
  }
  if (op == "IsNaN" || op == "IsInf") {
    Val& x = c.In(0);
    std::string et = x.et;
    bool pos = c.AttrI("detect_positive", 1) != 0, neg = c.AttrI("detect_negative", 1) != 0;
    c.SetOut(0, c.Elementwise({&x}, "i1", [&](const Args& a) {
      if (op == "IsNaN") return b.Cmp("uno", "", a[0], a[0], et);
      std::string inf = b.ScalarConst(et, INFINITY), ninf = b.ScalarConst(et, -INFINITY);
      std::string p = pos ? b.Cmp("oeq", "", a[0], inf, et) : b.ScalarConst("i1", 0);
      std::string n = neg ? b.Cmp("oeq", "", a[0], ninf, et) : b.ScalarConst("i1", 0);
      return b.Bin("", "arith.ori", p, n, "i1");
    }));
    return true;
  }
  if (op == "Celu") {
    Val& x = c.In(0);
    std::string et = x.et;
    double alpha = c.AttrF("alpha", 1.0f);
    c.SetOut(0, c.Elementwise({&x}, et, [&](const Args& a) {
      std::string al = b.ScalarConst(et, alpha), z = b.ScalarConst(et, 0);
      std::string e = b.Op1("math.expm1", b.Bin("arith.divf", "", a[0], al, et), et);
      std::string neg = b.Bin("arith.minimumf", "", z, b.Bin("arith.mulf", "", al, e, et), et);
      return b.Bin("arith.addf", "", b.Bin("arith.maximumf", "", z, a[0], et), neg, et);
    }));
    return true;
  }
  if (op == "Shrink") {
    Val& x = c.In(0);
    std::string et = x.et;
    double bias = c.AttrF("bias", 0), lambd = c.AttrF("lambd", 0.5f);
    c.SetOut(0, c.Elementwise({&x}, et, [&](const Args& a) {
      std::string l = b.ScalarConst(et, lambd), nl = b.ScalarConst(et, -lambd);
      std::string bi = b.ScalarConst(et, bias), z = b.ScalarConst(et, 0);
      std::string lo = b.Cmp("olt", "slt", a[0], nl, et), hi = b.Cmp("ogt", "sgt", a[0], l, et);
      std::string vlo = b.Bin("arith.addf", "arith.addi", a[0], bi, et);
      std::string vhi = b.Bin("arith.subf", "arith.subi", a[0], bi, et);
      return b.Select(lo, vlo, b.Select(hi, vhi, z, et), et);
    }));
    return true;
  }
  if (op == "Mod") {
    Val &x = c.In(0), &y = c.In(1);
    std::string et = x.et;
    bool fmod = c.AttrI("fmod", 0) != 0;
    if (IsFloatType(et) && !fmod) c.Fail("float Mod needs fmod=1");
    c.SetOut(0, c.Elementwise({&x, &y}, et, [&](const Args& a) {
      if (fmod) return b.Bin("arith.remf", "arith.remsi", a[0], a[1], et);
      // Integer Mod takes the divisor's sign: r = rem(x, y); r != 0 && sign(r) != sign(y) -> r + y.
      std::string r = b.Bin("", "arith.remsi", a[0], a[1], et);
      std::string z = b.ScalarConst(et, 0);
      std::string nz = b.Cmp("", "ne", r, z, et);
      std::string rn = b.Cmp("", "slt", r, z, et), yn = b.Cmp("", "slt", a[1], z, et);
      std::string diff = b.Bin("", "arith.xori", rn, yn, "i1");
      std::string fix = b.Bin("", "arith.andi", nz, diff, "i1");
      return b.Select(fix, b.Bin("", "arith.addi", r, a[1], et), r, et);
    }));
    return true;
  }
  if (op == "Cast") {
    Val& x = c.In(0);
    std::string to = Context::ElementType(static_cast<int>(c.AttrI("to", 1)));
    if (to.empty()) c.Fail("cast to element type " + std::to_string(c.AttrI("to", 0)) + " is not supported");
    if (x.has_ints && !IsFloatType(to) && to != "i1" && x.name.empty()) {
      Val r = x;
      r.et = to;
      r.raw.clear();
      c.SetOut(0, r);
      return true;
    }
    std::string from = x.et;
    c.SetOut(0, c.Elementwise({&x}, to, [&](const Args& a) { return b.Convert(a[0], from, to); }));
    return true;
  }
  return false;
}

}  // namespace hexir::importers::onnx
