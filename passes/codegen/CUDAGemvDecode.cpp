// The quantized GEMV's decode arithmetic (CUDAGemvDecode.h says what and why).
#include "passes/codegen/CUDAGemvDecode.h"

#include <cmath>

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
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

std::optional<ByteField> MatchByteField(Value v) {
  auto constantOf = [](Value c) -> std::optional<int64_t> {
    IntegerAttr a;
    if (!matchPattern(c, m_Constant(&a))) return std::nullopt;
    return a.getInt();
  };
  ByteField f;
  if (auto sub = v.getDefiningOp<arith::SubIOp>()) {
    std::optional<int64_t> c = constantOf(sub.getRhs());
    if (!c) return std::nullopt;
    f.offset = -*c, v = sub.getLhs();
  } else if (auto add = v.getDefiningOp<arith::AddIOp>()) {
    std::optional<int64_t> c = constantOf(add.getRhs());
    if (!c) return std::nullopt;
    f.offset = *c, v = add.getLhs();
  }
  int64_t mask = 255;
  if (auto a = v.getDefiningOp<arith::AndIOp>()) {
    std::optional<int64_t> c = constantOf(a.getRhs());
    if (!c || *c <= 0 || (*c & (*c + 1)) != 0) return std::nullopt;  // 2^width - 1
    mask = *c, v = a.getLhs();
  }
  if (auto s = v.getDefiningOp<arith::ShRUIOp>()) {
    std::optional<int64_t> c = constantOf(s.getRhs());
    if (!c || *c < 0 || *c >= 8) return std::nullopt;
    f.shift = *c, v = s.getLhs();
  }
  auto ext = v.getDefiningOp<arith::ExtUIOp>();
  if (!ext || !ext.getIn().getType().isInteger(8) || !ext.getType().isInteger(32)) return std::nullopt;
  auto extract = ext.getIn().getDefiningOp<vector::ExtractOp>();
  if (!extract || extract.getStaticPosition().size() != 1 || ShapedType::isDynamic(extract.getStaticPosition()[0]))
    return std::nullopt;
  auto vectorType = dyn_cast<VectorType>(extract.getSource().getType());
  if (!vectorType || vectorType.getRank() != 1 || vectorType.getNumElements() % 4 != 0) return std::nullopt;
  f.load = extract.getSource();
  f.byte = extract.getStaticPosition()[0];
  f.width = std::min<int64_t>(llvm::countr_one(uint64_t(mask)), 8 - f.shift);
  if (f.offset <= -kTrickRange || f.offset >= kTrickRange) return std::nullopt;
  return f;
}

std::pair<Value, int64_t> ByteFieldConverter::convert(const ByteField& f, Location loc) {
  Type i32 = b.getI32Type();
  Value& all = words[f.load];
  if (!all) {
    auto type = cast<VectorType>(f.load.getType());
    all = vector::BitCastOp::create(b, loc, VectorType::get({type.getNumElements() / 4}, i32), f.load);
  }
  int64_t at = 8 * (f.byte % 4) + f.shift;
  const bool shifted = at + f.width > 23;
  if (shifted) at -= 16;
  Value& w = word[{f.load.getAsOpaquePointer(), f.byte / 4, shifted}];
  if (!w) {
    w = vector::ExtractOp::create(b, loc, all, f.byte / 4);
    if (shifted) w = arith::ShRUIOp::create(b, loc, w, arith::ConstantIntOp::create(b, loc, i32, 16));
  }
  const int64_t mask = ((int64_t{1} << f.width) - 1) << at;
  Value field = arith::AndIOp::create(b, loc, w, arith::ConstantIntOp::create(b, loc, i32, mask));
  Value bits = arith::OrIOp::create(b, loc, field, arith::ConstantIntOp::create(b, loc, i32, 0x4B000000));
  Value value = arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
  const float bias = float(int64_t{1} << 23) - float(f.offset) * float(int64_t{1} << at);
  value = arith::SubFOp::create(b, loc, value, arith::ConstantOp::create(b, loc, b.getF32FloatAttr(bias)));
  return {value, at};
}

Value FactoredSum(OpBuilder& b, Location loc, const std::vector<DecodedTerm>& terms) {
  constexpr size_t kRun = 32;
  struct Run {
    Value a, c;
    bool subtract;
    int64_t scaleLog2;
    Value xv, x;  // fma chain of x v, sum of x
    size_t length = 0;
  };
  std::vector<Run> runs;
  std::map<std::tuple<const void*, const void*, bool, int64_t>, size_t> open;  // key -> runs index
  SmallVector<Value> sums;
  for (const DecodedTerm& t : terms) {
    if (!t.factored()) {
      sums.push_back(t.whole);
      continue;
    }
    auto key = std::make_tuple(t.a.getAsOpaquePointer(), t.c ? t.c.getAsOpaquePointer() : nullptr, t.subtract,
                               t.scaleLog2);
    auto it = open.find(key);
    if (it == open.end() || runs[it->second].length == kRun) {
      runs.push_back(Run{t.a, t.c, t.subtract, t.scaleLog2, Value(), Value()});
      it = open.insert_or_assign(key, runs.size() - 1).first;
    }
    Run& run = runs[it->second];
    run.xv = run.xv ? Value(math::FmaOp::create(b, loc, t.x, t.v, run.xv))
                    : Value(arith::MulFOp::create(b, loc, t.x, t.v));
    if (run.c) run.x = run.x ? Value(arith::AddFOp::create(b, loc, run.x, t.x)) : t.x;
    ++run.length;
  }
  // The runs of one (a, c, subtract), in order of their first term.
  struct Family {
    Value a, c;
    bool subtract;
    Value acc, x;
  };
  std::vector<Family> families;
  std::map<std::tuple<const void*, const void*, bool>, size_t> index;
  for (Run& run : runs) {
    auto key = std::make_tuple(run.a.getAsOpaquePointer(), run.c ? run.c.getAsOpaquePointer() : nullptr, run.subtract);
    auto [it, fresh] = index.try_emplace(key, families.size());
    if (fresh) families.push_back(Family{run.a, run.c, run.subtract, Value(), Value()});
    Family& f = families[it->second];
    Value factor = run.scaleLog2 == 0
                       ? Value()
                       : Value(arith::ConstantOp::create(b, loc, b.getF32FloatAttr(std::ldexp(1.0f, -run.scaleLog2))));
    if (!f.acc)
      f.acc = factor ? Value(arith::MulFOp::create(b, loc, run.xv, factor)) : run.xv;
    else
      f.acc = factor ? Value(math::FmaOp::create(b, loc, run.xv, factor, f.acc))
                     : Value(arith::AddFOp::create(b, loc, f.acc, run.xv));
    if (run.c) f.x = f.x ? Value(arith::AddFOp::create(b, loc, f.x, run.x)) : run.x;
  }
  for (Family& f : families) {
    Value scaled = arith::MulFOp::create(b, loc, f.a, f.acc);
    if (f.c) {
      Value offset = arith::MulFOp::create(b, loc, f.c, f.x);
      scaled = f.subtract ? Value(arith::SubFOp::create(b, loc, scaled, offset))
                          : Value(arith::AddFOp::create(b, loc, scaled, offset));
    }
    sums.push_back(scaled);
  }
  return SumTree(b, loc, std::move(sums));
}

}  // namespace hexir::cuda
