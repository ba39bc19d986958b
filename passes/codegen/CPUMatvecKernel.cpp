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
#include "passes/codegen/CPUMatvecEmitter.h"
#include "passes/codegen/CPUUnitStride.h"

namespace hexir::codegen {
using namespace mlir;
using namespace matvec;

namespace {

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


}  // namespace

namespace matvec {

void MatvecEmitter::emitDense(const DenseMatvec& m) {
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

void MatvecEmitter::emitBlocks(const BlockMatvec& m, linalg::GenericOp op) {
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

}  // namespace matvec

namespace {

// How a block matvec dots: with 8-bit activations when x is a static count of blocks the
// stack can hold and the format has int8 dots (the K-quants' super-blocks on AVX-512 only).
enum class BlockDots { kF32, kInt8, kInt8SuperBlocks };
BlockDots ChooseBlockDots(const BlockFormat& f, int64_t blocks, bool x86Avx512) {
  if (ShapedType::isDynamic(blocks) || blocks * f.blockElements > kMaxInt8ActivationBlocks * kInt8BlockElements)
    return BlockDots::kF32;
  if (f.int8Quants && f.blockElements == kInt8BlockElements) return BlockDots::kInt8;
  if (f.superInt8 && f.blockElements == kSuperBlockElements && x86Avx512) return BlockDots::kInt8SuperBlocks;
  return BlockDots::kF32;
}
BlockDots ChooseBlockDots(const BlockMatvec& m, const MatvecTiles& tiles) {
  return ChooseBlockDots(*m.format, cast<ShapedType>(m.x.getType()).getDimSize(m.rowDim), tiles.x86Avx512);
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

bool QuantizesActivations(linalg::LinalgOp op) {
  auto name = op->getAttrOfType<StringAttr>(kBlockMatvecAttr);
  const BlockFormat* format = name ? FindBlockFormat(name.getValue()) : nullptr;
  if (!format || op.getNumLoops() != 3 || op.getNumDpsInputs() != 1) return false;
  auto x = dyn_cast<ShapedType>(op.getDpsInputs()[0].getType());
  return x && x.getRank() == 2 && ChooseBlockDots(*format, x.getDimSize(0), /*x86Avx512=*/true) != BlockDots::kF32;
}

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
