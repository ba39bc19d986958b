// The quantized GEMV's decode arithmetic (CUDAQuantizedGemv.h clones the importer's decode
// body once per value of a group; these keep that cheap):
// - One op per computation: cloning through a CseCloner gives an op whose name, attributes
//   and operands equal an earlier one's that op's results, so what the values of a block share
//   (its f16 scale, a K-quant sub-block's scale and minimum) is decoded once, not per value,
//   and is the same Value for all of them (which FactoredSum keys on).
// - Small integers to f32 without the conversion unit: sitofp / uitofp of an integer whose
//   range (from the ops that compute it: a byte's extension, a mask, a shift, a subtraction)
//   lies in [-2^22, 2^22) becomes an integer add of 0x4B400000 (1.5 x 2^23's bits), a bitcast
//   and a subtraction of 1.5 x 2^23, exact for that range. On the H200 cvt.rn.f32.s32 issues
//   at 16 a clock per SM against 64 integer adds and 128 f32 adds.
// - Terms factored: the importer writes term = x * w with w = a * v, a * v + c or a * v - c
//   (a, c: a block's or sub-block's scale and offset, v: the value's integer as f32). Terms
//   with the same a and c (the same Values) are summed as a * sum(x v) +- c * sum(x), with
//   sum(x v) an fma chain: one fma per value instead of two multiplies and an add.
#pragma once

#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace hexir::cuda {

// Clones ops at the builder's insertion point, reusing an earlier clone (or a memoized
// constant) with the same name, attributes, operands and result types.
class CseCloner {
 public:
  explicit CseCloner(mlir::OpBuilder& b) : b(b) {}
  // Clones `op` with operands through `m`, maps its results into `m`.
  void clone(mlir::Operation& op, mlir::IRMapping& m);
  // A constant of `value` (one per attribute).
  mlir::Value constant(mlir::Attribute value, mlir::Location loc);

 private:
  mlir::OpBuilder& b;
  std::map<std::vector<const void*>, mlir::Operation*> ops;
  llvm::DenseMap<mlir::Attribute, mlir::Value> constants;
};

// Whether `v` (an integer) provably lies in [-2^22, 2^22), signed (`isSigned`) or unsigned,
// from the integer-range rules of the ops computing it (reads and arguments: their type's
// whole range).
bool FitsExponentTrick(mlir::Value v, bool isSigned);

// float(v) for such a `v` (an integer of at most 32 bits) through the exponent trick above.
mlir::Value SmallIntToF32(mlir::OpBuilder& b, mlir::Location loc, mlir::Value v, bool isSigned);

// A bit field of a loaded byte plus a constant: ((zext(byte) >> shift) & (2^width - 1)) +
// offset, the byte element `byte` of `load` (a vector of 4, 8 or 16 i8 loaded from W):
// the importer's nibbles (q4_0: - 8; q4_1, q4_k: + 0).
struct ByteField {
  mlir::Value load;
  int64_t byte = 0, shift = 0, width = 8, offset = 0;
};

// `v` (an integer, the cloned decode's) as such a field, or nullopt.
std::optional<ByteField> MatchByteField(mlir::Value v);

// Converts fields to f32 in place, without extracting them: the field's bits, masked where
// they lie in their 32-bit word of the load (bit P = 8 (byte % 4) + shift; the word shifted
// right by 16 first where P + width > 23), or'ed with 2^23's exponent, give the f32
// 2^23 + q 2^P exactly; one subtraction of 2^23 - offset 2^P leaves (q + offset) 2^P. One
// and-or (a LOP3) and one add a value, against a byte extraction, a field extraction, an
// integer add and an f32 add (SmallIntToF32). The result is scaled by 2^P (`scaleLog2`),
// which FactoredSum takes out once per fma chain. Words and shifted words are made once.
class ByteFieldConverter {
 public:
  explicit ByteFieldConverter(mlir::OpBuilder& b) : b(b) {}
  // (q + offset) 2^P and P.
  std::pair<mlir::Value, int64_t> convert(const ByteField& f, mlir::Location loc);

 private:
  mlir::OpBuilder& b;
  llvm::DenseMap<mlir::Value, mlir::Value> words;              // load -> vector of i32
  std::map<std::tuple<const void*, int64_t, bool>, mlir::Value> word;  // (load, word, shifted)
};

// One value's term of the sum: `whole` (x * w as cloned), and where the decode had the form
// above, x, a, v, c (null without an offset) and whether c is subtracted; v may be scaled by
// 2^scaleLog2 (ByteFieldConverter).
struct DecodedTerm {
  mlir::Value whole;
  mlir::Value x, a, v, c;
  bool subtract = false;
  int64_t scaleLog2 = 0;
  bool factored() const { return static_cast<bool>(a); }
};

// The sum of `terms`: factored terms grouped by (a, c, subtract, scaleLog2) in runs of at
// most 32 (fma chains of bounded length); the runs of one (a, c, subtract) combined as
// acc = sum over runs of sum(x v) 2^-scaleLog2 (an fma each, exact power-of-two factors),
// then a * acc +- c * sum(x); the others added whole; all of it a pairwise tree.
mlir::Value FactoredSum(mlir::OpBuilder& b, mlir::Location loc, const std::vector<DecodedTerm>& terms);

}  // namespace hexir::cuda
