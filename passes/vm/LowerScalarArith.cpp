// Host arith on scalars -> VM instructions: i64 ops, f64 ops with f32 rounding, compares,
// selects, casts; i32 results re-sign-extended, i1 results masked.
#include "passes/vm/HostLowering.h"

#include "llvm/ADT/TypeSwitch.h"
#include "passes/vm/HalImports.h"

namespace hexir::vm_lowering {

// The op -> instructions table of the ScalarArith patterns (HostLoweringPatterns.cpp), which
// have checked that every operand and result is a host scalar.
LogicalResult HostLowering::lowerScalarArith(Operation* op) {
  SmallVector<Value> in;
  for (Value v : op->getOperands()) {
    Value s = scalars.lookup(v);
    if (!s) return op->emitError("operand has no host value");
    in.push_back(s);
  }
  Type resultType = op->getResult(0).getType();
  bool i32 = resultType.isInteger(32);
  Value result;
  auto binary = [&](StringRef m) { return instI(m, {in[0], in[1]}); };
  // i32 values live sign-extended in 64-bit registers; unsigned division and the logical
  // shift read them zero-extended (0xFFFFFFFF / 2 is 0x7FFFFFFF, not -1).
  auto zeroExtended = [&](Value v) { return i32 ? instI("and.i64", {v, i64(0xFFFFFFFF)}) : v; };
  auto binaryU = [&](StringRef m) { return instI(m, {zeroExtended(in[0]), zeroExtended(in[1])}); };
  auto binaryF = [&](StringRef m) { return inst(m, {in[0], in[1]}, b.getF64Type()); };
  // Signed division at the type's width: INT32_MIN / -1 traps like INT64_MIN / -1 (and like a
  // kernel), instead of a 64-bit quotient that the truncation would wrap.
  StringRef divS = i32 ? "div.s.i32" : "div.s.i64", remS = i32 ? "rem.s.i32" : "rem.s.i64";
  result =
      llvm::TypeSwitch<Operation*, Value>(op)
          .Case([&](arith::AddIOp) { return binary("add.i64"); })
          .Case([&](arith::SubIOp) { return binary("sub.i64"); })
          .Case([&](arith::MulIOp) { return binary("mul.i64"); })
          .Case([&](arith::DivSIOp) { return binary(divS); })
          .Case([&](arith::RemSIOp) { return binary(remS); })
          .Case([&](arith::DivUIOp) { return binaryU("div.u.i64"); })
          .Case([&](arith::RemUIOp) { return binaryU("rem.u.i64"); })
          .Case([&](arith::AndIOp) { return binary("and.i64"); })
          .Case([&](arith::OrIOp) { return binary("or.i64"); })
          .Case([&](arith::XOrIOp) { return binary("xor.i64"); })
          .Case([&](arith::ShLIOp) { return binary("shl.i64"); })
          .Case([&](arith::ShRSIOp) { return binary("shr.s.i64"); })
          .Case([&](arith::ShRUIOp) { return binaryU("shr.u.i64"); })
          .Case([&](arith::MinSIOp) { return binary("min.s.i64"); })
          .Case([&](arith::MaxSIOp) { return binary("max.s.i64"); })
          .Case([&](arith::FloorDivSIOp) { return roundedDivSI(in[0], in[1], i32, /*ceil=*/false); })
          .Case([&](arith::CeilDivSIOp) { return roundedDivSI(in[0], in[1], i32, /*ceil=*/true); })
          .Case([&](arith::AddFOp) { return binaryF("add.f64"); })
          .Case([&](arith::SubFOp) { return binaryF("sub.f64"); })
          .Case([&](arith::MulFOp) { return binaryF("mul.f64"); })
          .Case([&](arith::DivFOp) { return binaryF("div.f64"); })
          .Case([&](arith::NegFOp) { return inst("neg.f64", {in[0]}, b.getF64Type()); })
          .Case([&](arith::CmpIOp c) { return lowerCmpI(c.getPredicate(), in[0], in[1]); })
          .Case([&](arith::CmpFOp c) { return lowerCmpF(c.getPredicate(), in[0], in[1]); })
          .Case([&](arith::SelectOp) { return instI("select.i64", {in[0], in[1], in[2]}); })
          .Case<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp>(
              [&](Operation*) { return in[0]; })
          .Case([&](arith::ExtUIOp e) {
            unsigned w = e.getIn().getType().getIntOrFloatBitWidth();
            return w >= 64 ? in[0] : instI("and.i64", {in[0], i64((int64_t(1) << w) - 1)});
          })
          .Case([&](arith::TruncIOp) { return in[0]; })
          .Case([&](arith::SIToFPOp) { return inst("cast.si64.f64", {in[0]}, b.getF64Type()); })
          .Case([&](arith::FPToSIOp) { return instI("cast.f64.si64", {in[0]}); })
          .Case([&](arith::ExtFOp) { return in[0]; })
          .Case([&](arith::TruncFOp) {
            Value bits = inst("trunc.f64.f32", {in[0]}, b.getI64Type());
            return inst("ext.f32.f64", {bits}, b.getF64Type());
          })
          .Default([&](Operation*) { return Value(); });
  if (!result)
    return op->emitError() << "unsupported op '" << op->getName()
                           << "' in a host function for target 'cpu'";
  // Narrow integers wrap like their type: sign-extend the low bits again, unless the op
  // cannot leave the i32 range of sign-extended operands (one instruction less per use).
  if (i32 && !isa<arith::CmpIOp, arith::DivSIOp, arith::RemSIOp, arith::AndIOp, arith::OrIOp,
                  arith::XOrIOp, arith::ShRSIOp, arith::MinSIOp, arith::MaxSIOp, arith::SelectOp>(op))
    result = instI("trunc.i64.i32", {result});
  if (resultType.isInteger(1) && !isa<arith::CmpIOp, arith::CmpFOp>(op))
    result = instI("and.i64", {result, i64(1)});
  scalars[op->getResult(0)] = result;
  return success();
}

// Floor / ceil signed division from the VM's truncating div and rem (any signs): the
// truncated quotient q is off by one exactly when the remainder r is nonzero and
// floor: r and b have different signs (q - 1); ceil: r and b have the same sign (q + 1).
Value HostLowering::roundedDivSI(Value a, Value d, bool i32, bool ceil) {
  Value q = instI(i32 ? "div.s.i32" : "div.s.i64", {a, d});
  Value r = instI(i32 ? "rem.s.i32" : "rem.s.i64", {a, d});
  Value inexact = instI("cmp.ne.i64", {r, i64(0)});
  Value signsDiffer = instI("xor.i64", {instI("cmp.lt.s.i64", {r, i64(0)}),
                                        instI("cmp.lt.s.i64", {d, i64(0)})});
  if (ceil) signsDiffer = instI("xor.i64", {signsDiffer, i64(1)});
  Value adjust = instI("and.i64", {inexact, signsDiffer});
  return instI(ceil ? "add.i64" : "sub.i64", {q, adjust});
}

Value HostLowering::lowerCmpI(arith::CmpIPredicate p, Value l, Value r) {
  using P = arith::CmpIPredicate;
  switch (p) {
    case P::eq: return instI("cmp.eq.i64", {l, r});
    case P::ne: return instI("cmp.ne.i64", {l, r});
    case P::slt: return instI("cmp.lt.s.i64", {l, r});
    case P::sle: return instI("cmp.le.s.i64", {l, r});
    case P::sgt: return instI("cmp.lt.s.i64", {r, l});
    case P::sge: return instI("cmp.le.s.i64", {r, l});
    case P::ult: return instI("cmp.lt.u.i64", {l, r});
    case P::ule: return instI("cmp.le.u.i64", {l, r});
    case P::ugt: return instI("cmp.lt.u.i64", {r, l});
    case P::uge: return instI("cmp.le.u.i64", {r, l});
  }
  return Value();
}

Value HostLowering::lowerCmpF(arith::CmpFPredicate p, Value l, Value r) {
  using P = arith::CmpFPredicate;
  switch (p) {
    case P::OEQ: return instI("cmp.eq.f64", {l, r});
    case P::OLT: return instI("cmp.lt.f64", {l, r});
    case P::OLE: return instI("cmp.le.f64", {l, r});
    case P::OGT: return instI("cmp.lt.f64", {r, l});
    case P::OGE: return instI("cmp.le.f64", {r, l});
    case P::UNE: return instI("xor.i64", {instI("cmp.eq.f64", {l, r}), i64(1)});
    default: return Value();
  }
}

}  // namespace hexir::vm_lowering
