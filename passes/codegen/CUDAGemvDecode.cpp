// The quantized GEMV's decode arithmetic (CUDAGemvDecode.h says what and why).
#include "passes/codegen/CUDAGemvDecode.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/InferIntRangeInterface.h"
#include "passes/codegen/CUDABlockMatvec.h"

namespace hexir::cuda {
using namespace mlir;

void CseCloner::clone(Operation& op, IRMapping& m) {
  std::vector<const void*> key = {op.getName().getAsOpaquePointer(), op.getAttrDictionary().getAsOpaquePointer()};
  for (Value operand : op.getOperands()) key.push_back(m.lookupOrDefault(operand).getAsOpaquePointer());
  for (Type t : op.getResultTypes()) key.push_back(t.getAsOpaquePointer());
  Operation*& earlier = ops[key];
  if (!earlier || op.getNumRegions() != 0) earlier = b.clone(op, m);
  for (auto [from, to] : llvm::zip(op.getResults(), earlier->getResults())) m.map(from, to);
}

Value CseCloner::constant(Attribute value, Location loc) {
  Value& v = constants[value];
  if (!v) v = arith::ConstantOp::create(b, loc, cast<TypedAttr>(value));
  return v;
}

namespace {
// 2^22 and 1.5 x 2^23 (whose f32 bits are 0x4B400000): 1.5 x 2^23 + i is an f32 integer
// with the same exponent for every i in [-2^22, 2^22), its low 23 bits 2^22 + i.
constexpr int64_t kTrickRange = int64_t{1} << 22;
constexpr int32_t kTrickBits = 0x4B400000;
constexpr float kTrickValue = 12582912.0f;

ConstantIntRanges RangeOf(Value v, int depth) {
  unsigned width = ConstantIntRanges::getStorageBitwidth(v.getType());
  ConstantIntRanges whole = ConstantIntRanges::maxRange(width);
  if (width == 0) return whole;
  auto infer = v.getDefiningOp<InferIntRangeInterface>();
  if (!infer || depth > 16) return whole;
  SmallVector<ConstantIntRanges> operands;
  for (Value operand : infer->getOperands()) {
    if (ConstantIntRanges::getStorageBitwidth(operand.getType()) == 0) return whole;
    operands.push_back(RangeOf(operand, depth + 1));
  }
  ConstantIntRanges result = whole;
  infer.inferResultRanges(operands, [&](Value r, const ConstantIntRanges& range) {
    if (r == v) result = range;
  });
  return result;
}
}  // namespace

bool FitsExponentTrick(Value v, bool isSigned) {
  auto type = dyn_cast<IntegerType>(v.getType());
  if (!type || type.getWidth() > 32) return false;
  ConstantIntRanges range = RangeOf(v, 0);
  if (isSigned) return range.smin().getSExtValue() >= -kTrickRange && range.smax().getSExtValue() < kTrickRange;
  return range.umax().getZExtValue() < uint64_t(kTrickRange);
}

Value SmallIntToF32(OpBuilder& b, Location loc, Value v, bool isSigned) {
  Type i32 = b.getI32Type();
  if (v.getType() != i32)
    v = isSigned ? Value(arith::ExtSIOp::create(b, loc, i32, v)) : Value(arith::ExtUIOp::create(b, loc, i32, v));
  Value bits = arith::AddIOp::create(b, loc, v, arith::ConstantIntOp::create(b, loc, i32, kTrickBits));
  Value f = arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
  return arith::SubFOp::create(b, loc, f, arith::ConstantOp::create(b, loc, b.getF32FloatAttr(kTrickValue)));
}

Value FactoredSum(OpBuilder& b, Location loc, const std::vector<DecodedTerm>& terms) {
  constexpr size_t kRun = 32;
  struct Run {
    Value a, c;
    bool subtract;
    Value xv, x;  // fma chain of x v, sum of x
    size_t length = 0;
  };
  std::vector<Run> runs;
  std::map<std::tuple<const void*, const void*, bool>, size_t> open;  // key -> runs index
  SmallVector<Value> sums;
  for (const DecodedTerm& t : terms) {
    if (!t.factored()) {
      sums.push_back(t.whole);
      continue;
    }
    auto key = std::make_tuple(t.a.getAsOpaquePointer(), t.c ? t.c.getAsOpaquePointer() : nullptr, t.subtract);
    auto it = open.find(key);
    if (it == open.end() || runs[it->second].length == kRun) {
      runs.push_back(Run{t.a, t.c, t.subtract, Value(), Value()});
      it = open.insert_or_assign(key, runs.size() - 1).first;
    }
    Run& run = runs[it->second];
    run.xv = run.xv ? Value(math::FmaOp::create(b, loc, t.x, t.v, run.xv))
                    : Value(arith::MulFOp::create(b, loc, t.x, t.v));
    if (run.c) run.x = run.x ? Value(arith::AddFOp::create(b, loc, run.x, t.x)) : t.x;
    ++run.length;
  }
  for (Run& run : runs) {
    Value scaled = arith::MulFOp::create(b, loc, run.a, run.xv);
    if (run.c) {
      Value offset = arith::MulFOp::create(b, loc, run.c, run.x);
      scaled = run.subtract ? Value(arith::SubFOp::create(b, loc, scaled, offset))
                            : Value(arith::AddFOp::create(b, loc, scaled, offset));
    }
    sums.push_back(scaled);
  }
  return SumTree(b, loc, std::move(sums));
}

}  // namespace hexir::cuda
