#include "compiler/importers/llama/BlockDecode.h"

// Each format is written as a closed form of the element index (no loops), so one kernel
// iteration decodes one value: the byte offsets are affine in the index, the sub-block's
// scale and min are selected without branches (valid indices for every sub-block).

namespace hexir::compiler::llama {
namespace {

class Decoder {
 public:
  Decoder(const std::string& weight, const std::string& weight_type, const std::string& row,
          const std::function<std::string()>& fresh, const std::string& indent, std::string* text)
      : weight_(weight), weight_type_(weight_type), row_(row), fresh_(fresh), indent_(indent), text_(text) {}

  // name = op (one line); returns name.
  std::string Op(const std::string& op) {
    std::string name = fresh_();
    *text_ += indent_ + name + " = " + op + "\n";
    return name;
  }
  std::string Index(int64_t v) { return Op("arith.constant " + std::to_string(v) + " : index"); }
  std::string I32(int64_t v) { return Op("arith.constant " + std::to_string(v) + " : i32"); }
  std::string AddIndex(const std::string& a, const std::string& b) { return Op("arith.addi " + a + ", " + b + " : index"); }
  std::string MulIndex(const std::string& a, int64_t b) { return Op("arith.muli " + a + ", " + Index(b) + " : index"); }
  std::string AndIndex(const std::string& a, int64_t mask) { return Op("arith.andi " + a + ", " + Index(mask) + " : index"); }
  std::string ShrIndex(const std::string& a, int64_t bits) { return Op("arith.shrui " + a + ", " + Index(bits) + " : index"); }
  std::string IndexToI32(const std::string& a) { return Op("arith.index_cast " + a + " : index to i32"); }
  std::string And(const std::string& a, int64_t mask) { return Op("arith.andi " + a + ", " + I32(mask) + " : i32"); }
  std::string Shr(const std::string& a, const std::string& bits) { return Op("arith.shrui " + a + ", " + bits + " : i32"); }
  std::string Shl(const std::string& a, int64_t bits) { return Op("arith.shli " + a + ", " + I32(bits) + " : i32"); }
  std::string Or(const std::string& a, const std::string& b) { return Op("arith.ori " + a + ", " + b + " : i32"); }
  std::string Sub(const std::string& a, int64_t b) { return Op("arith.subi " + a + ", " + I32(b) + " : i32"); }
  std::string ToF32(const std::string& a) { return Op("arith.sitofp " + a + " : i32 to f32"); }
  std::string MulF(const std::string& a, const std::string& b) { return Op("arith.mulf " + a + ", " + b + " : f32"); }

  // The block's first byte: base = block * block_bytes.
  void SetBlock(const std::string& block, int64_t block_bytes) { base_ = MulIndex(block, block_bytes); }
  // Byte at block offset `offset` (+ `dynamic`, an index value, when given) as i8.
  std::string Byte(int64_t offset, const std::string& dynamic = "") {
    std::string at = AddIndex(base_, Index(offset));
    if (!dynamic.empty()) at = AddIndex(at, dynamic);
    return Op("tensor.extract " + weight_ + "[" + row_ + ", " + at + "] : " + weight_type_);
  }
  std::string Unsigned(const std::string& byte) { return Op("arith.extui " + byte + " : i8 to i32"); }
  std::string Signed(const std::string& byte) { return Op("arith.extsi " + byte + " : i8 to i32"); }
  // The little-endian f16 at block offset `offset`, as f32.
  std::string Half(int64_t offset) {
    std::string lo = Unsigned(Byte(offset)), hi = Shl(Unsigned(Byte(offset + 1)), 8);
    std::string bits = Op("arith.trunci " + Or(lo, hi) + " : i32 to i16");
    std::string h = Op("arith.bitcast " + bits + " : i16 to f16");
    return Op("arith.extf " + h + " : f16 to f32");
  }
  // The nibble of byte `b` (i32) selected by `high` (an index value, 0 or 1): b >> 4*high & 15.
  std::string Nibble(const std::string& b, const std::string& high) {
    std::string shift = IndexToI32(MulIndex(high, 4));
    return And(Shr(b, shift), 15);
  }

 private:
  std::string weight_, weight_type_, row_;
  const std::function<std::string()>& fresh_;
  std::string indent_;
  std::string* text_;
  std::string base_;
};

// q4_0 / q4_1 / q5_0: 32 values; value e's nibble is in byte qs[e % 16], high nibble for e >= 16.
std::string LegacyNibble(Decoder& d, const std::string& e, int64_t qs_offset) {
  std::string low_index = d.AndIndex(e, 15), high = d.ShrIndex(e, 4);
  return d.Nibble(d.Unsigned(d.Byte(qs_offset, low_index)), high);
}

// K-quants' 6-bit scale and min of sub-block s (0..7) from scales[12] at block offset `at`
// (ggml's get_scale_min_k4): s < 4: sc = q[s] & 63, m = q[s+4] & 63; else
// sc = (q[s+4] & 15) | (q[s-4] >> 6) << 4, m = (q[s+4] >> 4) | (q[s] >> 6) << 4.
// q[s & 3] is q[s-4] for s >= 4 and a valid (unused) byte otherwise.
std::pair<std::string, std::string> ScaleMinK4(Decoder& d, const std::string& s, int64_t at) {
  std::string p = d.Unsigned(d.Byte(at, s));
  std::string q = d.Unsigned(d.Byte(at + 4, s));
  std::string r = d.Unsigned(d.Byte(at, d.AndIndex(s, 3)));
  std::string six = d.I32(6);
  std::string sc_hi = d.Or(d.And(q, 15), d.Shl(d.Shr(r, six), 4));
  std::string m_hi = d.Or(d.Shr(q, d.I32(4)), d.Shl(d.Shr(p, six), 4));
  std::string low = d.Op("arith.cmpi ult, " + s + ", " + d.Index(4) + " : index");
  std::string sc = d.Op("arith.select " + low + ", " + d.And(p, 63) + ", " + sc_hi + " : i32");
  std::string m = d.Op("arith.select " + low + ", " + d.And(q, 63) + ", " + m_hi + " : i32");
  return {sc, m};
}

}  // namespace

std::string DecodeBlockElement(const GgmlBlockInfo& format, const std::string& weight, const std::string& weight_type,
                               const std::string& row, const std::string& block, const std::string& e,
                               const std::function<std::string()>& fresh, const std::string& indent,
                               std::string* text) {
  Decoder d(weight, weight_type, row, fresh, indent, text);
  d.SetBlock(block, format.block_bytes);
  switch (format.type) {
    case GgmlBlockType::kQ8_0:
      return d.MulF(d.Half(0), d.ToF32(d.Signed(d.Byte(2, e))));
    case GgmlBlockType::kQ4_0:
      return d.MulF(d.Half(0), d.ToF32(d.Sub(LegacyNibble(d, e, 2), 8)));
    case GgmlBlockType::kQ4_1: {
      std::string scale = d.Half(0), min = d.Half(2);
      std::string v = d.MulF(d.ToF32(LegacyNibble(d, e, 4)), scale);
      return d.Op("arith.addf " + v + ", " + min + " : f32");
    }
    case GgmlBlockType::kQ5_0: {
      std::string scale = d.Half(0);
      std::string qh = d.Unsigned(d.Byte(2, d.ShrIndex(e, 3)));
      std::string bit = d.And(d.Shr(qh, d.IndexToI32(d.AndIndex(e, 7))), 1);
      std::string q = d.Or(LegacyNibble(d, e, 6), d.Shl(bit, 4));
      return d.MulF(scale, d.ToF32(d.Sub(q, 16)));
    }
    case GgmlBlockType::kQ4_K:
    case GgmlBlockType::kQ5_K: {
      const bool five = format.type == GgmlBlockType::kQ5_K;
      const int64_t qs = five ? 48 : 16;
      std::string scale = d.Half(0), dmin = d.Half(2);
      std::string s = d.ShrIndex(e, 5), l = d.AndIndex(e, 31);
      auto [sc, m] = ScaleMinK4(d, s, 4);
      // Sub-blocks 2c and 2c+1 share qs[32c .. 32c+31] (low and high nibbles).
      std::string at = d.AddIndex(d.MulIndex(d.ShrIndex(e, 6), 32), l);
      std::string q = d.Nibble(d.Unsigned(d.Byte(qs, at)), d.AndIndex(s, 1));
      if (five) {
        std::string qh = d.Unsigned(d.Byte(16, l));
        std::string bit = d.And(d.Shr(qh, d.IndexToI32(s)), 1);
        q = d.Or(q, d.Shl(bit, 4));
      }
      std::string d1 = d.MulF(scale, d.ToF32(sc)), m1 = d.MulF(dmin, d.ToF32(m));
      return d.Op("arith.subf " + d.MulF(d1, d.ToF32(q)) + ", " + m1 + " : f32");
    }
    case GgmlBlockType::kQ6_K: {
      // Halves h of 128 values; quarter t of a half, position l in the quarter: low 4 bits in
      // ql[64h + 32(t&1) + l] (low nibble for t < 2), high 2 bits at bit 2t of qh[32h + l],
      // scale scales[8h + 2t + l/16].
      std::string h = d.ShrIndex(e, 7), t = d.AndIndex(d.ShrIndex(e, 5), 3), l = d.AndIndex(e, 31);
      std::string ql_at = d.AddIndex(d.AddIndex(d.MulIndex(h, 64), d.MulIndex(d.AndIndex(t, 1), 32)), l);
      std::string low = d.Nibble(d.Unsigned(d.Byte(0, ql_at)), d.ShrIndex(t, 1));
      std::string qh = d.Unsigned(d.Byte(128, d.AddIndex(d.MulIndex(h, 32), l)));
      std::string high = d.And(d.Shr(qh, d.IndexToI32(d.MulIndex(t, 2))), 3);
      std::string q = d.Sub(d.Or(low, d.Shl(high, 4)), 32);
      std::string sc_at = d.AddIndex(d.AddIndex(d.MulIndex(h, 8), d.MulIndex(t, 2)), d.ShrIndex(l, 4));
      std::string sc = d.ToF32(d.Signed(d.Byte(192, sc_at)));
      return d.MulF(d.MulF(d.Half(208), sc), d.ToF32(q));
    }
    case GgmlBlockType::kBF16:
      break;
  }
  return "";  // bf16 is a typed tensor, read without decoding (the emitter's arith.extf)
}

}  // namespace hexir::compiler::llama
