// The block layouts follow ggml's dequantize_row_<type> (ggml-quants.c): the same byte and
// bit positions as compiler/importers/llama/BlockDecode.cc's closed forms, here per vector of
// eight values with every offset static.
#include "passes/codegen/CPUMatvecBlockFormats.h"

#include <algorithm>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace hexir::codegen {
using namespace mlir;

namespace {

Value Index(OpBuilder& b, Location loc, int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

}  // namespace

Value BlockReader::Bytes(int64_t offset, int64_t count) {
  Value at = arith::AddIOp::create(b, loc, base, Index(b, loc, offset));
  return vector::LoadOp::create(b, loc, VectorType::get({count}, b.getI8Type()), weights,
                                ValueRange{row, at});
}

Value BlockReader::Byte(int64_t offset) {
  Value at = arith::AddIOp::create(b, loc, base, Index(b, loc, offset));
  Value byte = memref::LoadOp::create(b, loc, weights, ValueRange{row, at});
  return arith::ExtUIOp::create(b, loc, b.getI32Type(), byte);
}

Value BlockReader::Half(int64_t offset) {
  Value bits = vector::BitCastOp::create(b, loc, VectorType::get({1}, b.getF16Type()), Bytes(offset, 2));
  Value h = vector::ExtractOp::create(b, loc, bits, ArrayRef<int64_t>{0});
  return arith::ExtFOp::create(b, loc, b.getF32Type(), h);
}

Value BlockReader::Word(int64_t offset) {
  Value bits = vector::BitCastOp::create(b, loc, VectorType::get({1}, b.getI32Type()), Bytes(offset, 4));
  return vector::ExtractOp::create(b, loc, bits, ArrayRef<int64_t>{0});
}

namespace {

// Integer vector<8 x i32> helpers.
struct Ints {
  BlockReader& r;
  VectorType type() { return VectorType::get({kBlockLanes}, r.b.getI32Type()); }
  Value splat(int64_t v) {
    return arith::ConstantOp::create(r.b, r.loc, type(), DenseElementsAttr::get(type(), int32_t(v)));
  }
  // Eight bytes at `offset`, zero-extended.
  Value bytes(int64_t offset) { return arith::ExtUIOp::create(r.b, r.loc, type(), r.Bytes(offset, kBlockLanes)); }
  Value andi(Value a, int64_t m) { return arith::AndIOp::create(r.b, r.loc, a, splat(m)); }
  Value shr(Value a, int64_t s) { return s ? arith::ShRUIOp::create(r.b, r.loc, a, splat(s)).getResult() : a; }
  Value shl(Value a, int64_t s) { return s ? arith::ShLIOp::create(r.b, r.loc, a, splat(s)).getResult() : a; }
  Value ori(Value a, Value c) { return arith::OrIOp::create(r.b, r.loc, a, c); }
  Value sub(Value a, int64_t v) { return v ? arith::SubIOp::create(r.b, r.loc, a, splat(v)).getResult() : a; }
  Value toF32(Value a) {
    return arith::SIToFPOp::create(r.b, r.loc, VectorType::get({kBlockLanes}, r.b.getF32Type()), a);
  }
  // The low (high = false) or high nibbles of eight bytes at `offset`.
  Value nibbles(int64_t offset, bool high) { return high ? shr(bytes(offset), 4) : andi(bytes(offset), 15); }
};

// Scalar i32 helpers for the K-quants' packed scales.
Value ScalarI32(BlockReader& r, int64_t v) { return arith::ConstantIntOp::create(r.b, r.loc, r.b.getI32Type(), v); }
Value ToF32(BlockReader& r, Value i) { return arith::SIToFPOp::create(r.b, r.loc, r.b.getF32Type(), i); }
Value MulF(BlockReader& r, Value a, Value c) { return arith::MulFOp::create(r.b, r.loc, a, c); }

// The 32 integers of a 32-value block as vector<32 x i8> (the int8 dot's weights).
struct Bytes32 {
  BlockReader& r;
  VectorType type(int64_t n = 32) { return VectorType::get({n}, r.b.getI8Type()); }
  Value splat(int8_t v, int64_t n = 32) {
    return arith::ConstantOp::create(r.b, r.loc, type(n), DenseElementsAttr::get(type(n), v));
  }
  // Low nibbles of the 16 bytes at `offset` (values 0..15), then their high nibbles (16..31).
  Value nibbles(int64_t offset) { return lowThenHigh(r.Bytes(offset, 16)); }
  // The low nibbles of `bytes` (vector<n x i8>), then their high nibbles: vector<2n x i8>.
  Value lowThenHigh(Value bytes) {
    int64_t n = cast<VectorType>(bytes.getType()).getNumElements();
    Value low = arith::AndIOp::create(r.b, r.loc, bytes, splat(15, n));
    Value high = arith::ShRUIOp::create(r.b, r.loc, bytes, splat(4, n));
    SmallVector<int64_t> both;
    for (int64_t i = 0; i < 2 * n; ++i) both.push_back(i);
    return vector::ShuffleOp::create(r.b, r.loc, low, high, both);
  }
};

// q8_0: d (f16) at 0, 32 signed bytes at 2.
std::pair<Value, Value> Q8_0Scale(BlockReader& r, int64_t) { return {r.Half(0), Value()}; }
Value Q8_0Quants(BlockReader& r, int64_t v) {
  Value q = arith::ExtSIOp::create(r.b, r.loc, Ints{r}.type(), r.Bytes(2 + 8 * v, kBlockLanes));
  return Ints{r}.toF32(q);
}
Value Q8_0Int8(BlockReader& r) { return r.Bytes(2, 32); }

// q4_0: d at 0, 16 bytes at 2: value j < 16 is the low nibble of byte j, value j + 16 its
// high nibble; q = nibble - 8.
std::pair<Value, Value> Q4_0Scale(BlockReader& r, int64_t) { return {r.Half(0), Value()}; }
Value Q4_0Quants(BlockReader& r, int64_t v) {
  Ints i{r};
  return i.toF32(i.sub(i.nibbles(2 + 8 * (v & 1), v >= 2), 8));
}
Value Q4_0Int8(BlockReader& r) { return Bytes32{r}.nibbles(2); }  // q = u - 8
// Both blocks' 16 bytes of nibbles at `offset` of each block, picked from `pair` (vector<64
// x i8>, the blocks from byte 0) twice over, then the first copy's low nibbles and the
// second's high ones: one byte permute (vpermb), a shift of the upper 32 bytes by 4 (as
// 16-bit lanes: vpsrlvw) and a mask.
Value NibblePair(OpBuilder& b, Location loc, Value pair, int64_t offset, int64_t blockBytes) {
  SmallVector<int64_t> picks;
  for (int64_t copy = 0; copy < 2; ++copy)
    for (int64_t block = 0; block < 2; ++block)
      for (int64_t i = 0; i < 16; ++i) picks.push_back(block * blockBytes + offset + i);
  Value both = vector::ShuffleOp::create(b, loc, pair, pair, picks);
  VectorType words = VectorType::get({32}, b.getIntegerType(16)), bytes = VectorType::get({64}, b.getI8Type());
  SmallVector<int16_t> shifts(32, 0);
  std::fill(shifts.begin() + 16, shifts.end(), int16_t(4));
  Value shifted = arith::ShRUIOp::create(
      b, loc, vector::BitCastOp::create(b, loc, words, both),
      arith::ConstantOp::create(b, loc, words, DenseElementsAttr::get(words, ArrayRef<int16_t>(shifts))));
  return arith::AndIOp::create(b, loc, vector::BitCastOp::create(b, loc, bytes, shifted),
                               arith::ConstantOp::create(b, loc, bytes, DenseElementsAttr::get(bytes, int8_t(15))));
}
Value Q4_0Int8Pair(OpBuilder& b, Location loc, Value pair) { return NibblePair(b, loc, pair, 2, 18); }

// q4_1: d at 0, m at 2, nibbles as q4_0 at 4; value = d * q + m.
std::pair<Value, Value> Q4_1ScaleMin(BlockReader& r, int64_t) { return {r.Half(0), r.Half(2)}; }
Value Q4_1Quants(BlockReader& r, int64_t v) {
  Ints i{r};
  return i.toF32(i.nibbles(4 + 8 * (v & 1), v >= 2));
}
Value Q4_1Int8(BlockReader& r) { return Bytes32{r}.nibbles(4); }
Value Q4_1Int8Pair(OpBuilder& b, Location loc, Value pair) { return NibblePair(b, loc, pair, 4, 20); }

// q5_0: d at 0, qh (u32) at 2, nibbles as q4_0 at 6; value e's fifth bit is bit e of qh;
// q = (nibble | bit << 4) - 16.
std::pair<Value, Value> Q5_0Scale(BlockReader& r, int64_t) { return {r.Half(0), Value()}; }
Value Q5_0Quants(BlockReader& r, int64_t v) {
  Ints i{r};
  Value qh = vector::BroadcastOp::create(r.b, r.loc, i.type(), r.Word(2));
  SmallVector<int32_t> shifts;
  for (int64_t l = 0; l < kBlockLanes; ++l) shifts.push_back(int32_t(8 * v + l));
  Value shift = arith::ConstantOp::create(r.b, r.loc, i.type(), DenseElementsAttr::get(i.type(), ArrayRef<int32_t>(shifts)));
  Value bit = i.andi(arith::ShRUIOp::create(r.b, r.loc, qh, shift), 1);
  return i.toF32(i.sub(i.ori(i.nibbles(6 + 8 * (v & 1), v >= 2), i.shl(bit, 4)), 16));
}
// Value j's fifth bit: bit j % 8 of qh's byte j / 8, spread to one byte per value.
Value Q5_0Int8(BlockReader& r) {
  Bytes32 q{r};
  Value qh = r.Bytes(2, 4);
  SmallVector<int64_t> spread;
  SmallVector<int8_t> bits;
  for (int64_t j = 0; j < 32; ++j) spread.push_back(j / 8), bits.push_back(int8_t(1 << (j % 8)));
  Value each = vector::ShuffleOp::create(r.b, r.loc, qh, qh, spread);
  Value mask = arith::ConstantOp::create(r.b, r.loc, q.type(), DenseElementsAttr::get(q.type(), ArrayRef<int8_t>(bits)));
  Value set = arith::CmpIOp::create(r.b, r.loc, arith::CmpIPredicate::ne, arith::AndIOp::create(r.b, r.loc, each, mask),
                                    q.splat(0));
  Value fifth = arith::SelectOp::create(r.b, r.loc, set, q.splat(16), q.splat(0));
  return arith::OrIOp::create(r.b, r.loc, q.nibbles(6), fifth);  // q = u - 16
}

// q4_k / q5_k: d at 0, dmin at 2, 12 bytes of 6-bit scales and mins at 4 (ggml's
// get_scale_min_k4): group s < 4: sc = q[s] & 63, m = q[s + 4] & 63; s >= 4:
// sc = (q[s + 4] & 15) | (q[s - 4] >> 6) << 4, m = (q[s + 4] >> 4) | (q[s] >> 6) << 4.
// value = d * sc * q - dmin * m.
std::pair<Value, Value> KScaleMin(BlockReader& r, int64_t s) {
  auto andi = [&](Value a, int64_t m) { return arith::AndIOp::create(r.b, r.loc, a, ScalarI32(r, m)).getResult(); };
  auto shr = [&](Value a, int64_t n) { return arith::ShRUIOp::create(r.b, r.loc, a, ScalarI32(r, n)).getResult(); };
  auto shl = [&](Value a, int64_t n) { return arith::ShLIOp::create(r.b, r.loc, a, ScalarI32(r, n)).getResult(); };
  auto ori = [&](Value a, Value c) { return arith::OrIOp::create(r.b, r.loc, a, c).getResult(); };
  Value sc, m;
  if (s < 4) {
    sc = andi(r.Byte(4 + s), 63);
    m = andi(r.Byte(4 + s + 4), 63);
  } else {
    Value q = r.Byte(4 + s + 4);
    sc = ori(andi(q, 15), shl(shr(r.Byte(4 + s - 4), 6), 4));
    m = ori(shr(q, 4), shl(shr(r.Byte(4 + s), 6), 4));
  }
  Value scale = MulF(r, r.Half(0), ToF32(r, sc));
  Value min = arith::NegFOp::create(r.b, r.loc, MulF(r, r.Half(2), ToF32(r, m)));
  return {scale, min};
}
// q4_k: 128 bytes of nibbles at 16; groups 2c and 2c + 1 share bytes [32c, 32c + 32): low
// nibbles for 2c, high for 2c + 1.
Value Q4_KQuants(BlockReader& r, int64_t v) {
  int64_t s = v / 4, l = 8 * (v % 4);
  Ints i{r};
  return i.toF32(i.nibbles(16 + 32 * (s / 2) + l, s % 2));
}
// q5_k: qh[32] at 16, nibbles as q4_k at 48; value l of group s has its fifth bit at bit s
// of qh[l].
Value Q5_KQuants(BlockReader& r, int64_t v) {
  int64_t s = v / 4, l = 8 * (v % 4);
  Ints i{r};
  Value bit = i.andi(i.shr(i.bytes(16 + l), s), 1);
  return i.toF32(i.ori(i.nibbles(48 + 32 * (s / 2) + l, s % 2), i.shl(bit, 4)));
}

// q6_k: ql[128] at 0, qh[64] at 128, 16 signed scales at 192, d at 208. Value e of half h
// (128 values), quarter t (32 values), position l: low 4 bits in ql[64h + 32(t & 1) + l]
// (high nibble for t >= 2), high 2 bits at bit 2t of qh[32h + l], q = that - 32; scale
// d * scales[8h + 2t + l / 16] (groups of 16).
std::pair<Value, Value> Q6_KScale(BlockReader& r, int64_t g) {
  int64_t h = g / 8, t = (g / 2) % 4, half = g % 2;
  Value sc = arith::ExtSIOp::create(r.b, r.loc, r.b.getI32Type(),
                                    vector::ExtractOp::create(r.b, r.loc, r.Bytes(192 + 8 * h + 2 * t + half, 1),
                                                              ArrayRef<int64_t>{0}));
  return {MulF(r, r.Half(208), ToF32(r, sc)), Value()};
}
Value Q6_KQuants(BlockReader& r, int64_t v) {
  int64_t h = v / 16, t = (v / 4) % 4, l = 8 * (v % 4);
  Ints i{r};
  Value low = i.nibbles(64 * h + 32 * (t & 1) + l, t >= 2);
  Value high = i.andi(i.shr(i.bytes(128 + 32 * h + l), 2 * t), 3);
  return i.toF32(i.sub(i.ori(low, i.shl(high, 4)), 32));
}

// The K-quants' super-block integers for the q8_K dots (BlockFormat::SuperBlockInt8), with
// vector<n x iW> helpers.
struct Lanes {
  BlockReader& r;
  Value splat(Type element, int64_t n, int64_t v) {
    auto type = VectorType::get({n}, element);
    return arith::ConstantOp::create(r.b, r.loc, type, DenseElementsAttr::get(type, APInt(element.getIntOrFloatBitWidth(), v)));
  }
  Value pick(Value v, ArrayRef<int64_t> lanes) { return vector::ShuffleOp::create(r.b, r.loc, v, v, lanes); }
  Value concat(Value a, Value c) {
    SmallVector<int64_t> all;
    for (int64_t i = 0; i < 2 * cast<VectorType>(a.getType()).getNumElements(); ++i) all.push_back(i);
    return vector::ShuffleOp::create(r.b, r.loc, a, c, all);
  }
  // `v` (vector<64 x i8>) with the bits of each byte selected by `bits` per 32-byte half set
  // to 16, the others 0: the fifth bit of q5_k's values.
  Value fifthBits(Value v, int64_t lowHalfBit, int64_t highHalfBit) {
    VectorType type = VectorType::get({64}, r.b.getI8Type());
    SmallVector<int8_t> masks(64, int8_t(1 << lowHalfBit));
    std::fill(masks.begin() + 32, masks.end(), int8_t(1 << highHalfBit));
    Value mask = arith::ConstantOp::create(r.b, r.loc, type, DenseElementsAttr::get(type, ArrayRef<int8_t>(masks)));
    Value zero = splat(r.b.getI8Type(), 64, 0);
    Value set = arith::CmpIOp::create(r.b, r.loc, arith::CmpIPredicate::ne, arith::AndIOp::create(r.b, r.loc, v, mask), zero);
    return arith::SelectOp::create(r.b, r.loc, set, splat(r.b.getI8Type(), 64, 16), zero);
  }
};

// q4_k / q5_k: KScaleMin's 6-bit sc and m of the 8 groups, as ggml's vec_dot_q4_K_q8_K
// unpacks them: three u32 words w0..w2 of the 12 bytes at 4, on scalar registers,
//   sc0-3 = w0 & 0x3f..   sc4-7 = (w2 & 0x0f..) | ((w0 >> 6) & 0x03..) << 4
//   m0-3  = w1 & 0x3f..   m4-7  = ((w2 >> 4) & 0x0f..) | ((w1 >> 6) & 0x03..) << 4
// then one vector of their 16 bytes, widened: sc each for its two groups of 16, m as is.
std::pair<Value, Value> KSuperScalesMins(BlockReader& r) {
  auto c = [&](uint32_t v) { return ScalarI32(r, int64_t(int32_t(v))); };
  auto andi = [&](Value a, uint32_t m) { return arith::AndIOp::create(r.b, r.loc, a, c(m)).getResult(); };
  auto shr = [&](Value a, int64_t n) { return arith::ShRUIOp::create(r.b, r.loc, a, c(n)).getResult(); };
  auto shl = [&](Value a, int64_t n) { return arith::ShLIOp::create(r.b, r.loc, a, c(n)).getResult(); };
  auto ori = [&](Value a, Value b) { return arith::OrIOp::create(r.b, r.loc, a, b).getResult(); };
  Value w0 = r.Word(4), w1 = r.Word(8), w2 = r.Word(12);
  Value sc03 = andi(w0, 0x3f3f3f3f), m03 = andi(w1, 0x3f3f3f3f);
  Value sc47 = ori(andi(w2, 0x0f0f0f0f), shl(andi(shr(w0, 6), 0x03030303), 4));
  Value m47 = ori(andi(shr(w2, 4), 0x0f0f0f0f), shl(andi(shr(w1, 6), 0x03030303), 4));
  Value words = vector::FromElementsOp::create(r.b, r.loc, VectorType::get({4}, r.b.getI32Type()),
                                               ValueRange{sc03, sc47, m03, m47});
  Value bytes = vector::BitCastOp::create(r.b, r.loc, VectorType::get({16}, r.b.getI8Type()), words);
  Value wide = arith::ExtUIOp::create(r.b, r.loc, VectorType::get({16}, r.b.getI32Type()), bytes);
  Lanes l{r};
  SmallVector<int64_t> twice;
  for (int64_t g = 0; g < 16; ++g) twice.push_back(g / 2);
  return {l.pick(wide, twice), l.pick(wide, {8, 9, 10, 11, 12, 13, 14, 15})};
}
std::pair<Value, Value> KSuperD(BlockReader& r) { return {r.Half(0), r.Half(2)}; }
// q4_k / q5_k chunks in kNibbleOrder: chunk c holds the low (c even) or high nibbles of the 64
// bytes at `offset` + 64 (c / 2): groups 4 (c / 2) + c % 2 and 4 (c / 2) + c % 2 + 2.
const int64_t kNibbleOrder[] = {0, 2, 1, 3, 4, 6, 5, 7};
Value NibbleChunk(BlockReader& r, int64_t offset, int64_t c) {
  Lanes l{r};
  Value all = r.Bytes(offset + 64 * (c / 2), 64);
  if (c % 2) return arith::ShRUIOp::create(r.b, r.loc, all, l.splat(r.b.getI8Type(), 64, 4));
  return arith::AndIOp::create(r.b, r.loc, all, l.splat(r.b.getI8Type(), 64, 15));
}
// q4_k: 128 bytes of nibbles at 16.
Value Q4_KSuperChunk(BlockReader& r, int64_t c) { return NibbleChunk(r, 16, c); }
// q5_k: q4_k's nibbles at 48, the fifth bit of group s from bit s of qh[32] at 16.
Value Q5_KSuperChunk(BlockReader& r, int64_t c) {
  Lanes l{r};
  Value qh = r.Bytes(16, 32);
  return arith::OrIOp::create(r.b, r.loc, NibbleChunk(r, 48, c),
                              l.fifthBits(l.concat(qh, qh), kNibbleOrder[2 * c], kNibbleOrder[2 * c + 1]));
}
// q6_k chunk c (quarters t = 2 (c % 2) and t + 1 of half h = c / 2): the low nibbles (c
// even) or high ones of ql[64h, 64h + 64), the two bits 2t.. of qh[32h + l] (as 16-bit
// lanes shifted right by 2t, then masked: a byte's bits 2t, 2t + 1 never come from the
// next byte for 2t <= 6) as bits 4-5.
Value Q6_KSuperChunk(BlockReader& r, int64_t c) {
  Lanes l{r};
  const int64_t h = c / 2, t = 2 * (c % 2);
  VectorType bytes = VectorType::get({64}, r.b.getI8Type()), words = VectorType::get({32}, r.b.getIntegerType(16));
  Value ql = r.Bytes(64 * h, 64);
  Value nibbles = c % 2 ? arith::ShRUIOp::create(r.b, r.loc, ql, l.splat(r.b.getI8Type(), 64, 4)).getResult()
                        : arith::AndIOp::create(r.b, r.loc, ql, l.splat(r.b.getI8Type(), 64, 15)).getResult();
  Value qh = r.Bytes(128 + 32 * h, 32);
  SmallVector<int16_t> shifts(32, int16_t(2 * t));
  std::fill(shifts.begin() + 16, shifts.end(), int16_t(2 * t + 2));
  Value shifted = arith::ShRUIOp::create(
      r.b, r.loc, vector::BitCastOp::create(r.b, r.loc, words, l.concat(qh, qh)),
      arith::ConstantOp::create(r.b, r.loc, words, DenseElementsAttr::get(words, ArrayRef<int16_t>(shifts))));
  Value two = arith::AndIOp::create(r.b, r.loc, vector::BitCastOp::create(r.b, r.loc, bytes, shifted),
                                    l.splat(r.b.getI8Type(), 64, 3));
  return arith::OrIOp::create(r.b, r.loc, nibbles, arith::ShLIOp::create(r.b, r.loc, two, l.splat(r.b.getI8Type(), 64, 4)));
}
// q6_k: the 16 signed scales at 192, d at 208.
std::pair<Value, Value> Q6_KSuperScales(BlockReader& r) {
  return {arith::ExtSIOp::create(r.b, r.loc, VectorType::get({16}, r.b.getI32Type()), r.Bytes(192, 16)), Value()};
}
std::pair<Value, Value> Q6_KSuperD(BlockReader& r) { return {r.Half(208), Value()}; }

const BlockFormat::SuperBlockInt8 kQ4_KSuper{Q4_KSuperChunk, KSuperScalesMins, KSuperD, 0, kNibbleOrder};
const BlockFormat::SuperBlockInt8 kQ5_KSuper{Q5_KSuperChunk, KSuperScalesMins, KSuperD, 0, kNibbleOrder};
const BlockFormat::SuperBlockInt8 kQ6_KSuper{Q6_KSuperChunk, Q6_KSuperScales, Q6_KSuperD, 32};

const BlockFormat kFormats[] = {
    {"q4_0", 32, 18, 32, false, Q4_0Scale, Q4_0Quants, Q4_0Int8, 8, true, Q4_0Int8Pair},
    {"q4_1", 32, 20, 32, true, Q4_1ScaleMin, Q4_1Quants, Q4_1Int8, 0, true, Q4_1Int8Pair},
    {"q4_k", 256, 144, 32, true, KScaleMin, Q4_KQuants, nullptr, 0, false, nullptr, &kQ4_KSuper},
    {"q5_0", 32, 22, 32, false, Q5_0Scale, Q5_0Quants, Q5_0Int8, 16, true},
    {"q5_k", 256, 176, 32, true, KScaleMin, Q5_KQuants, nullptr, 0, false, nullptr, &kQ5_KSuper},
    {"q6_k", 256, 210, 16, false, Q6_KScale, Q6_KQuants, nullptr, 0, false, nullptr, &kQ6_KSuper},
    {"q8_0", 32, 34, 32, false, Q8_0Scale, Q8_0Quants, Q8_0Int8},
};

}  // namespace

const BlockFormat* FindBlockFormat(llvm::StringRef name) {
  for (const BlockFormat& format : kFormats)
    if (format.name == name) return &format;
  return nullptr;
}

}  // namespace hexir::codegen
