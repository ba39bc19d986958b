// ONNX math ops (onnx/defs/math): elementwise arithmetic with numpy broadcasting and unary
// math, one linalg.generic each with an arith/math body. Known operands (shape computations)
// fold at import time instead (Folding.h).
#include <cmath>
#include <cstdlib>

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {
namespace {

// Clip with known bounds (absent: unbounded).
Status ClipToConstants(Context& c, Val& x, bool has_lo, double lo, bool has_hi, double hi) {
  Builder& b = c.b;
  std::string et = x.et;
  return c.SetOut(0, c.Elementwise({&x}, et, [&](const Args& a) {
    std::string l = has_lo ? b.ScalarConst(et, lo) : "", h = has_hi ? b.ScalarConst(et, hi) : "";
    return Clamp(b, a[0], l, h, et);
  }));
}

}  // namespace

Status LowerAbs(Context& c) {
  return LowerUnary(c, Operands::kFloatOrInteger, [](Builder& b, const std::string& x, const std::string& et) {
    return b.Op1(IsFloatType(et) ? "math.absf" : "math.absi", x, et);
  });
}

Status LowerNeg(Context& c) {
  return LowerUnary(c, Operands::kFloatOrInteger, [](Builder& b, const std::string& x, const std::string& et) {
    if (IsFloatType(et)) return b.Op1("arith.negf", x, et);
    return b.Bin("", "arith.subi", b.ScalarConst(et, 0), x, et);
  });
}

Status LowerAcos(Context& c) { return LowerFloatUnary(c, "math.acos"); }
Status LowerAcosh(Context& c) { return LowerFloatUnary(c, "math.acosh"); }
Status LowerAsin(Context& c) { return LowerFloatUnary(c, "math.asin"); }
Status LowerAsinh(Context& c) { return LowerFloatUnary(c, "math.asinh"); }
Status LowerAtan(Context& c) { return LowerFloatUnary(c, "math.atan"); }
Status LowerAtanh(Context& c) { return LowerFloatUnary(c, "math.atanh"); }
Status LowerCeil(Context& c) { return LowerFloatUnary(c, "math.ceil"); }
Status LowerCos(Context& c) { return LowerFloatUnary(c, "math.cos"); }
Status LowerCosh(Context& c) { return LowerFloatUnary(c, "math.cosh"); }
Status LowerErf(Context& c) { return LowerFloatUnary(c, "math.erf"); }
Status LowerExp(Context& c) { return LowerFloatUnary(c, "math.exp"); }
Status LowerFloor(Context& c) { return LowerFloatUnary(c, "math.floor"); }
Status LowerLog(Context& c) { return LowerFloatUnary(c, "math.log"); }
Status LowerRound(Context& c) { return LowerFloatUnary(c, "math.roundeven"); }
Status LowerSin(Context& c) { return LowerFloatUnary(c, "math.sin"); }
Status LowerSinh(Context& c) { return LowerFloatUnary(c, "math.sinh"); }
Status LowerSqrt(Context& c) { return LowerFloatUnary(c, "math.sqrt"); }
Status LowerTan(Context& c) { return LowerFloatUnary(c, "math.tan"); }
Status LowerTanh(Context& c) { return LowerFloatUnary(c, "math.tanh"); }

Status LowerReciprocal(Context& c) {
  return LowerUnary(c, Operands::kFloat, [](Builder& b, const std::string& x, const std::string& et) {
    return b.Bin("arith.divf", "", b.ScalarConst(et, 1), x, et);
  });
}

Status LowerSign(Context& c) {
  return LowerUnary(c, Operands::kFloatOrInteger, [](Builder& b, const std::string& x, const std::string& et) {
    std::string z = b.ScalarConst(et, 0), one = b.ScalarConst(et, 1), m = b.ScalarConst(et, -1);
    std::string gt = b.Cmp("ogt", "sgt", x, z, et), lt = b.Cmp("olt", "slt", x, z, et);
    return b.Select(gt, one, b.Select(lt, m, z, et), et);
  });
}

Status LowerAdd(Context& c) {
  return LowerBinary(c, {"arith.addf", "arith.addi"});
}

Status LowerSub(Context& c) {
  return LowerBinary(c, {"arith.subf", "arith.subi"});
}

Status LowerMul(Context& c) {
  return LowerBinary(c, {"arith.mulf", "arith.muli"});
}

Status LowerDiv(Context& c) { return LowerBinary(c, {"arith.divf", "arith.divsi", "", "", "arith.divui"}); }

Status LowerMax(Context& c) { return LowerBinary(c, {"arith.maximumf", "arith.maxsi", "", "", "arith.maxui"}); }
Status LowerMin(Context& c) { return LowerBinary(c, {"arith.minimumf", "arith.minsi", "", "", "arith.minui"}); }
Status LowerSum(Context& c) { return LowerBinary(c, {"arith.addf", "arith.addi"}); }

// Pow(x, 2) is x * x; integer or mixed-type Pow goes through f64.
Status LowerPow(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& base, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& y, c.In(1));
  Val x = base;
  std::string et = x.et;
  if (y.et != et || !IsFloatType(et)) {
    std::string yt = y.et;
    return c.SetOut(0, c.Elementwise({&x, &y}, et, [&](const Args& a) {
      std::string x64 = b.Convert(a[0], et, "f64", x.is_unsigned), y64 = b.Convert(a[1], yt, "f64", y.is_unsigned);
      std::string n = b.Fresh();
      b.Line(n + " = math.powf " + x64 + ", " + y64 + " : f64");
      return b.Convert(n, "f64", et, false, x.is_unsigned);
    }));
  }
  if (y.has_floats && y.floats.size() == 1 && y.floats[0] == 2.0)
    return c.SetOut(0, c.Elementwise({&x}, et, [&](const Args& a) {
      return b.Bin("arith.mulf", "", a[0], a[0], et);
    }));
  return c.SetOut(0, c.Elementwise({&x, &y}, et, [&](const Args& a) {
    std::string n = b.Fresh();
    b.Line(n + " = math.powf " + a[0] + ", " + a[1] + " : " + et);
    return n;
  }));
}

Status LowerMean(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& first, c.In(0));
  Val acc = first;
  std::string et = acc.et;
  for (int i = 1; i < c.NumIn(); ++i) {
    HEXIR_ASSIGN_OR_RETURN(Val& y, c.In(i));
    HEXIR_ASSIGN_OR_RETURN(acc, c.Elementwise({&acc, &y}, et, [&](const Args& a) {
      return b.Bin("arith.addf", "", a[0], a[1], et);
    }));
  }
  return c.SetOut(0, c.Elementwise({&acc}, et, [&](const Args& a) {
    return b.Bin("arith.divf", "", a[0], b.ScalarConst(et, c.NumIn()), et);
  }));
}

Status LowerClipWithAttributes(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  return ClipToConstants(c, x, true, c.AttrF("min", -3.402823e38f), true, c.AttrF("max", 3.402823e38f));
}

// Constant bounds become scalar constants; bounds computed at run time (0-D) broadcast over x.
Status LowerClip(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  std::string et = x.et;
  Val* lo = nullptr;
  Val* hi = nullptr;
  if (c.HasIn(1)) {
    HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(1));
    lo = &v;
  }
  if (c.HasIn(2)) {
    HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(2));
    hi = &v;
  }
  bool const_lo = !lo || lo->has_floats || lo->has_ints;
  bool const_hi = !hi || hi->has_floats || hi->has_ints;
  if (!const_lo || !const_hi) {
    std::vector<Val*> ins = {&x};
    if (lo) ins.push_back(lo);
    if (hi) ins.push_back(hi);
    return c.SetOut(0, c.Elementwise(ins, et, [&](const Args& a) {
      std::string l = lo ? a[1] : "", h = hi ? a[lo ? 2 : 1] : "";
      return Clamp(b, a[0], l, h, et);
    }));
  }
  double lo_value = 0, hi_value = 0;
  if (lo) {
    HEXIR_ASSIGN_OR_RETURN(std::vector<double> v, c.ConstFloats(*lo, "Clip min"));
    lo_value = v[0];
  }
  if (hi) {
    HEXIR_ASSIGN_OR_RETURN(std::vector<double> v, c.ConstFloats(*hi, "Clip max"));
    hi_value = v[0];
  }
  return ClipToConstants(c, x, lo != nullptr, lo_value, hi != nullptr, hi_value);
}

// fmod=1: remf / remsi; integer Mod takes the divisor's sign:
// r = rem(x, y); r != 0 && sign(r) != sign(y) -> r + y.
Status LowerMod(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& y, c.In(1));
  std::string et = x.et;
  bool fmod = c.AttrI("fmod", 0) != 0;
  if (IsFloatType(et) && !fmod) return c.Error("float Mod needs fmod=1");
  if (x.is_unsigned)  // both signs agree: the remainder
    return c.SetOut(0, c.Elementwise({&x, &y}, et, [&](const Args& a) {
      return b.Bin("", "arith.remui", a[0], a[1], et);
    }));
  return c.SetOut(0, c.Elementwise({&x, &y}, et, [&](const Args& a) {
    if (fmod) return b.Bin("arith.remf", "arith.remsi", a[0], a[1], et);
    std::string r = b.Bin("", "arith.remsi", a[0], a[1], et);
    std::string z = b.ScalarConst(et, 0);
    std::string nz = b.Cmp("", "ne", r, z, et);
    std::string rn = b.Cmp("", "slt", r, z, et), yn = b.Cmp("", "slt", a[1], z, et);
    std::string diff = b.Bin("", "arith.xori", rn, yn, "i1");
    std::string fix = b.Bin("", "arith.andi", nz, diff, "i1");
    return b.Select(fix, b.Bin("", "arith.addi", r, a[1], et), r, et);
  }));
}

// Integers shifted by integers of the same type: shli / shrui (ONNX shifts unsigned types).
Status LowerBitShift(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& y, c.In(1));
  std::string et = x.et, dir = c.AttrS("direction", "");
  if (IsFloatType(et) || et == "i1") return c.Error("element type " + et + " is not supported");
  if (dir != "LEFT" && dir != "RIGHT") return c.Error("direction must be LEFT or RIGHT, not '" + dir + "'");
  const char* op = dir == "LEFT" ? "arith.shli" : "arith.shrui";
  return c.SetOut(0, c.Elementwise({&x, &y}, et, [&](const Args& a) { return b.Bin("", op, a[0], a[1], et); }));
}

}  // namespace hexir::importers::onnx
