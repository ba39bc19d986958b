// The constants and the order of operations are ggml's quantize_row_q8_0 / q8_1 (x86 path:
// the scale 127 / amax as one division, round to nearest even, the sum from the integers
// before they are narrowed), so that the kernel's products are the ones llama.cpp computes.
#include "passes/codegen/CPUMatvecInt8Dot.h"

#include <algorithm>
#include <string>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace hexir::codegen {
using namespace mlir;

namespace {

constexpr int64_t kLanes = 8;

Value Index(OpBuilder& b, Location loc, int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
Value F32(OpBuilder& b, Location loc, float v) { return arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(v)); }

// f32 -> f16 -> f32 (nearest even): ggml stores the block's scale and sum as f16.
Value RoundToHalf(OpBuilder& b, Location loc, Value v) {
  Value half = arith::TruncFOp::create(b, loc, b.getF16Type(), v);
  return arith::ExtFOp::create(b, loc, b.getF32Type(), half);
}

// The block's |x| maximum as plain vmaxps steps: a NaN in x makes every output it reaches
// NaN whatever the scale, so the NaN-aware forms (a compare and a blend a step) buy nothing.
constexpr auto kNoNaN = arith::FastMathFlags::nnan;

// A loop over x's blocks (memref<B x N x f32>) at the builder's insertion point, which it
// leaves inside the loop's body: `xv` gets the block's N / `lanes` vectors, the result is
// the block's largest |x|.
Value ForEachBlockAbsMax(OpBuilder& b, Location loc, Value x, int64_t lanes, SmallVector<Value>& xv) {
  auto type = cast<MemRefType>(x.getType());
  VectorType vec = VectorType::get({lanes}, b.getF32Type());
  auto loop = scf::ForOp::create(b, loc, Index(b, loc, 0), Index(b, loc, type.getDimSize(0)), Index(b, loc, 1));
  b.setInsertionPoint(loop.getBody()->getTerminator());
  Value block = loop.getInductionVar();
  Value absMax;
  for (int64_t v = 0; v < type.getDimSize(1) / lanes; ++v) {
    xv.push_back(vector::LoadOp::create(b, loc, vec, x, ValueRange{block, Index(b, loc, v * lanes)}));
    Value abs = math::AbsFOp::create(b, loc, xv.back());
    absMax = v ? arith::MaxNumFOp::create(b, loc, absMax, abs, kNoNaN).getResult() : abs;
  }
  return vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXNUMF, absMax, kNoNaN);
}

}  // namespace

Int8Activations QuantizeActivations(OpBuilder& b, Location loc, Value x, bool withSums, Block& entry) {
  const int64_t blocks = cast<MemRefType>(x.getType()).getDimSize(0);
  Int8Activations out;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&entry);
    out.quants = memref::AllocaOp::create(b, loc, MemRefType::get({blocks, kInt8BlockElements}, b.getI8Type()));
    out.scales = memref::AllocaOp::create(b, loc, MemRefType::get({blocks}, b.getF32Type()));
    if (withSums) out.sums = memref::AllocaOp::create(b, loc, MemRefType::get({blocks}, b.getF32Type()));
  }
  VectorType f32x8 = VectorType::get({kLanes}, b.getF32Type());
  VectorType i32x8 = VectorType::get({kLanes}, b.getI32Type());
  VectorType i8x8 = VectorType::get({kLanes}, b.getI8Type());
  OpBuilder::InsertionGuard guard(b);
  SmallVector<Value> xv;
  Value amax = ForEachBlockAbsMax(b, loc, x, kLanes, xv);
  Value block = cast<scf::ForOp>(b.getInsertionBlock()->getParentOp()).getInductionVar();
  Value d = arith::DivFOp::create(b, loc, amax, F32(b, loc, 127.0f));
  Value nonZero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ONE, amax, F32(b, loc, 0.0f));
  Value inverse = arith::SelectOp::create(b, loc, nonZero, arith::DivFOp::create(b, loc, F32(b, loc, 127.0f), amax),
                                          F32(b, loc, 0.0f));
  Value inverseV = vector::BroadcastOp::create(b, loc, f32x8, inverse);
  Value intSum;
  for (int64_t v = 0; v < kInt8BlockElements / kLanes; ++v) {
    Value rounded = math::RoundEvenOp::create(b, loc, arith::MulFOp::create(b, loc, xv[v], inverseV));
    Value ints = arith::FPToSIOp::create(b, loc, i32x8, rounded);
    intSum = v ? arith::AddIOp::create(b, loc, intSum, ints).getResult() : ints;
    vector::StoreOp::create(b, loc, arith::TruncIOp::create(b, loc, i8x8, ints), out.quants,
                            ValueRange{block, Index(b, loc, v * kLanes)});
  }
  memref::StoreOp::create(b, loc, RoundToHalf(b, loc, d), out.scales, ValueRange{block});
  if (withSums) {
    Value sum = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, intSum);
    Value scaled = arith::MulFOp::create(b, loc, d, arith::SIToFPOp::create(b, loc, b.getF32Type(), sum));
    memref::StoreOp::create(b, loc, RoundToHalf(b, loc, scaled), out.sums, ValueRange{block});
  }
  return out;
}

SuperBlockActivations QuantizeSuperBlockActivations(OpBuilder& b, Location loc, Value x, Block& entry,
                                                    ArrayRef<int64_t> order) {
  const int64_t blocks = cast<MemRefType>(x.getType()).getDimSize(0);
  constexpr int64_t kWide = 16, kVectors = kSuperBlockElements / kWide;
  SuperBlockActivations out;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&entry);
    out.quants = memref::AllocaOp::create(b, loc, MemRefType::get({blocks, kSuperBlockElements}, b.getI8Type()));
    out.scales = memref::AllocaOp::create(b, loc, MemRefType::get({blocks}, b.getF32Type()));
    out.sums16 = memref::AllocaOp::create(b, loc, MemRefType::get({blocks, kVectors}, b.getI32Type()));
    out.sums32 = memref::AllocaOp::create(b, loc, MemRefType::get({blocks, kVectors / 2}, b.getI32Type()));
  }
  VectorType f32s = VectorType::get({kWide}, b.getF32Type());
  VectorType i32s = VectorType::get({kWide}, b.getI32Type());
  VectorType i8s = VectorType::get({kWide}, b.getI8Type());
  OpBuilder::InsertionGuard guard(b);
  SmallVector<Value> xv;
  Value amax = ForEachBlockAbsMax(b, loc, x, kWide, xv);
  Value block = cast<scf::ForOp>(b.getInsertionBlock()->getParentOp()).getInductionVar();
  Value nonZero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ONE, amax, F32(b, loc, 0.0f));
  Value scale = arith::DivFOp::create(b, loc, F32(b, loc, 127.0f), amax);
  Value inverse = arith::SelectOp::create(b, loc, nonZero, scale, F32(b, loc, 0.0f));
  Value d = arith::SelectOp::create(b, loc, nonZero, arith::DivFOp::create(b, loc, F32(b, loc, 1.0f), scale),
                                    F32(b, loc, 0.0f));
  Value inverseV = vector::BroadcastOp::create(b, loc, f32s, inverse);
  Value pairSum;
  for (int64_t v = 0; v < kVectors; ++v) {
    Value rounded = math::RoundEvenOp::create(b, loc, arith::MulFOp::create(b, loc, xv[v], inverseV));
    Value ints = arith::FPToSIOp::create(b, loc, i32s, rounded);
    // Group g = v * kWide / 32 goes to the slot that holds it in `order`.
    int64_t group = v * kWide / 32, slot = group;
    if (!order.empty()) slot = std::find(order.begin(), order.end(), group) - order.begin();
    vector::StoreOp::create(b, loc, arith::TruncIOp::create(b, loc, i8s, ints), out.quants,
                            ValueRange{block, Index(b, loc, slot * 32 + v * kWide % 32)});
    Value sum = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, ints);
    memref::StoreOp::create(b, loc, sum, out.sums16, ValueRange{block, Index(b, loc, v)});
    if (v % 2 == 0) {
      pairSum = sum;
    } else {
      memref::StoreOp::create(b, loc, arith::AddIOp::create(b, loc, pairSum, sum), out.sums32,
                              ValueRange{block, Index(b, loc, v / 2)});
    }
  }
  memref::StoreOp::create(b, loc, d, out.scales, ValueRange{block});
  return out;
}

namespace {

// The declaration standing for LLVM intrinsic `name` carries its name in this attribute.
constexpr char kDeferredIntrinsicAttr[] = "hexir.llvm_intrinsic";

// A call of LLVM intrinsic `name`, as a func.call of a private declaration of the kernel's
// module until LowerDeferredIntrinsicCalls (buffer-deallocation refuses llvm.call_intrinsic,
// an op with unknown memory effects, while it accepts a call without memrefs).
Value CallX86(OpBuilder& b, Location loc, VectorType result, StringRef name, ValueRange args) {
  auto module = b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  std::string symbol = "hexir_" + name.str();
  std::replace(symbol.begin(), symbol.end(), '.', '_');
  auto decl = module.lookupSymbol<func::FuncOp>(symbol);
  if (!decl) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    decl = func::FuncOp::create(b, loc, symbol, b.getFunctionType(args.getTypes(), {result}));
    decl.setPrivate();
    decl->setAttr(kDeferredIntrinsicAttr, b.getStringAttr(name));
  }
  return func::CallOp::create(b, loc, decl, args).getResult(0);
}

// ggml's AVX2 mul_sum_i8_pairs: |w| (unsigned) times q with w's sign, adjacent pairs summed
// to i16 (vpmaddubsw: |pair| <= 2 * 128 * 127, never saturates), then adjacent i16 pairs to
// i32 (vpmaddwd with ones): lane i holds products 4i .. 4i + 3. Five instructions.
Value Int8DotLanesAvx2(OpBuilder& b, Location loc, Value w, Value q) {
  VectorType i8x32 = VectorType::get({kInt8BlockElements}, b.getI8Type());
  VectorType i16x16 = VectorType::get({kInt8BlockElements / 2}, b.getIntegerType(16));
  VectorType i32x8 = VectorType::get({kLanes}, b.getI32Type());
  Value magnitude = CallX86(b, loc, i8x32, "llvm.x86.avx2.psign.b", {w, w});
  Value signedQ = CallX86(b, loc, i8x32, "llvm.x86.avx2.psign.b", {q, w});
  Value pairs = CallX86(b, loc, i16x16, "llvm.x86.avx2.pmadd.ub.sw", {magnitude, signedQ});
  Value ones = arith::ConstantOp::create(b, loc, i16x16, DenseElementsAttr::get(i16x16, int16_t(1)));
  return CallX86(b, loc, i32x8, "llvm.x86.avx2.pmadd.wd", {pairs, ones});
}

}  // namespace

Value Int8DotLanes(OpBuilder& b, Location loc, Value w, Value q, bool x86Avx2) {
  if (x86Avx2) return Int8DotLanesAvx2(b, loc, w, q);
  // Products of i8 widened to i32 (|w * q| <= 128 * 127), then twice the sum of even and
  // odd lanes: x86's backend matches the first step to pmaddwd (vpmovsxbw + vpmaddwd, 16
  // products per instruction) and the second to phaddd + a permute; lane i ends up with
  // the products 4i .. 4i + 3, ggml's grouping.
  VectorType i32x32 = VectorType::get({kInt8BlockElements}, b.getI32Type());
  Value product = arith::MulIOp::create(b, loc, arith::ExtSIOp::create(b, loc, i32x32, w),
                                        arith::ExtSIOp::create(b, loc, i32x32, q));
  auto pairSums = [&](Value v, int64_t count) {
    SmallVector<int64_t> even, odd;
    for (int64_t i = 0; i < count; ++i) even.push_back(2 * i), odd.push_back(2 * i + 1);
    return arith::AddIOp::create(b, loc, vector::ShuffleOp::create(b, loc, v, v, even),
                                 vector::ShuffleOp::create(b, loc, v, v, odd))
        .getResult();
  };
  return pairSums(pairSums(product, kInt8BlockElements / 2), kLanes);
}

// |w| as unsigned (|-128| = 128) times q with w's sign: the products of vpsignb's form, on
// 512-bit registers (AVX512BW has no vpsignb).
Value Int8DotLanesAvx512(OpBuilder& b, Location loc, Value w, Value q, Value negQ, bool vnni) {
  auto bytes = cast<VectorType>(w.getType());
  Value zero = arith::ConstantOp::create(b, loc, bytes, DenseElementsAttr::get(bytes, int8_t(0)));
  Value negative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, w, zero);
  Value signedQ = arith::SelectOp::create(b, loc, negative, negQ, q);
  return Int8DotLanesUnsignedAvx512(b, loc, math::AbsIOp::create(b, loc, w), signedQ, vnni);
}

Value Int8DotLanesUnsignedAvx512(OpBuilder& b, Location loc, Value u, Value q, bool vnni, Value acc) {
  auto bytes = cast<VectorType>(u.getType());
  VectorType i16s = VectorType::get({bytes.getNumElements() / 2}, b.getIntegerType(16));
  VectorType i32s = VectorType::get({bytes.getNumElements() / 4}, b.getI32Type());
  if (vnni) {
    if (!acc) acc = arith::ConstantOp::create(b, loc, i32s, DenseElementsAttr::get(i32s, int32_t(0)));
    return CallX86(b, loc, i32s, "llvm.x86.avx512.vpdpbusd.512", {acc, u, q});
  }
  Value pairs = CallX86(b, loc, i16s, "llvm.x86.avx512.pmaddubs.w.512", {u, q});
  Value ones = arith::ConstantOp::create(b, loc, i16s, DenseElementsAttr::get(i16s, int16_t(1)));
  Value lanes = CallX86(b, loc, i32s, "llvm.x86.avx512.pmaddw.d.512", {pairs, ones});
  return acc ? arith::AddIOp::create(b, loc, acc, lanes).getResult() : lanes;
}

Value Int8ScaledDotLanesAvx512(OpBuilder& b, Location loc, Value u, Value q, Value s, bool vnni, Value acc) {
  auto bytes = cast<VectorType>(u.getType());
  VectorType i16s = VectorType::get({bytes.getNumElements() / 2}, b.getIntegerType(16));
  VectorType i32s = VectorType::get({bytes.getNumElements() / 4}, b.getI32Type());
  Value pairs = CallX86(b, loc, i16s, "llvm.x86.avx512.pmaddubs.w.512", {u, q});
  if (vnni) return CallX86(b, loc, i32s, "llvm.x86.avx512.vpdpwssd.512", {acc, pairs, s});
  return arith::AddIOp::create(b, loc, acc, CallX86(b, loc, i32s, "llvm.x86.avx512.pmaddw.d.512", {pairs, s}));
}

void LowerDeferredIntrinsicCalls(ModuleOp module) {
  SmallVector<func::CallOp> calls;
  module.walk([&](func::CallOp call) {
    auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
    if (callee && callee->hasAttr(kDeferredIntrinsicAttr)) calls.push_back(call);
  });
  for (func::CallOp call : calls) {
    OpBuilder b(call);
    auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
    auto name = callee->getAttrOfType<StringAttr>(kDeferredIntrinsicAttr);
    auto intrinsic = LLVM::CallIntrinsicOp::create(b, call.getLoc(), call.getResultTypes()[0], name, call.getOperands());
    call.replaceAllUsesWith(intrinsic->getResults());
    call.erase();
  }
  for (func::FuncOp decl : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
    if (decl->hasAttr(kDeferredIntrinsicAttr)) decl.erase();
}

}  // namespace hexir::codegen
