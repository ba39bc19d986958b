// The matvec kernels' emitter (CPUMatvecKernel.h says what the kernels compute), shared by
// CPUMatvecKernel.cpp (matching, dense rows, blocks dotted in f32, the entry point) and
// CPUMatvecInt8Kernels.cpp (the 8-bit-activation dots: 32-value blocks and the K-quants'
// super-blocks). Internal to passes/codegen.
#pragma once

#include <cassert>
#include <cstdint>

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "passes/codegen/CPUForLoop.h"
#include "passes/codegen/CPUMatvecBlockFormats.h"
#include "passes/codegen/CPUMatvecInt8Dot.h"

namespace hexir::codegen::matvec {
using namespace mlir;

// How far ahead the 32-value blocks' rows are prefetched in software (random768, one thread,
// least CPU time per decode token of 3-4 alternated rounds, load 5-7, against 4096: q4_0 -20%
// (12288 -26%, 16384 -15%), q8_0 -12%; the kernels before the VNNI dots measured 4096 against
// 2048: q4_0 -13 to -18%, q8_0 -20 to -26%, 8192 no better then; 512 was 12% slower than 2048
// on q8_0). Dense rows and the K-quants' super-block rows (one row at a time) are not
// prefetched in software: the hardware prefetchers alone keep one sequential stream ahead
// (session 27, 3 alternated rounds, 20 tokens, without against with (4096 bytes dense, 8192
// blocks): f16 0.87x, f32 0.86x, q4_k 0.72x, q5_k 0.80x, q6_k 0.76x; the 32-value int8 dots
// keep theirs: q8_0 1.30x slower without, q4_0 0.93x, q4_1 0.94x, q5_0 1.01x).
inline constexpr int64_t kBlockPrefetchBytes = 8192;

inline Type ElementOf(Value v) { return cast<ShapedType>(v.getType()).getElementType(); }
inline int64_t RankOf(Value v) { return cast<ShapedType>(v.getType()).getRank(); }

struct MatvecTiles {
  bool x86Avx2;    // AVX2 integer intrinsics for the int8 dots (vectorBits >= 256 only on x86)
  bool x86Avx512;  // int8 dots two blocks a vector (vectorBits 512: x86 with AVX512F and BW)
  bool int8DotAccumulate;  // those dots by vpdpbusd (AVX512_VNNI)
  int64_t lanes;   // f32 lanes of a dense step's vectors (8 on AVX2, 16 on AVX-512)
  int64_t unroll;  // dense vectors per row and k step (independent FMA chains)
  int64_t rows;    // R: blocks dotted in f32
  int64_t decodedRows;  // R: dense weights (f32, f16) and int8 dots
};

// y[n] += W[n][k] * x[k] with W f32 or f16.
struct DenseMatvec {
  Value weights, x, y;
};

// A block-format matvec generic: x [K / B][B], y [N], the weights' i8 memref loaded in the
// body at row `rowIndex` (a body value computed from linalg.index `rowDim`). The M-row form
// (a prompt's, loops (m, n, b, j)) has x [M][K / B][B] and y [M][N]: rowDim 1.
struct BlockMatvec {
  const BlockFormat* format;
  Value x, y, weights, rowIndex;
  int64_t rowDim = 0;
};

class MatvecEmitter {
 public:
  MatvecEmitter(OpBuilder& b, Location loc, const MatvecTiles& tiles) : b(b), loc(loc), t(tiles) {}

  // Runs `group(n0, R)` over [0, rows) in groups of R = `groupRows`, then one row at a time.
  void forRowGroups(Value rows, int64_t groupRows, llvm::function_ref<void(Value, int64_t)> group) {
    if (groupRows == 1) return forLoop(index(0), rows, index(1), [&](Value n0) { group(n0, 1); });
    Value whole = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, rows, index(groupRows)), index(groupRows));
    forLoop(index(0), whole, index(groupRows), [&](Value n0) { group(n0, groupRows); });
    forLoop(whole, rows, index(1), [&](Value n0) { group(n0, 1); });
  }

  // The kinds of kernel (CPUMatvecKernel.h): dense f32/f16 rows; blocks dotted in f32
  // (CPUMatvecKernel.cpp); 32-value blocks and the K-quants' super-blocks dotted with 8-bit
  // activations (CPUMatvecInt8Kernels.cpp).
  void emitDense(const DenseMatvec& m);
  void emitBlocks(const BlockMatvec& m, mlir::linalg::GenericOp op);
  void emitInt8Blocks(const BlockMatvec& m, mlir::linalg::GenericOp op);
  void emitInt8SuperBlocks(const BlockMatvec& m, mlir::linalg::GenericOp op);

 private:
  // What the AVX-512 pair steps read of x, computed once per matvec instead of per row: for
  // pair p (blocks 2p, 2p + 1), its 64 quants in the format's lane order (int8QuantsPair's
  // chunks, rewritten in place in x.quants, viewed flat), its two scales spread over 16
  // lanes, and for unsigned integers with an offset o the lanes of o . q (negated with VNNI:
  // the rows' vpdpbusd start from them).
  struct PairedActivations {
    Value quants;  // memref<2P * 32 x i8>: x.quants flat
    Value scales;  // memref<P x 16 x f32> (the nibble formats), or null
    Value bias;    // memref<P x 16 x i32>, or null
    Value quadScales;  // memref<P/2 x 16 x f32>: quad q's four scales in int8QuadStep's lanes, or null
  };
  PairedActivations pairActivations(const BlockFormat& f, const Int8Activations& x, int64_t count, Block& entry);
  SmallVector<Value> int8Step(const BlockFormat& f, const Int8Activations& x, Value weights, ArrayRef<Value> weightRow,
                              Value block, ValueRange acc);
  SmallVector<Value> int8PairStep(const BlockFormat& f, const Int8Activations& x, const PairedActivations& pairs,
                                  Value weights, ArrayRef<Value> weightRow, Value block, ValueRange acc);
  Value unsignedDotLanes(Value u, Value q, Value bias);
  SmallVector<Value> int8QuadStep(const BlockFormat& f, const PairedActivations& pairs, Value weights,
                                  ArrayRef<Value> weightRow, Value block, ValueRange acc);

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value a, int64_t v) { return v ? arith::AddIOp::create(b, loc, a, index(v)).getResult() : a; }
  Value zeroVector(VectorType type) {
    return arith::ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, 0.0f));
  }
  Value byteSplat(VectorType type, int8_t v) {
    return arith::ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, v));
  }
  Value intSplat(VectorType type, int32_t v) {
    return arith::ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, v));
  }
  Value zeroLike(Value v) {
    return arith::ConstantOp::create(b, loc, v.getType(), b.getZeroAttr(v.getType()));
  }
  // Bytes [base, base + count) of `row` (count <= 64) as vector<64 x i8>, the other lanes 0:
  // a masked load, which never faults past the row's end.
  Value loadPair(Value weights, Value row, Value base, int64_t count) {
    assert(count <= 64 && "a pair of blocks in one 64-byte load");
    VectorType type = VectorType::get({64}, b.getI8Type());
    Value mask = vector::ConstantMaskOp::create(b, loc, VectorType::get({64}, b.getI1Type()), ArrayRef<int64_t>{count});
    return vector::MaskedLoadOp::create(b, loc, type, weights, ValueRange{row, base}, mask, byteSplat(type, 0));
  }
  // The f16 at byte `offset` of the two blocks in `pair` (loadPair's) as vector<16 x f32> in
  // spread's chunked lanes: one permute of the bytes seen as 32 halves, one conversion.
  Value spreadHalves(Value pair, int64_t offset, int64_t blockBytes) {
    Value halves = vector::BitCastOp::create(b, loc, VectorType::get({32}, b.getF16Type()), pair);
    SmallVector<int64_t> lanes;
    for (int64_t i = 0; i < 2 * kBlockLanes; ++i) lanes.push_back(((i / 4) % 2 * blockBytes + offset) / 2);
    Value picked = vector::ShuffleOp::create(b, loc, halves, halves, lanes);
    return arith::ExtFOp::create(b, loc, VectorType::get({2 * kBlockLanes}, b.getF32Type()), picked);
  }
  // The format's signed integers q = u - int8Offset of its stored ones u.
  Value storedToSigned(const BlockFormat& f, Value u) {
    if (!f.int8Offset) return u;
    auto type = cast<VectorType>(u.getType());
    return arith::SubIOp::create(b, loc, u, arith::ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, int8_t(f.int8Offset))));
  }
  // a ++ c for two vectors of one type.
  Value concat(Value a, Value c) {
    SmallVector<int64_t> all;
    for (int64_t i = 0; i < 2 * cast<VectorType>(a.getType()).getNumElements(); ++i) all.push_back(i);
    return vector::ShuffleOp::create(b, loc, a, c, all);
  }
  // vector<2 x f32> [s, s2] -> vector<16 x f32>: s in lanes 0-7, s2 in 8-15 (`chunked`: s
  // in lanes 0-3 and 8-11, s2 in 4-7 and 12-15, the lanes of int8QuantsPair's order).
  Value spread(Value v, bool chunked) {
    SmallVector<int64_t> lanes;
    for (int64_t i = 0; i < 2 * kBlockLanes; ++i) lanes.push_back(chunked ? (i / 4) % 2 : i / kBlockLanes);
    return vector::ShuffleOp::create(b, loc, v, v, lanes);
  }
  SmallVector<Value> rowValues(Value n0, int64_t rows) {
    SmallVector<Value> at;
    for (int64_t r = 0; r < rows; ++r) at.push_back(add(n0, r));
    return at;
  }

  // Asks for weights[row][at] of each row ahead of its use (no fault past the row's end).
  void prefetchRows(Value weights, ArrayRef<Value> rows, Value at) {
    for (Value row : rows)
      memref::PrefetchOp::create(b, loc, weights, ValueRange{row, at}, /*isWrite=*/false, /*localityHint=*/3,
                                 /*isDataCache=*/true);
  }

  void forLoop(Value lb, Value ub, Value step, llvm::function_ref<void(Value)> body) {
    EmitForLoop(b, loc, lb, ub, step, body);
  }

  // scf.for lb..ub step carrying `init`; `body` returns the next values.
  scf::ForOp forLoopCarrying(Value lb, Value ub, Value step, ValueRange init,
                             llvm::function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto loop = scf::ForOp::create(b, loc, lb, ub, step, init);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(loop.getBody());
    scf::YieldOp::create(b, loc, body(loop.getInductionVar(), loop.getRegionIterArgs()));
    return loop;
  }

  // y[row] += the lanes' sum of `sum` (reassociated: a tree of adds) + `scalar` (if any).
  void accumulate(Value y, Value row, Value sum, Value scalar = Value()) {
    Value total = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, sum,
                                              arith::FastMathFlags::reassoc);
    if (scalar) total = arith::AddFOp::create(b, loc, total, scalar);
    Value old = memref::LoadOp::create(b, loc, y, ValueRange{row});
    memref::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, old, total), y, ValueRange{row});
  }

  // The weight row of each output row in `rowAt` (cloneRowIndex of m.rowIndex).
  SmallVector<Value> weightRows(const BlockMatvec& m, linalg::GenericOp op, ArrayRef<Value> rowAt) {
    SmallVector<Value> weightRow;
    for (Value row : rowAt) weightRow.push_back(cloneRowIndex(m.rowIndex, m.rowDim, op, row));
    return weightRow;
  }

  // The body's weight row for output row `row`: its computation cloned with linalg.index
  // `rowDim` replaced (MatchBlocks checked it depends on nothing else of the body).
  Value cloneRowIndex(Value rowIndex, int64_t rowDim, linalg::GenericOp op, Value row) {
    Region& body = op.getRegion();
    SetVector<Operation*> slice;
    BackwardSliceOptions options;
    options.filter = [&](Operation* o) { return body.isAncestor(o->getParentRegion()); };
    options.inclusive = true;
    if (Operation* def = rowIndex.getDefiningOp(); def && body.isAncestor(def->getParentRegion()))
      (void)getBackwardSlice(def, &slice, options);
    else
      return rowIndex;  // defined above the generic: the same row for every n
    IRMapping map;
    for (Operation* o : slice) {
      if (auto idx = dyn_cast<linalg::IndexOp>(o)) {
        assert(static_cast<int64_t>(idx.getDim()) == rowDim && "MatchBlocks: the row depends on its index only");
        map.map(idx.getResult(), row);
        continue;
      }
      b.clone(*o, map);
    }
    return map.lookup(rowIndex);
  }

  OpBuilder& b;
  Location loc;
  const MatvecTiles& t;
};

}  // namespace hexir::codegen::matvec
