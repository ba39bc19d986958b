// GGUF block formats decoded in vector registers for the matvec kernel (CPUMatvecKernel.h).
//
// A block holds `blockElements` (B) consecutive values of a row in `blockBytes` bytes
// (ggml's block_<type> structs, little-endian). Its values come in groups of
// `groupElements` (G) sharing a scale and, for formats with a min, a min:
//   value = scale(g) * q + min(g)       (q an integer, decoded exactly as f32)
// so a row's dot product with x is sum over groups of scale * sum(q * x) + min * sum(x).
// All offsets inside a block are static: the emitter unrolls a block's groups and vectors.
#pragma once

#include <cstdint>
#include <utility>

#include "llvm/ADT/StringRef.h"
#include "mlir/IR/Builders.h"

namespace hexir::codegen {

// Reads the block at byte `base` of row `row` of the i8 memref `weights` [rows][row bytes].
struct BlockReader {
  mlir::OpBuilder& b;
  mlir::Location loc;
  mlir::Value weights, row, base;

  // Bytes [offset, offset + count) of the block: vector<count x i8>.
  mlir::Value Bytes(int64_t offset, int64_t count);
  // Byte `offset` zero-extended to i32.
  mlir::Value Byte(int64_t offset);
  // The little-endian f16 at `offset`, as f32.
  mlir::Value Half(int64_t offset);
  // The little-endian u32 at `offset` (i32).
  mlir::Value Word(int64_t offset);
};

// Values per vector of the quantized integers (vector<8 x f32>).
inline constexpr int64_t kBlockLanes = 8;

struct BlockFormat {
  llvm::StringLiteral name;  // ggml's: "q4_0", "q6_k"
  int64_t blockElements;
  int64_t blockBytes;
  int64_t groupElements;  // a multiple of kBlockLanes
  bool hasMin;
  // (scale, min) of group `group` as f32 scalars; min is null without hasMin.
  std::pair<mlir::Value, mlir::Value> (*scaleMin)(BlockReader& r, int64_t group);
  // The integers q of values [8 * vec, 8 * vec + 8) of the block as vector<8 x f32>.
  mlir::Value (*quants)(BlockReader& r, int64_t vec);
  // Formats of one group of 32 that ggml dots with 8-bit activations (CPUMatvecInt8Dot.h):
  // the block's 32 stored integers u as vector<32 x i8>, q = u - int8Offset; null for the
  // others (f32 activations). `int8Unsigned`: u is in [0, 127] (nibbles, 5-bit values), so
  // it can be vpmaddubsw's unsigned operand as it is.
  mlir::Value (*int8Quants)(BlockReader& r);
  int64_t int8Offset = 0;
  bool int8Unsigned = false;
  // Two consecutive blocks' stored integers as one vector<64 x i8> in 16-value chunks
  // [first 0-15, second 0-15, first 16-31, second 16-31] (the nibble formats' natural order:
  // both blocks' bytes of nibbles, their low nibbles, then their high ones), taken from
  // `pair`, a vector<64 x i8> holding the two blocks' bytes from the first's byte 0 (one
  // load; lanes past 2 * blockBytes <= 64 are not read); null for the formats whose pairs
  // are two int8Quants side by side.
  mlir::Value (*int8QuantsPair)(mlir::OpBuilder& b, mlir::Location loc, mlir::Value pair) = nullptr;
  // The K-quants' super-blocks of 256, which ggml dots with q8_K activations (x quantized
  // per 256 values, CPUMatvecInt8Dot.h) as integers within the block:
  //   dot = d * d_x * (sum_g sc[g] * (u_g . q_g) - superOffset * sum_g sc[g] * xsum16[g])
  //         - dmin * d_x * sum_s m[s] * xsum32[s]
  // with u the stored unsigned integers (q = u - superOffset), sc the integer scale of each
  // 16 values g, m the integer min of each 32 values s. Null for the other formats.
  struct SuperBlockInt8 {
    // u of chunk `chunk` (64 values: the 32-value groups order[2 chunk] and order[2 chunk +
    // 1], natural order without `order`) as vector<64 x i8>, each in [0, 63].
    mlir::Value (*chunk)(BlockReader& r, int64_t chunk);
    // sc of the 16 groups of 16 values as vector<16 x i32>, and m of the 8 groups of 32
    // values as vector<8 x i32> (null without the format's hasMin).
    std::pair<mlir::Value, mlir::Value> (*scalesMins)(BlockReader& r);
    // (d, dmin) as f32 scalars; dmin null without a min.
    std::pair<mlir::Value, mlir::Value> (*d)(BlockReader& r);
    int64_t offset;
    // The 32-value groups in the chunks' order (x's quants are stored so), or empty: the
    // nibble formats' bytes hold groups 2c (low nibbles) and 2c + 1 (high) of 32 bytes c, so
    // a 64-byte load's low nibbles are groups 0 and 2, its high ones 1 and 3.
    llvm::ArrayRef<int64_t> order = {};
  };
  const SuperBlockInt8* superInt8 = nullptr;
};

// The format named `name`, or null.
const BlockFormat* FindBlockFormat(llvm::StringRef name);

}  // namespace hexir::codegen
