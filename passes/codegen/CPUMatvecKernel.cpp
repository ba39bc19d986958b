// Emits the matvec kernels described in CPUMatvecKernel.h with the vector dialect: R rows'
// accumulators stay in vector registers and each row is read once, along k, with vector
// loads (LLVM only allocates registers).
#include "passes/codegen/CPUMatvecKernel.h"

#include <algorithm>
#include <cassert>
#include <optional>

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "passes/codegen/CPUMatvecBlockFormats.h"
#include "passes/codegen/CPUMatvecInt8Dot.h"
#include "passes/codegen/CPUForLoop.h"
#include "passes/codegen/CPUUnitStride.h"

namespace hexir::codegen {
using namespace mlir;

namespace {

struct MatvecTiles {
  bool x86Avx2;    // AVX2 integer intrinsics for the int8 dots (vectorBits >= 256 only on x86)
  bool x86Avx512;  // int8 dots two blocks a vector (vectorBits 512: x86 with AVX512F and BW)
  bool int8DotAccumulate;  // those dots by vpdpbusd (AVX512_VNNI)
  int64_t lanes;   // f32 lanes of a dense step's vectors (8 on AVX2, 16 on AVX-512)
  int64_t unroll;  // dense vectors per row and k step (independent FMA chains)
  int64_t rows;    // R: blocks dotted in f32
  int64_t decodedRows;  // R: dense weights (f32, f16) and int8 dots
};

MatvecTiles ChooseMatvecTiles(const CPUTarget& target) {
  MatvecTiles t;
  t.x86Avx2 = target.vectorBits >= 256;
  t.x86Avx512 = target.vectorBits >= 512;
  t.int8DotAccumulate = t.x86Avx512 && target.int8DotAccumulate;
  t.lanes = std::max<int64_t>(4, target.vectorBits / 32);
  t.unroll = 2;
  t.rows = 4;
  // Dense weights (f32, f16 widened) and the blocks' integer dots are read one row at a time:
  // one sequential stream, which the hardware prefetchers follow, instead of 4 rows a row
  // apart; x is reloaded per row from L1 (random768, one thread, load 3-4, least CPU time per
  // decode token of 3 alternated rounds, 1 row against 4: q4_0 -15%, q8_0 -26%, f16 -20%; 2
  // rows no better than 4 on f16, 8 rows 3% better). f32 kept 4 rows and 512 bytes of
  // software prefetch until session 27: one row and 4096 bytes took 0.66-0.70x the time per
  // token (random768 f32, 20 tokens, two alternated rounds: 20.9-22.6 against 31.7-32.2 ms;
  // 4 rows at 4096 28.3-30.0, 2 rows at 2048 36.6-37.4), and one row without software
  // prefetch 0.86x of that (below). The block formats dotted in f32 (the K-quants
  // without AVX-512, emitBlocks) keep 4: not measured.
  t.decodedRows = 1;
  return t;
}

// The most activation blocks quantized into the kernel's stack (80 KiB at 2048).
constexpr int64_t kMaxInt8ActivationBlocks = 2048;

// Super-block rows of at most this many blocks are unrolled (emitInt8SuperBlocks).
constexpr int64_t kUnrolledSuperBlocks = 8;

// Dense rows and the K-quants' super-block rows (one row at a time) are not prefetched in
// software: the hardware prefetchers alone keep one sequential stream ahead (random768,
// one thread, least CPU time per decode token of 3 alternated rounds, 20 tokens, session 27,
// without against with (4096 bytes dense, 8192 blocks): f16 0.87x, f32 0.86x, q4_k 0.72x,
// q5_k 0.80x, q6_k 0.76x; the 32-value int8 dots below keep theirs: q8_0 1.30x slower
// without, q4_0 0.93x, q4_1 0.94x, q5_0 1.01x).
// How far ahead the 32-value blocks' rows are prefetched (random768, one thread, least CPU time per decode token of 3-4
// alternated rounds, load 5-7, against 4096: q4_0 -20% (12288 -26%, 16384 -15%), q8_0 -12%;
// the kernels before the VNNI dots measured 4096 against 2048: q4_0 -13 to -18%, q8_0 -20 to
// -26%, 8192 no better then; 512 was 12% slower than 2048 on q8_0).
constexpr int64_t kBlockPrefetchBytes = 8192;

Type ElementOf(Value v) { return cast<ShapedType>(v.getType()).getElementType(); }
int64_t RankOf(Value v) { return cast<ShapedType>(v.getType()).getRank(); }

// y[n] += W[n][k] * x[k] with W f32 or f16.
struct DenseMatvec {
  Value weights, x, y;
};

// The body is yield(addf(acc, mulf(x, W'))) (either product order), W' = W or extf(W).
bool IsMultiplyAdd(linalg::GenericOp op, int64_t xArg, int64_t wArg) {
  Block& body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (yield.getNumOperands() != 1) return false;
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add) return false;
  Value acc = body.getArgument(2);
  Value product = add.getLhs() == acc ? add.getRhs() : add.getRhs() == acc ? add.getLhs() : Value();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul) return false;
  Value x = body.getArgument(xArg), w = body.getArgument(wArg);
  auto isWeight = [&](Value v) {
    if (v == w) return true;
    auto ext = v.getDefiningOp<arith::ExtFOp>();
    return ext && ext.getIn() == w;
  };
  return (mul.getLhs() == x && isWeight(mul.getRhs())) || (mul.getRhs() == x && isWeight(mul.getLhs()));
}

std::optional<DenseMatvec> MatchDense(linalg::LinalgOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 || op.getNumLoops() != 2) return std::nullopt;
  DenseMatvec m;
  if (isa<linalg::MatvecOp>(op.getOperation())) {
    m = {op.getDpsInputs()[0], op.getDpsInputs()[1], op.getDpsInits()[0]};
  } else if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation())) {
    SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
    if (iters[0] != utils::IteratorType::parallel || iters[1] != utils::IteratorType::reduction)
      return std::nullopt;
    MLIRContext* ctx = op.getContext();
    AffineExpr n = getAffineDimExpr(0, ctx), k = getAffineDimExpr(1, ctx);
    AffineMap xMap = AffineMap::get(2, 0, {k}, ctx), wMap = AffineMap::get(2, 0, {n, k}, ctx);
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    if (maps[2] != AffineMap::get(2, 0, {n}, ctx)) return std::nullopt;
    int64_t xIndex;
    if (maps[0] == xMap && maps[1] == wMap) xIndex = 0;
    else if (maps[0] == wMap && maps[1] == xMap) xIndex = 1;
    else return std::nullopt;
    if (!IsMultiplyAdd(generic, xIndex, 1 - xIndex)) return std::nullopt;
    m = {op.getDpsInputs()[1 - xIndex], op.getDpsInputs()[xIndex], op.getDpsInits()[0]};
  } else {
    return std::nullopt;
  }
  Type w = ElementOf(m.weights);
  if (!(w.isF32() || w.isF16()) || !ElementOf(m.x).isF32() || !ElementOf(m.y).isF32()) return std::nullopt;
  if (RankOf(m.weights) != 2 || RankOf(m.x) != 1 || RankOf(m.y) != 1) return std::nullopt;
  if (!HasUnitInnerStride(m.weights.getType()) || !HasUnitInnerStride(m.x.getType())) return std::nullopt;
  return m;
}

// A block-format matvec generic: x [K / B][B], y [N], the weights' i8 memref loaded in the
// body at row `rowIndex` (a body value computed from linalg.index `rowDim`). The M-row form
// (a prompt's, loops (m, n, b, j)) has x [M][K / B][B] and y [M][N]: rowDim 1.
struct BlockMatvec {
  const BlockFormat* format;
  Value x, y, weights, rowIndex;
  int64_t rowDim = 0;
};

// The value `v` of the body depends only on linalg.index `rowDim`, values defined outside
// and pure ops (so it can be cloned with the index replaced).
bool DependsOnlyOnRowIndex(Value v, Region& body, int64_t rowDim) {
  Operation* def = v.getDefiningOp();
  if (!def) return !body.isAncestor(v.getParentRegion());  // a block argument of the body is data
  if (!body.isAncestor(def->getParentRegion())) return true;
  if (auto index = dyn_cast<linalg::IndexOp>(def)) return static_cast<int64_t>(index.getDim()) == rowDim;
  if (!isPure(def) || def->getNumRegions()) return false;
  return llvm::all_of(def->getOperands(),
                      [&](Value operand) { return DependsOnlyOnRowIndex(operand, body, rowDim); });
}

std::optional<BlockMatvec> MatchBlocks(linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  auto name = generic ? generic->getAttrOfType<StringAttr>(kBlockMatvecAttr) : nullptr;
  if (!name) return std::nullopt;
  BlockMatvec m;
  m.format = FindBlockFormat(name.getValue());
  const int64_t loops = op.getNumLoops();
  if (!m.format || op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 || (loops != 3 && loops != 4))
    return std::nullopt;
  // Loops (n, b, j), or (m, n, b, j) for M rows: x [(M)][K / B][B] at ((m), b, j), y at ((m), n).
  m.rowDim = loops - 3;
  MLIRContext* ctx = op.getContext();
  AffineExpr n = getAffineDimExpr(m.rowDim, ctx), b = getAffineDimExpr(m.rowDim + 1, ctx),
             j = getAffineDimExpr(m.rowDim + 2, ctx);
  SmallVector<AffineExpr> xExprs{b, j}, yExprs{n};
  if (m.rowDim) {
    xExprs.insert(xExprs.begin(), getAffineDimExpr(0, ctx));
    yExprs.insert(yExprs.begin(), getAffineDimExpr(0, ctx));
  }
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (maps[0] != AffineMap::get(loops, 0, xExprs, ctx) || maps[1] != AffineMap::get(loops, 0, yExprs, ctx))
    return std::nullopt;
  m.x = op.getDpsInputs()[0];
  m.y = op.getDpsInits()[0];
  auto xType = cast<ShapedType>(m.x.getType());
  if (xType.getRank() != 2 + m.rowDim || xType.getDimSize(1 + m.rowDim) != m.format->blockElements ||
      !xType.getElementType().isF32() || !HasUnitInnerStride(xType) || !ElementOf(m.y).isF32() ||
      RankOf(m.y) != 1 + m.rowDim)
    return std::nullopt;
  // Every weight read is a load of one i8 [rows][bytes] memref from above at one row value.
  Region& body = generic.getRegion();
  bool ok = true;
  generic.walk([&](memref::LoadOp load) {
    Value memref = load.getMemRef();
    if (body.isAncestor(memref.getParentRegion()) || load.getIndices().size() != 2) return void(ok = false);
    if (!m.weights) m.weights = memref, m.rowIndex = load.getIndices()[0];
    ok &= m.weights == memref && m.rowIndex == load.getIndices()[0];
  });
  if (!ok || !m.weights || !ElementOf(m.weights).isInteger(8) || !HasUnitInnerStride(m.weights.getType()) ||
      !DependsOnlyOnRowIndex(m.rowIndex, body, m.rowDim))
    return std::nullopt;
  // The stored rows hold exactly K / B blocks.
  int64_t rowBytes = cast<MemRefType>(m.weights.getType()).getDimSize(1);
  int64_t blocks = xType.getDimSize(m.rowDim);
  if (!ShapedType::isDynamic(rowBytes) && !ShapedType::isDynamic(blocks) && rowBytes != blocks * m.format->blockBytes)
    return std::nullopt;
  return m;
}

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

  void emitDense(const DenseMatvec& m) {
    Value depth = memref::DimOp::create(b, loc, m.x, 0);
    Type wElem = ElementOf(m.weights);
    VectorType vec = VectorType::get({t.lanes}, b.getF32Type());
    VectorType wVec = VectorType::get({t.lanes}, wElem);
    VectorType mask = VectorType::get({t.lanes}, b.getI1Type());
    Value zero = zeroVector(vec);
    Value wZero = arith::ConstantOp::create(b, loc, cast<TypedAttr>(b.getZeroAttr(wVec)));
    auto widen = [&](Value w) { return wElem.isF32() ? w : arith::ExtFOp::create(b, loc, vec, w).getResult(); };
    int64_t step = t.lanes * t.unroll;
    // Whole steps of lanes * unroll values, then the rest one (masked) vector at a time.
    Value full = arith::MulIOp::create(b, loc, arith::DivUIOp::create(b, loc, depth, index(step)), index(step));
    forRowGroups(memref::DimOp::create(b, loc, m.y, 0), t.decodedRows, [&](Value n0, int64_t rows) {
      SmallVector<Value> rowAt = rowValues(n0, rows);
      SmallVector<Value> init(rows * t.unroll, zero);
      scf::ForOp main = forLoopCarrying(index(0), full, index(step), init, [&](Value k, ValueRange acc) {
        SmallVector<Value> next(acc);
        for (int64_t u = 0; u < t.unroll; ++u) {
          Value ku = add(k, u * t.lanes);
          Value xv = vector::LoadOp::create(b, loc, vec, m.x, ValueRange{ku});
          for (int64_t r = 0; r < rows; ++r) {
            Value wv = vector::LoadOp::create(b, loc, wVec, m.weights, ValueRange{rowAt[r], ku});
            next[r * t.unroll + u] = vector::FMAOp::create(b, loc, widen(wv), xv, next[r * t.unroll + u]);
          }
        }
        return next;
      });
      scf::ForOp tail = forLoopCarrying(full, depth, index(t.lanes), main.getResults(), [&](Value k, ValueRange acc) {
        SmallVector<Value> next(acc);
        Value left = arith::SubIOp::create(b, loc, depth, k);
        Value valid = vector::CreateMaskOp::create(b, loc, mask, ValueRange{left});
        Value xv = vector::MaskedLoadOp::create(b, loc, vec, m.x, ValueRange{k}, valid, zero);
        for (int64_t r = 0; r < rows; ++r) {
          Value wv = vector::MaskedLoadOp::create(b, loc, wVec, m.weights, ValueRange{rowAt[r], k}, valid, wZero);
          next[r * t.unroll] = vector::FMAOp::create(b, loc, widen(wv), xv, next[r * t.unroll]);
        }
        return next;
      });
      for (int64_t r = 0; r < rows; ++r) {
        Value sum = tail.getResult(r * t.unroll);
        for (int64_t u = 1; u < t.unroll; ++u) sum = arith::AddFOp::create(b, loc, sum, tail.getResult(r * t.unroll + u));
        accumulate(m.y, rowAt[r], sum);
      }
    });
  }

  // int8 dots (formats with int8Quants, K static): per block b and row r,
  //   acc[r] += (d_w * d_x[b]) * lanes(w . q[b])       (+ m_w * sum_x[b] into a scalar)
  // as ggml's vec_dot_<type>_q8_0 / q8_1 accumulate, one quantization of x for all rows.
  // On AVX-512 two blocks a step (acc[r] of 16 lanes: even blocks in lanes 0-7, odd ones in
  // 8-15); an odd last block takes the 8-lane step into its own accumulator.
  void emitInt8Blocks(const BlockMatvec& m, linalg::GenericOp op) {
    const BlockFormat& f = *m.format;
    const int64_t blocks = cast<ShapedType>(m.x.getType()).getDimSize(0);
    const int64_t perStep = t.x86Avx512 && blocks >= 2 ? 2 : 1;
    const int64_t stepped = blocks / perStep * perStep;
    VectorType vec = VectorType::get({perStep * kBlockLanes}, b.getF32Type());
    VectorType tailVec = VectorType::get({kBlockLanes}, b.getF32Type());
    Value scalarZero = arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(0.0f));
    Block& entry = op->getParentOfType<func::FuncOp>().getBody().front();
    Int8Activations x = QuantizeActivations(b, loc, m.x, f.hasMin, entry);
    PairedActivations pairs;
    if (perStep == 2) pairs = pairActivations(f, x, stepped / 2, entry);
    forRowGroups(memref::DimOp::create(b, loc, m.y, 0), t.decodedRows, [&](Value n0, int64_t rows) {
      SmallVector<Value> rowAt = rowValues(n0, rows);
      SmallVector<Value> weightRow = weightRows(m, op, rowAt);
      // rows vector accumulators, then (with a min) rows scalar ones.
      SmallVector<Value> init(rows, zeroVector(vec));
      if (f.hasMin) init.append(rows, scalarZero);
      scf::ForOp loop = forLoopCarrying(index(0), index(stepped), index(perStep), init, [&](Value block, ValueRange acc) {
        return perStep == 2 ? int8PairStep(f, x, pairs, m.weights, weightRow, block, acc)
                            : int8Step(f, x, m.weights, weightRow, block, acc);
      });
      SmallVector<Value> tail(rows, Value());
      SmallVector<Value> mins(rows, Value());
      for (int64_t r = 0; r < rows; ++r)
        if (f.hasMin) mins[r] = loop.getResult(rows + r);
      if (stepped < blocks) {
        SmallVector<Value> last(rows, zeroVector(tailVec));
        if (f.hasMin) last.append(mins);
        last = int8Step(f, x, m.weights, weightRow, index(stepped), last);
        for (int64_t r = 0; r < rows; ++r) {
          tail[r] = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, last[r],
                                                arith::FastMathFlags::reassoc);
          if (f.hasMin) tail[r] = arith::AddFOp::create(b, loc, tail[r], last[rows + r]);
        }
      }
      for (int64_t r = 0; r < rows; ++r) accumulate(m.y, rowAt[r], loop.getResult(r), tail[r] ? tail[r] : mins[r]);
    });
  }

  // One block of every row (8 lanes): acc[r] += (d_w d_x) * lanes, acc[rows + r] += m_w sum_x.
  SmallVector<Value> int8Step(const BlockFormat& f, const Int8Activations& x, Value weights, ArrayRef<Value> weightRow,
                              Value block, ValueRange acc) {
    const int64_t rows = weightRow.size();
    VectorType vec = VectorType::get({kBlockLanes}, b.getF32Type());
    VectorType bytes = VectorType::get({kInt8BlockElements}, b.getI8Type());
    SmallVector<Value> next(acc);
    Value base = arith::MulIOp::create(b, loc, block, index(f.blockBytes));
    Value q = vector::LoadOp::create(b, loc, bytes, x.quants, ValueRange{block, index(0)});
    Value xScale = memref::LoadOp::create(b, loc, x.scales, ValueRange{block});
    Value xSum = f.hasMin ? memref::LoadOp::create(b, loc, x.sums, ValueRange{block}).getResult() : Value();
    prefetchRows(weights, weightRow, add(base, kBlockPrefetchBytes));
    for (int64_t r = 0; r < rows; ++r) {
      BlockReader reader{b, loc, weights, weightRow[r], base};
      Value lanes = Int8DotLanes(b, loc, storedToSigned(f, f.int8Quants(reader)), q, t.x86Avx2);
      auto [scale, min] = f.scaleMin(reader, 0);
      Value both = arith::MulFOp::create(b, loc, scale, xScale);
      Value dot = arith::SIToFPOp::create(b, loc, vec, lanes);
      next[r] = vector::FMAOp::create(b, loc, vector::BroadcastOp::create(b, loc, vec, both), dot, next[r]);
      if (min) next[rows + r] = arith::AddFOp::create(b, loc, next[rows + r], arith::MulFOp::create(b, loc, min, xSum));
    }
    return next;
  }

  // What the AVX-512 pair steps read of x, computed once per matvec instead of per row: for
  // pair p (blocks 2p, 2p + 1), its 64 quants in the format's lane order (int8QuantsPair's
  // chunks, rewritten in place in x.quants, viewed flat), its two scales spread over 16
  // lanes, and for unsigned integers with an offset o the lanes of o . q (negated with VNNI:
  // the rows' vpdpbusd start from them).
  struct PairedActivations {
    Value quants;  // memref<2P * 32 x i8>: x.quants flat
    Value scales;  // memref<P x 16 x f32> (the nibble formats), or null
    Value bias;    // memref<P x 16 x i32>, or null
  };
  PairedActivations pairActivations(const BlockFormat& f, const Int8Activations& x, int64_t count, Block& entry) {
    VectorType bytes = VectorType::get({2 * kInt8BlockElements}, b.getI8Type());
    const bool biased = f.int8Unsigned && f.int8Offset;
    PairedActivations out;
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointAfterValue(x.quants);
      out.quants = memref::CollapseShapeOp::create(b, loc, x.quants, ArrayRef<ReassociationIndices>{{0, 1}});
      b.setInsertionPointToStart(&entry);
      if (f.int8QuantsPair)
        out.scales = memref::AllocaOp::create(b, loc, MemRefType::get({count, 2 * kBlockLanes}, b.getF32Type()));
      if (biased) out.bias = memref::AllocaOp::create(b, loc, MemRefType::get({count, 2 * kBlockLanes}, b.getI32Type()));
    }
    const bool chunked = f.int8QuantsPair;
    VectorType pair = VectorType::get({2}, b.getF32Type());
    forLoop(index(0), index(count), index(1), [&](Value p) {
      Value at = arith::MulIOp::create(b, loc, p, index(2 * kInt8BlockElements));
      Value q = vector::LoadOp::create(b, loc, bytes, out.quants, ValueRange{at});
      if (chunked) {
        SmallVector<int64_t> order;
        for (int64_t chunk : {0, 2, 1, 3})
          for (int64_t i = 0; i < 16; ++i) order.push_back(16 * chunk + i);
        q = vector::ShuffleOp::create(b, loc, q, q, order);
        vector::StoreOp::create(b, loc, q, out.quants, ValueRange{at});
      }
      if (chunked) {
        Value block = arith::MulIOp::create(b, loc, p, index(2));
        Value scales = spread(vector::LoadOp::create(b, loc, pair, x.scales, ValueRange{block}), chunked);
        vector::StoreOp::create(b, loc, scales, out.scales, ValueRange{p, index(0)});
      }
      if (biased) {
        Value bias = Int8DotLanesUnsignedAvx512(b, loc, byteSplat(bytes, f.int8Offset), q, t.int8DotAccumulate);
        if (t.int8DotAccumulate) bias = arith::SubIOp::create(b, loc, zeroLike(bias), bias);
        vector::StoreOp::create(b, loc, bias, out.bias, ValueRange{p, index(0)});
      }
    });
    return out;
  }

  // Blocks `block` and `block` + 1 of every row in 16 lanes (Int8DotLanesAvx512): the scale
  // vector holds d_w d_x of the first block in lanes 0-7 and of the second in 8-15 (in
  // int8QuantsPair's chunk order for the nibble formats, whose pair is one masked load:
  // integers by a byte permute, both f16 scales by a word permute and vcvtph2ps). With VNNI
  // each row's integer lanes are one vpdpbusd.
  SmallVector<Value> int8PairStep(const BlockFormat& f, const Int8Activations& x, const PairedActivations& pairs,
                                  Value weights, ArrayRef<Value> weightRow, Value block, ValueRange acc) {
    const int64_t rows = weightRow.size();
    VectorType vec = VectorType::get({2 * kBlockLanes}, b.getF32Type());
    VectorType pair = VectorType::get({2}, b.getF32Type());
    VectorType bytes = VectorType::get({2 * kInt8BlockElements}, b.getI8Type());
    VectorType lanesI32 = VectorType::get({2 * kBlockLanes}, b.getI32Type());
    SmallVector<Value> next(acc);
    Value second = add(block, 1);
    Value base = arith::MulIOp::create(b, loc, block, index(f.blockBytes));
    Value base2 = add(base, f.blockBytes);
    // q, the scales and the offset's lanes as pairActivations left them (q's and the scales'
    // lanes in int8QuantsPair's 16-value chunk order where the format has it).
    const bool chunked = f.int8QuantsPair;
    Value p = arith::DivUIOp::create(b, loc, block, index(2));
    Value q = vector::LoadOp::create(b, loc, bytes, pairs.quants,
                                     ValueRange{arith::MulIOp::create(b, loc, block, index(kInt8BlockElements))});
    Value negQ;
    if (!f.int8Unsigned) negQ = arith::SubIOp::create(b, loc, byteSplat(bytes, 0), q);
    // Unsigned integers u (q = u - o): lanes(u . q) - o * lanes(1 . q) (with VNNI the rows'
    // dots start from the second's negation).
    Value bias;
    if (pairs.bias) bias = vector::LoadOp::create(b, loc, lanesI32, pairs.bias, ValueRange{p, index(0)});
    // The nibble formats' w scales come spread (spreadHalves), x's are loaded so; the others
    // multiply the two pairs of scalars before one spread.
    Value xScales = chunked ? vector::LoadOp::create(b, loc, vec, pairs.scales, ValueRange{p, index(0)}).getResult()
                            : vector::LoadOp::create(b, loc, pair, x.scales, ValueRange{block}).getResult();
    Value xSum, xSum2;
    if (f.hasMin) {
      xSum = memref::LoadOp::create(b, loc, x.sums, ValueRange{block});
      xSum2 = memref::LoadOp::create(b, loc, x.sums, ValueRange{second});
    }
    prefetchRows(weights, weightRow, add(base, kBlockPrefetchBytes));
    for (int64_t r = 0; r < rows; ++r) {
      BlockReader reader{b, loc, weights, weightRow[r], base}, reader2{b, loc, weights, weightRow[r], base2};
      // The blocks' integers and scales (d: every int8 format's first f16): the nibble
      // formats' from one masked load of the pair; the others' from two loads of integers
      // and two f16 loads (one 64-byte load of a q8_0 pair for its scales ran 5x slower).
      Value stored, scales;
      if (chunked) {
        Value both = loadPair(weights, weightRow[r], base, 2 * f.blockBytes);
        stored = f.int8QuantsPair(b, loc, both);
        scales = spreadHalves(both, 0, f.blockBytes);
      } else {
        stored = concat(f.int8Quants(reader), f.int8Quants(reader2));
        Value both = vector::FromElementsOp::create(b, loc, pair, ValueRange{f.scaleMin(reader, 0).first,
                                                                            f.scaleMin(reader2, 0).first});
        scales = spread(arith::MulFOp::create(b, loc, both, xScales), false);
      }
      Value lanes;
      // (q8_0's signed w as w + 128 from -128 * lanes(q), one vpdpbusd, measured slower under
      // llvm-mca znver4: 2271 against 2099 cycles for 4 pairs, its 64-byte load of those
      // lanes a row and pair costing more of the FP load port than vpabsb and the select.)
      if (!f.int8Unsigned) {
        lanes = Int8DotLanesAvx512(b, loc, stored, q, negQ, t.int8DotAccumulate);
      } else if (t.int8DotAccumulate) {
        lanes = Int8DotLanesUnsignedAvx512(b, loc, stored, q, true, bias);
      } else {
        lanes = Int8DotLanesUnsignedAvx512(b, loc, stored, q, false);
        if (bias) lanes = arith::SubIOp::create(b, loc, lanes, bias);
      }
      Value dot = arith::SIToFPOp::create(b, loc, vec, lanes);
      if (chunked) scales = arith::MulFOp::create(b, loc, scales, xScales);
      next[r] = vector::FMAOp::create(b, loc, scales, dot, next[r]);
      if (f.hasMin) {
        Value min = f.scaleMin(reader, 0).second, min2 = f.scaleMin(reader2, 0).second;
        next[rows + r] = arith::AddFOp::create(b, loc, next[rows + r], arith::MulFOp::create(b, loc, min, xSum));
        next[rows + r] = arith::AddFOp::create(b, loc, next[rows + r], arith::MulFOp::create(b, loc, min2, xSum2));
      }
    }
    return next;
  }

  // K-quant super-blocks dotted with q8_K activations (BlockFormat::SuperBlockInt8; AVX-512:
  // 64 values a vector). Per row and block:
  //   isum (16 int32 lanes) = sum_c lanes(u_c . q_c) * sc(c's groups) - offset * sc * xsum16
  //   acc[r] (16 f32) += (d_w d_x) * isum;  with mins accMin[r] (8 f32) += (dmin_w d_x) * m * xsum32
  // y[n] += sum(acc) - sum(accMin): llama.cpp's vec_dot_<k>_q8_K, exact within a block.
  void emitInt8SuperBlocks(const BlockMatvec& m, linalg::GenericOp op) {
    const BlockFormat& f = *m.format;
    const BlockFormat::SuperBlockInt8& s = *f.superInt8;
    constexpr int64_t kChunk = 64, kGroups = kSuperBlockElements / 16, kMinGroups = kSuperBlockElements / 32;
    const int64_t blocks = cast<ShapedType>(m.x.getType()).getDimSize(0);
    VectorType accType = VectorType::get({kGroups}, b.getF32Type()), minType = VectorType::get({kMinGroups}, b.getF32Type());
    VectorType i32s = VectorType::get({kGroups}, b.getI32Type()), i32Mins = VectorType::get({kMinGroups}, b.getI32Type());
    VectorType bytes = VectorType::get({kChunk}, b.getI8Type());
    Block& entry = op->getParentOfType<func::FuncOp>().getBody().front();
    SuperBlockActivations x = QuantizeSuperBlockActivations(b, loc, m.x, entry, s.order);
    const bool hasMin = s.hasMin;
    forRowGroups(memref::DimOp::create(b, loc, m.y, 0), t.decodedRows, [&](Value n0, int64_t rows) {
      SmallVector<Value> rowAt = rowValues(n0, rows);
      SmallVector<Value> weightRow = weightRows(m, op, rowAt);
      SmallVector<Value> init(rows, zeroVector(accType));
      if (hasMin) init.append(rows, zeroVector(minType));
      auto step = [&](Value block, ValueRange acc) {
        SmallVector<Value> next(acc);
        Value base = arith::MulIOp::create(b, loc, block, index(f.blockBytes));
        SmallVector<Value> q;
        for (int64_t c = 0; c < kSuperBlockElements / kChunk; ++c)
          q.push_back(vector::LoadOp::create(b, loc, bytes, x.quants, ValueRange{block, index(c * kChunk)}));
        Value dx = memref::LoadOp::create(b, loc, x.scales, ValueRange{block});
        Value sums16 = s.offset ? vector::LoadOp::create(b, loc, i32s, x.sums16, ValueRange{block, index(0)}).getResult()
                                : Value();
        Value sums32 = hasMin ? vector::LoadOp::create(b, loc, i32Mins, x.sums32, ValueRange{block, index(0)}).getResult()
                              : Value();
        for (int64_t r = 0; r < rows; ++r) {
          BlockReader reader{b, loc, m.weights, weightRow[r], base};
          auto [scales, minsOfGroups] = s.scalesMins(reader);
          Value isum = zeroLike(scales);
          if (s.offset)
            isum = arith::MulIOp::create(b, loc, arith::MulIOp::create(b, loc, scales, sums16), intSplat(i32s, -s.offset));
          Value narrow = arith::TruncIOp::create(b, loc, VectorType::get({kGroups}, b.getIntegerType(16)), scales);
          for (int64_t c = 0; c < kSuperBlockElements / kChunk; ++c) {
            // Byte pair j of the chunk: values 2j, 2j + 1 of its 32-value group j / 16 (32-value
            // group s, in natural order, holds the 16-value groups 2s and 2s + 1).
            SmallVector<int64_t> groups;
            for (int64_t j = 0; j < kChunk / 2; ++j) {
              const int64_t slot = 2 * c + j / 16, group = s.order.empty() ? slot : s.order[slot];
              groups.push_back(2 * group + j % 16 / 8);
            }
            Value pairScales = vector::ShuffleOp::create(b, loc, narrow, narrow, groups);
            isum = Int8ScaledDotLanesAvx512(b, loc, s.chunk(reader, c), q[c], pairScales, t.int8DotAccumulate, isum);
          }
          auto [d, dmin] = s.d(reader);
          Value both = arith::MulFOp::create(b, loc, d, dx);
          next[r] = vector::FMAOp::create(b, loc, arith::SIToFPOp::create(b, loc, accType, isum),
                                          vector::BroadcastOp::create(b, loc, accType, both), next[r]);
          if (hasMin) {
            Value mins = arith::MulIOp::create(b, loc, minsOfGroups, sums32);
            Value minBoth = arith::MulFOp::create(b, loc, dmin, dx);
            next[rows + r] = vector::FMAOp::create(b, loc, arith::SIToFPOp::create(b, loc, minType, mins),
                                                   vector::BroadcastOp::create(b, loc, minType, minBoth), next[rows + r]);
          }
        }
        return next;
      };
      // Rows of a few blocks (K <= 2048: a layer's projections) unrolled: the loop's own
      // overhead and its exit are a third of a 3-block row's time.
      SmallVector<Value> sums;
      if (blocks <= kUnrolledSuperBlocks) {
        sums = init;
        for (int64_t blk = 0; blk < blocks; ++blk) sums = step(index(blk), sums);
      } else {
        scf::ForOp loop = forLoopCarrying(index(0), index(blocks), index(1), init, step);
        sums.assign(loop.getResults().begin(), loop.getResults().end());
      }
      for (int64_t r = 0; r < rows; ++r) {
        Value minus;
        if (hasMin)
          minus = arith::NegFOp::create(b, loc, vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD,
                                                                            sums[rows + r], arith::FastMathFlags::reassoc));
        accumulate(m.y, rowAt[r], sums[r], minus);
      }
    });
  }

  void emitBlocks(const BlockMatvec& m, linalg::GenericOp op) {
    const BlockFormat& f = *m.format;
    VectorType vec = VectorType::get({kBlockLanes}, b.getF32Type());
    Value zero = zeroVector(vec);
    Value blocks = memref::DimOp::create(b, loc, m.x, 0);
    forRowGroups(memref::DimOp::create(b, loc, m.y, 0), t.rows, [&](Value n0, int64_t rows) {
      SmallVector<Value> rowAt = rowValues(n0, rows);
      SmallVector<Value> weightRow = weightRows(m, op, rowAt);
      SmallVector<Value> init(rows, zero);
      scf::ForOp loop = forLoopCarrying(index(0), blocks, index(1), init, [&](Value block, ValueRange acc) {
        SmallVector<Value> next(acc);
        Value base = arith::MulIOp::create(b, loc, block, index(f.blockBytes));
        prefetchRows(m.weights, weightRow, add(base, kBlockPrefetchBytes));
        int64_t perGroup = f.groupElements / kBlockLanes;
        for (int64_t g = 0; g < f.blockElements / f.groupElements; ++g) {
          SmallVector<Value> xv;
          for (int64_t v = 0; v < perGroup; ++v)
            xv.push_back(vector::LoadOp::create(b, loc, vec, m.x,
                                                ValueRange{block, index(g * f.groupElements + v * kBlockLanes)}));
          Value xSum;
          if (f.hasMin) {
            xSum = xv[0];
            for (int64_t v = 1; v < perGroup; ++v) xSum = arith::AddFOp::create(b, loc, xSum, xv[v]);
          }
          for (int64_t r = 0; r < rows; ++r) {
            BlockReader reader{b, loc, m.weights, weightRow[r], base};
            Value dot;
            for (int64_t v = 0; v < perGroup; ++v) {
              Value q = f.quants(reader, g * perGroup + v);
              dot = v == 0 ? arith::MulFOp::create(b, loc, q, xv[v]).getResult()
                           : vector::FMAOp::create(b, loc, q, xv[v], dot).getResult();
            }
            auto [scale, min] = f.scaleMin(reader, g);
            next[r] = vector::FMAOp::create(b, loc, vector::BroadcastOp::create(b, loc, vec, scale), dot, next[r]);
            if (min)
              next[r] = vector::FMAOp::create(b, loc, vector::BroadcastOp::create(b, loc, vec, min), xSum, next[r]);
          }
        }
        return next;
      });
      for (int64_t r = 0; r < rows; ++r) accumulate(m.y, rowAt[r], loop.getResult(r));
    });
  }

 private:
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

// How a block matvec dots: with 8-bit activations when x is a static count of blocks the
// stack can hold and the format has int8 dots (the K-quants' super-blocks on AVX-512 only).
enum class BlockDots { kF32, kInt8, kInt8SuperBlocks };
BlockDots ChooseBlockDots(const BlockMatvec& m, const MatvecTiles& tiles) {
  int64_t blocks = cast<ShapedType>(m.x.getType()).getDimSize(m.rowDim);
  const BlockFormat& f = *m.format;
  if (ShapedType::isDynamic(blocks) || blocks * f.blockElements > kMaxInt8ActivationBlocks * kInt8BlockElements)
    return BlockDots::kF32;
  if (f.int8Quants && f.blockElements == kInt8BlockElements) return BlockDots::kInt8;
  if (f.superInt8 && f.blockElements == kSuperBlockElements && tiles.x86Avx512) return BlockDots::kInt8SuperBlocks;
  return BlockDots::kF32;
}

bool TakesMatvecKernel(linalg::LinalgOp op) { return MatchDense(op) || MatchBlocks(op); }

// Calls `emit` with `m` itself (one row), or for the M-row form once inside a loop over the
// M rows with x and y the row's views x[m] ([K / B][B]) and y[m] ([N]): each prompt row is a
// matvec that reads the whole weight (a block GEMM reading it once for all rows is not here).
void ForEachMatvecRow(OpBuilder& b, Location loc, const BlockMatvec& m,
                      llvm::function_ref<void(const BlockMatvec&)> emit) {
  if (!m.rowDim) return emit(m);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0), one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(b, loc, zero, memref::DimOp::create(b, loc, m.x, 0), one);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  // The view of row `at` of `v`, without its leading dimension.
  auto rowOf = [&](Value v, Value at) -> Value {
    auto type = cast<MemRefType>(v.getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0)), sizes, strides(type.getRank(), b.getIndexAttr(1));
    offsets[0] = at;
    sizes.push_back(b.getIndexAttr(1));
    for (int64_t d = 1; d < type.getRank(); ++d) sizes.push_back(memref::getMixedSize(b, loc, v, d));
    auto rowType = memref::SubViewOp::inferRankReducedResultType(type.getShape().drop_front(), type, offsets, sizes,
                                                                strides);
    return memref::SubViewOp::create(b, loc, cast<MemRefType>(rowType), v, offsets, sizes, strides);
  };
  BlockMatvec row = m;
  row.x = rowOf(m.x, loop.getInductionVar());
  row.y = rowOf(m.y, loop.getInductionVar());  // rowDim stays the body's loop of n
  emit(row);
}

}  // namespace

void LowerMatvecsToVectorKernels(func::FuncOp kernel, const CPUTarget& target) {
  const MatvecTiles tiles = ChooseMatvecTiles(target);
  SmallVector<linalg::LinalgOp> ops;
  kernel.walk([&](linalg::LinalgOp op) {
    if (op.hasPureBufferSemantics() && TakesMatvecKernel(op)) ops.push_back(op);
  });
  OpBuilder b(kernel.getContext());
  for (linalg::LinalgOp op : ops) {
    b.setInsertionPoint(op);
    MatvecEmitter emitter(b, op.getLoc(), tiles);
    if (std::optional<DenseMatvec> dense = MatchDense(op)) {
      emitter.emitDense(*dense);
    } else {
      BlockMatvec blocks = *MatchBlocks(op);
      auto generic = cast<linalg::GenericOp>(op.getOperation());
      const BlockDots dots = ChooseBlockDots(blocks, tiles);
      ForEachMatvecRow(b, op.getLoc(), blocks, [&](const BlockMatvec& row) {
        switch (dots) {
          case BlockDots::kInt8: return emitter.emitInt8Blocks(row, generic);
          case BlockDots::kInt8SuperBlocks: return emitter.emitInt8SuperBlocks(row, generic);
          case BlockDots::kF32: return emitter.emitBlocks(row, generic);
        }
      });
    }
    op->erase();
  }
}

}  // namespace hexir::codegen
