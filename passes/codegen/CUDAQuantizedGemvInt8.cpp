// The quantized GEMV's 8-bit activations (CUDAQuantizedGemvInt8.h says what and why).
#include "passes/codegen/CUDAQuantizedGemvInt8.h"

#include <map>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "passes/codegen/CUDAGemvDecode.h"

namespace hexir::cuda {
using namespace mlir;

namespace {
// 1.5 x 2^23 as f32 and its bits: v + it, as bits, less the bits, is v rounded to the
// nearest integer (ties to even) for |v| < 2^22, in one f32 add and one integer add.
constexpr float kRoundValue = 12582912.0f;
constexpr int32_t kRoundBits = 0x4B400000;

struct Emit {
  OpBuilder& b;
  Location loc;
  Value i32(int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v); }
  Value f32(float v) { return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v)); }
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value andi(Value x, int64_t m) { return arith::AndIOp::create(b, loc, x, i32(m)); }
  Value ori(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value shr(Value x, int64_t n) { return n ? Value(arith::ShRUIOp::create(b, loc, x, i32(n))) : x; }
  Value shl(Value x, int64_t n) { return n ? Value(arith::ShLIOp::create(b, loc, x, i32(n))) : x; }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value shuffleXor(Value v, int32_t offset) {
    return gpu::ShuffleOp::create(b, loc, v, offset, 32, gpu::ShuffleMode::XOR).getResult(0);
  }
  Value asF32(Value i) { return arith::BitcastOp::create(b, loc, b.getF32Type(), i); }
  Value asI32(Value f) { return arith::BitcastOp::create(b, loc, b.getI32Type(), f); }
  // The i32 `w` as the 4 bytes dp4a takes.
  Value bytes4(Value w) {
    Value one = vector::BroadcastOp::create(b, loc, VectorType::get({1}, b.getI32Type()), w);
    return vector::BitCastOp::create(b, loc, VectorType::get({4}, b.getI8Type()), one);
  }
};

// A group's weight bytes, read as words, halves and bytes from its loaded vectors (each of
// `align` >= 4 bytes); words and halves are made once per offset.
class GroupBytes {
 public:
  GroupBytes(Emit& e, ValueRange loads, int64_t align) : e(e), loads(loads), align(align) {}

  // The little-endian u32 at byte `o` (even): one aligned word, or two funnel-shifted.
  Value word(int64_t o) {
    Value& w = words[o];
    if (w) return w;
    if (o % 4 == 0) return w = aligned(o / 4);
    w = e.ori(e.shr(aligned(o / 4), 8 * (o % 4)), e.shl(aligned(o / 4 + 1), 32 - 8 * (o % 4)));
    return w;
  }
  // The little-endian f16 at byte `o` (even), as f32.
  Value half(int64_t o) {
    Value& h = halves[o];
    if (h) return h;
    Value bits = e.shr(aligned(o / 4), 8 * (o % 4));
    Value i16 = arith::TruncIOp::create(e.b, e.loc, e.b.getI16Type(), bits);
    Value f16 = arith::BitcastOp::create(e.b, e.loc, e.b.getF16Type(), i16);
    return h = arith::ExtFOp::create(e.b, e.loc, e.b.getF32Type(), f16);
  }
  // Byte `o` zero-extended (an i32).
  Value byte(int64_t o) { return e.andi(e.shr(aligned(o / 4), 8 * (o % 4)), 255); }

 private:
  Value aligned(int64_t i) {  // word i of the group
    Value& w = alignedWords[i];
    if (w) return w;
    const int64_t perLoad = align / 4;
    Value load = loads[i / perLoad];
    auto type = VectorType::get({perLoad}, e.b.getI32Type());
    Value asWords = vector::BitCastOp::create(e.b, e.loc, type, load);
    return w = vector::ExtractOp::create(e.b, e.loc, asWords, i % perLoad);
  }
  Emit& e;
  ValueRange loads;
  int64_t align;
  std::map<int64_t, Value> words, halves, alignedWords;
};

// One 32-value sub-block of weights: value j = scale * u_j + offset (offset null: 0), u's
// bytes in 8 words in x's order.
struct SubBlock {
  SmallVector<Value, 8> quants;
  Value scale, offset;
};
}  // namespace

struct Int8GemvFormat {
  llvm::StringLiteral name;
  int64_t blockValues, blockBytes;
  bool signedQuants;  // q8_0: the weights' bytes are signed
  // Sub-block `sub` of the block at byte `base` of the group.
  SubBlock (*subBlock)(Emit& e, GroupBytes& g, int64_t base, int64_t sub);
};

namespace {
constexpr int64_t kNibbles = 0x0F0F0F0F;

// The 16 bytes of nibbles at `at`: value j < 16 in the low nibble of byte j, value 16 + j in
// its high one (ggml's q4_0, q4_1, q5_0).
void Nibbles(Emit& e, GroupBytes& g, int64_t at, SubBlock& s) {
  for (int64_t k = 0; k < 4; ++k) s.quants.push_back(e.andi(g.word(at + 4 * k), kNibbles));
  for (int64_t k = 0; k < 4; ++k) s.quants.push_back(e.andi(e.shr(g.word(at + 4 * k), 4), kNibbles));
}

// Bits [4k, 4k + 4) of `bits` moved to bit 4 of bytes 0-3: a fifth bit for 4 nibbles.
Value FifthBits(Emit& e, Value bits, int64_t k) {
  Value t = e.shr(bits, 4 * k);
  Value out = e.shl(e.andi(t, 1), 4);
  out = e.ori(out, e.shl(e.andi(t, 2), 11));
  out = e.ori(out, e.shl(e.andi(t, 4), 18));
  return e.ori(out, e.shl(e.andi(t, 8), 25));
}

SubBlock Q4_0(Emit& e, GroupBytes& g, int64_t base, int64_t) {
  SubBlock s;
  Nibbles(e, g, base + 2, s);
  s.scale = g.half(base);
  s.offset = e.fmul(s.scale, e.f32(-8.0f));
  return s;
}

SubBlock Q4_1(Emit& e, GroupBytes& g, int64_t base, int64_t) {
  SubBlock s;
  Nibbles(e, g, base + 4, s);
  s.scale = g.half(base);
  s.offset = g.half(base + 2);
  return s;
}

SubBlock Q5_0(Emit& e, GroupBytes& g, int64_t base, int64_t) {
  SubBlock s;
  Nibbles(e, g, base + 6, s);
  Value high = g.word(base + 2);  // bit j: value j's fifth bit
  for (int64_t k = 0; k < 8; ++k) s.quants[k] = e.ori(s.quants[k], FifthBits(e, high, k));
  s.scale = g.half(base);
  s.offset = e.fmul(s.scale, e.f32(-16.0f));
  return s;
}

SubBlock Q8_0(Emit& e, GroupBytes& g, int64_t base, int64_t) {
  SubBlock s;
  for (int64_t k = 0; k < 8; ++k) s.quants.push_back(g.word(base + 2 + 4 * k));
  s.scale = g.half(base);
  return s;
}

// The K-quants' 6-bit scale and min of sub-block j (ggml's get_scale_min_k4) from the 12
// bytes at `at`, as small integers (i32).
std::pair<Value, Value> ScaleMinK4(Emit& e, GroupBytes& g, int64_t at, int64_t j) {
  if (j < 4) return {e.andi(g.byte(at + j), 63), e.andi(g.byte(at + j + 4), 63)};
  Value sc = e.ori(e.andi(g.byte(at + j + 4), 15), e.shl(e.shr(g.byte(at + j - 4), 6), 4));
  Value m = e.ori(e.shr(g.byte(at + j + 4), 4), e.shl(e.shr(g.byte(at + j), 6), 4));
  return {sc, m};
}

// q4_k / q5_k: d, dmin, 12 bytes of scales; sub-block `sub` (of 8) takes the low (even) or
// high (odd) nibbles of the 32 bytes of chunk sub / 2 at `nibbles` (+ q5_k's fifth bits: bit
// `sub` of byte j of the 32 at `fifth`).
SubBlock KQuant(Emit& e, GroupBytes& g, int64_t base, int64_t sub, int64_t nibbles, int64_t fifth) {
  SubBlock s;
  const int64_t chunk = base + nibbles + 32 * (sub / 2);
  for (int64_t k = 0; k < 8; ++k) {
    Value q = e.andi(e.shr(g.word(chunk + 4 * k), 4 * (sub % 2)), kNibbles);
    if (fifth >= 0) q = e.ori(q, e.shl(e.andi(e.shr(g.word(base + fifth + 4 * k), sub), 0x01010101), 4));
    s.quants.push_back(q);
  }
  auto [sc, m] = ScaleMinK4(e, g, base + 4, sub);
  s.scale = e.fmul(g.half(base), SmallIntToF32(e.b, e.loc, sc, /*isSigned=*/false));
  s.offset = e.fmul(e.fmul(g.half(base + 2), SmallIntToF32(e.b, e.loc, m, false)), e.f32(-1.0f));
  return s;
}
SubBlock Q4_K(Emit& e, GroupBytes& g, int64_t base, int64_t sub) { return KQuant(e, g, base, sub, 16, -1); }
SubBlock Q5_K(Emit& e, GroupBytes& g, int64_t base, int64_t sub) { return KQuant(e, g, base, sub, 48, 16); }

const Int8GemvFormat kFormats[] = {
    {"q4_0", 32, 18, false, Q4_0}, {"q4_1", 32, 20, false, Q4_1},  {"q5_0", 32, 22, false, Q5_0},
    {"q8_0", 32, 34, true, Q8_0},  {"q4_k", 256, 144, false, Q4_K}, {"q5_k", 256, 176, false, Q5_K},
};
}  // namespace

const Int8GemvFormat* FindInt8GemvFormat(llvm::StringRef name, int64_t blockValues, int64_t blockBytes) {
  for (const Int8GemvFormat& f : kFormats)
    if (name == f.name) return f.blockValues == blockValues && f.blockBytes == blockBytes ? &f : nullptr;
  return nullptr;
}

void StageInt8X(OpBuilder& b, Location loc, const QuantizedGemv& s, Value xShared, Value tid,
                llvm::function_ref<SmallVector<Value>(Value at)> eight) {
  Emit e{b, loc};
  const int64_t K = s.blocks * s.blockValues, tasks = K / 8, T = s.threads();
  const int64_t iterations = (tasks + T - 1) / T;
  const int64_t unroll = std::min<int64_t>(iterations, 8);
  const int64_t chunks = (iterations + unroll - 1) / unroll;
  const int64_t groupWords = s.int8GroupBytes() / 4, qWords = s.groupValues() / 4;
  // Iterations [first, first + unroll) of the thread: the loads of all, then each quantized.
  auto chunk = [&](Value first) {
    SmallVector<std::pair<Value, SmallVector<Value>>> loaded;  // (task, values)
    for (int64_t i = 0; i < unroll; ++i) {
      Value task = e.add(e.add(first, e.idx(i * T)), tid);
      Value at = e.mul(arith::MinUIOp::create(b, loc, task, e.idx(tasks - 1)), e.idx(8));
      loaded.push_back({task, eight(at)});
    }
    for (auto& [task, values] : loaded) {
      // |x|'s largest bits (non-negative f32s order as integers; a NaN's bits exceed all).
      Value amax;
      SmallVector<Value> bits;
      for (Value v : values) {
        bits.push_back(e.asI32(v));
        Value magnitude = e.andi(bits.back(), 0x7FFFFFFF);
        amax = amax ? Value(arith::MaxUIOp::create(b, loc, amax, magnitude)) : magnitude;
      }
      for (int32_t offset : {1, 2}) amax = arith::MaxUIOp::create(b, loc, amax, e.shuffleXor(amax, offset));
      Value d = e.fmul(e.asF32(amax), e.f32(1.0f / 127.0f));
      Value zero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, d, e.f32(0.0f));
      Value inverse = arith::SelectOp::create(b, loc, zero, e.f32(0.0f),
                                              arith::DivFOp::create(b, loc, e.f32(1.0f), d));
      // q = x inverse rounded once (an fma with 1.5 x 2^23): the sum's low byte is q's.
      SmallVector<Value> quants;
      Value sum;
      for (Value v : values) {
        Value rounded = e.asI32(math::FmaOp::create(b, loc, v, inverse, e.f32(kRoundValue)));
        sum = sum ? e.add(sum, rounded) : rounded;
        quants.push_back(arith::TruncIOp::create(b, loc, b.getI8Type(), rounded));
      }
      sum = arith::SubIOp::create(b, loc, sum, e.i32(int32_t(8u * uint32_t(kRoundBits))));  // mod 2^32
      for (int32_t offset : {1, 2}) sum = e.add(sum, e.shuffleXor(sum, offset));
      Value packed = vector::BitCastOp::create(
          b, loc, VectorType::get({2}, b.getI32Type()),
          vector::FromElementsOp::create(b, loc, VectorType::get({8}, b.getI8Type()), quants));
      Value ds = vector::FromElementsOp::create(
          b, loc, VectorType::get({2}, b.getI32Type()),
          ValueRange{e.asI32(d), e.asI32(e.fmul(d, SmallIntToF32(b, loc, sum, /*isSigned=*/true)))});
      // Stored where the task is one (the last iterations' clamped ones are not).
      OpBuilder::InsertionGuard guard(b);
      Value real = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, task, e.idx(tasks));
      auto ifReal = scf::IfOp::create(b, loc, real, /*withElseRegion=*/false);
      b.setInsertionPoint(ifReal.thenBlock()->getTerminator());
      Value at = e.mul(task, e.idx(8));
      Value group = arith::DivUIOp::create(b, loc, at, e.idx(s.groupValues()));
      Value within = arith::RemUIOp::create(b, loc, at, e.idx(s.groupValues()));
      Value groupStart = e.mul(group, e.idx(groupWords));
      vector::StoreOp::create(b, loc, packed, xShared,
                              ValueRange{e.add(groupStart, arith::DivUIOp::create(b, loc, within, e.idx(4)))}, false,
                              llvm::MaybeAlign(8));
      Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          arith::RemUIOp::create(b, loc, task, e.idx(4)), e.idx(0));
      auto ifFirst = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
      b.setInsertionPoint(ifFirst.thenBlock()->getTerminator());
      Value block = arith::DivUIOp::create(b, loc, within, e.idx(kInt8XBlock));
      Value dsAt = e.add(e.add(groupStart, e.idx(qWords)), e.mul(block, e.idx(2)));
      vector::StoreOp::create(b, loc, ds, xShared, ValueRange{dsAt}, false, llvm::MaybeAlign(8));
    }
  };
  if (chunks == 1) {
    chunk(e.idx(0));
    return;
  }
  auto loop = scf::ForOp::create(b, loc, e.idx(0), e.idx(chunks * unroll * T), e.idx(unroll * T));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  chunk(loop.getInductionVar());
}

Int8XGroup LoadInt8XGroup(OpBuilder& b, Location loc, const QuantizedGemv& s, Value xShared, Value u) {
  Emit e{b, loc};
  Int8XGroup x;
  const int64_t blocks = s.groupValues() / kInt8XBlock;
  Value start = e.mul(u, e.idx(s.int8GroupBytes() / 4));
  auto load = [&](int64_t word, int64_t n) {
    return vector::LoadOp::create(b, loc, VectorType::get({n}, b.getI32Type()), xShared,
                                  ValueRange{e.add(start, e.idx(word))}, false, llvm::MaybeAlign(4 * n))
        .getResult();
  };
  for (int64_t w = 0; w < s.groupValues() / 4; w += 4) {
    Value four = load(w, 4);
    for (int64_t i = 0; i < 4; ++i) x.words.push_back(vector::ExtractOp::create(b, loc, four, i));
  }
  const int64_t dsWord = s.groupValues() / 4;
  for (int64_t i = 0; i < blocks; i += 2) {
    const int64_t n = i + 1 < blocks ? 4 : 2;
    Value ds = load(dsWord + 2 * i, n);
    for (int64_t j = 0; j < n; j += 2) {
      x.d.push_back(e.asF32(vector::ExtractOp::create(b, loc, ds, j)));
      x.sum.push_back(e.asF32(vector::ExtractOp::create(b, loc, ds, j + 1)));
    }
  }
  return x;
}

Value Int8GroupSum(OpBuilder& b, Location loc, const Int8GemvFormat& format, const QuantizedGemv& s,
                   ValueRange loads, const Int8XGroup& x) {
  Emit e{b, loc};
  GroupBytes g(e, loads, s.align);
  auto typeAttr = [&](NVVM::DotAccumulateType t) { return NVVM::DotAccumulateTypeAttr::get(b.getContext(), t); };
  const auto weightType = typeAttr(format.signedQuants ? NVVM::DotAccumulateType::SIGNED : NVVM::DotAccumulateType::UNSIGNED);
  const auto signedX = typeAttr(NVVM::DotAccumulateType::SIGNED);
  const int64_t subBlocks = format.blockValues / kInt8XBlock;
  SmallVector<Value> partials;
  for (int64_t block = 0; block < s.groupBlocks; ++block)
    for (int64_t sub = 0; sub < subBlocks; ++sub) {
      SubBlock w = format.subBlock(e, g, block * format.blockBytes, sub);
      const int64_t xBlock = block * subBlocks + sub;
      Value dot = e.i32(0);
      for (int64_t k = 0; k < 8; ++k)
        dot = NVVM::DotAccumulate4WayOp::create(b, loc, b.getI32Type(), e.bytes4(w.quants[k]), weightType,
                                                e.bytes4(x.words[8 * xBlock + k]), signedX, dot);
      // |dot| <= 32 x 255 x 128 < 2^22: converted without the conversion unit.
      Value term = e.fmul(w.scale, e.fmul(x.d[xBlock], SmallIntToF32(b, loc, dot, /*isSigned=*/true)));
      if (w.offset) term = e.fadd(term, e.fmul(w.offset, x.sum[xBlock]));
      partials.push_back(term);
    }
  while (partials.size() > 1) {  // a pairwise tree: short dependence chains
    SmallVector<Value> next;
    for (size_t i = 0; i + 1 < partials.size(); i += 2) next.push_back(e.fadd(partials[i], partials[i + 1]));
    if (partials.size() % 2) next.push_back(partials.back());
    partials = std::move(next);
  }
  return partials.front();
}

}  // namespace hexir::cuda
