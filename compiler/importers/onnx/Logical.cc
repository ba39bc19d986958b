// ONNX logical ops (onnx/defs/logical): boolean and/or/xor/not on i1, bitwise and/or/xor/not
// on integers (opset 18), and comparisons
// (cmpf ordered predicates on floats, signed or unsigned cmpi on integers) with numpy broadcasting.
#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {

Status LowerAnd(Context& c) { return LowerBinary(c, {"", "arith.andi"}); }
Status LowerOr(Context& c) { return LowerBinary(c, {"", "arith.ori"}); }
Status LowerXor(Context& c) { return LowerBinary(c, {"", "arith.xori"}); }

Status LowerNot(Context& c) {
  return LowerUnary(c, Operands::kBool, [](Builder& b, const std::string& x, const std::string& et) {
    return b.Bin("", "arith.xori", x, b.ScalarConst("i1", 1), et);
  });
}

// Opset 18's bitwise ops on integers (signed or unsigned alike); floats are refused by type.
Status LowerBitwiseAnd(Context& c) { return LowerBinary(c, {"", "arith.andi"}); }
Status LowerBitwiseOr(Context& c) { return LowerBinary(c, {"", "arith.ori"}); }
Status LowerBitwiseXor(Context& c) { return LowerBinary(c, {"", "arith.xori"}); }

Status LowerBitwiseNot(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  if (x.IsFloat() || x.et == "i1") return c.Error("element type " + x.et + " is not supported (integers are)");
  return LowerUnary(c, Operands::kFloatOrInteger, [](Builder& b, const std::string& v, const std::string& et) {
    return b.Bin("", "arith.xori", v, b.ScalarConst(et, -1), et);
  });
}

Status LowerEqual(Context& c) { return LowerBinary(c, {"", "", "oeq", "eq"}); }
Status LowerGreater(Context& c) { return LowerBinary(c, {"", "", "ogt", "sgt", "", "ugt"}); }
Status LowerGreaterOrEqual(Context& c) { return LowerBinary(c, {"", "", "oge", "sge", "", "uge"}); }
Status LowerLess(Context& c) { return LowerBinary(c, {"", "", "olt", "slt", "", "ult"}); }
Status LowerLessOrEqual(Context& c) { return LowerBinary(c, {"", "", "ole", "sle", "", "ule"}); }

}  // namespace hexir::importers::onnx
