// The matvec kernels that dot with 8-bit activations (CPUMatvecKernel.h; the emitter is
// CPUMatvecEmitter.h): the 32-value block formats (q8_0, q4_0, q4_1, q5_0) on ggml's q8_0/q8_1
// activations, and the K-quants' super-blocks (q4_k, q5_k, q6_k; AVX-512) on its q8_K ones.
#include <algorithm>

#include "passes/codegen/CPUMatvecEmitter.h"

namespace hexir::codegen::matvec {

namespace {

// Super-block rows of at most this many blocks are unrolled (emitInt8SuperBlocks).
constexpr int64_t kUnrolledSuperBlocks = 8;

}  // namespace

// int8 dots (formats with int8Quants, K static): per block b and row r,
//   acc[r] += (d_w * d_x[b]) * lanes(w . q[b])       (+ m_w * sum_x[b] into a scalar)
// as ggml's vec_dot_<type>_q8_0 / q8_1 accumulate, one quantization of x for all rows.
// On AVX-512 two blocks a step (acc[r] of 16 lanes: even blocks in lanes 0-7, odd ones in
// 8-15); an odd last block takes the 8-lane step into its own accumulator.
void MatvecEmitter::emitInt8Blocks(const BlockMatvec& m, linalg::GenericOp op) {
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
    // Four blocks a step where int8QuadStep applies, then pairs (or single blocks).
    const int64_t quads = pairs.quadScales ? stepped / 4 * 4 : 0;
    if (quads) {
      scf::ForOp quadLoop = forLoopCarrying(index(0), index(quads), index(4), init, [&](Value block, ValueRange acc) {
        return int8QuadStep(f, pairs, m.weights, weightRow, block, acc);
      });
      init.assign(quadLoop.getResults().begin(), quadLoop.getResults().end());
    }
    scf::ForOp loop = forLoopCarrying(index(quads), index(stepped), index(perStep), init,
                                      [&](Value block, ValueRange acc) {
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
SmallVector<Value> MatvecEmitter::int8Step(const BlockFormat& f, const Int8Activations& x, Value weights,
                                           ArrayRef<Value> weightRow, Value block, ValueRange acc) {
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

namespace {
// int8QuadStep's lane j of 16 holds two adjacent lanes of one pair's dot: pair j / 8, its lanes
// 2 (j % 8) and 2 (j % 8) + 1, which the chunk order gives to that pair's block (j / 2) % 2.
int64_t QuadLaneBlock(int64_t j) { return 2 * (j / 8) + (j / 2) % 2; }
}  // namespace

MatvecEmitter::PairedActivations MatvecEmitter::pairActivations(const BlockFormat& f, const Int8Activations& x,
                                                                int64_t count, Block& entry) {
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
  if (chunked && f.int8Unsigned && !f.hasMin && count >= 2) {
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&entry);
      out.quadScales = memref::AllocaOp::create(b, loc, MemRefType::get({count / 2, 2 * kBlockLanes}, b.getF32Type()));
    }
    VectorType four = VectorType::get({4}, b.getF32Type());
    SmallVector<int64_t> lanes;
    for (int64_t j = 0; j < 2 * kBlockLanes; ++j) lanes.push_back(QuadLaneBlock(j));
    forLoop(index(0), index(count / 2), index(1), [&](Value qd) {
      Value v = vector::LoadOp::create(b, loc, four, x.scales, ValueRange{arith::MulIOp::create(b, loc, qd, index(4))});
      vector::StoreOp::create(b, loc, vector::ShuffleOp::create(b, loc, v, v, lanes), out.quadScales,
                              ValueRange{qd, index(0)});
    });
  }
  if (!chunked && !biased) return out;  // q8_0: its pairs read x.quants as they are
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
SmallVector<Value> MatvecEmitter::int8PairStep(const BlockFormat& f, const Int8Activations& x,
                                               const PairedActivations& pairs, Value weights,
                                               ArrayRef<Value> weightRow, Value block, ValueRange acc) {
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
    // (q8_0's signed w as w + 128 from -128 * lanes(q), one vpdpbusd, measured slower under
    // llvm-mca znver4: 2271 against 2099 cycles for 4 pairs, its 64-byte load of those
    // lanes a row and pair costing more of the FP load port than vpabsb and the select.)
    Value lanes = f.int8Unsigned ? unsignedDotLanes(stored, q, bias)
                                 : Int8DotLanesAvx512(b, loc, stored, q, negQ, t.int8DotAccumulate);
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

// lanes(u . q) - lanes(o . q) for unsigned integers u and the offset's lanes `bias` (null
// without an offset): with VNNI one vpdpbusd starting from the bias's negation (as
// pairActivations stores it then), else vpmaddubsw + vpmaddwd and a subtraction.
Value MatvecEmitter::unsignedDotLanes(Value u, Value q, Value bias) {
  if (t.int8DotAccumulate) return Int8DotLanesUnsignedAvx512(b, loc, u, q, true, bias);
  Value lanes = Int8DotLanesUnsignedAvx512(b, loc, u, q, false);
  return bias ? arith::SubIOp::create(b, loc, lanes, bias).getResult() : lanes;
}

// Blocks `block` .. `block` + 3 of every row (the nibble formats without a min, AVX-512): two
// pairs' integer lanes as in int8PairStep, then adjacent lanes of both summed into one
// vector (two permutes and an add), so the conversion, the scale and the FMA run once for
// four blocks: acc[r] += (d_w d_x in QuadLaneBlock's lanes) * lanes.
SmallVector<Value> MatvecEmitter::int8QuadStep(const BlockFormat& f, const PairedActivations& pairs, Value weights,
                                               ArrayRef<Value> weightRow, Value block, ValueRange acc) {
  const int64_t rows = weightRow.size();
  VectorType vec = VectorType::get({2 * kBlockLanes}, b.getF32Type());
  VectorType bytes = VectorType::get({2 * kInt8BlockElements}, b.getI8Type());
  VectorType lanesI32 = VectorType::get({2 * kBlockLanes}, b.getI32Type());
  VectorType halves = VectorType::get({32}, b.getF16Type());
  SmallVector<Value> next(acc);
  Value p = arith::DivUIOp::create(b, loc, block, index(2));
  Value qd = arith::DivUIOp::create(b, loc, block, index(4));
  Value q[2], bias[2];
  for (int64_t h = 0; h < 2; ++h) {
    Value at = arith::MulIOp::create(b, loc, add(block, 2 * h), index(kInt8BlockElements));
    q[h] = vector::LoadOp::create(b, loc, bytes, pairs.quants, ValueRange{at});
    if (pairs.bias) bias[h] = vector::LoadOp::create(b, loc, lanesI32, pairs.bias, ValueRange{add(p, h), index(0)});
  }
  Value xScales = vector::LoadOp::create(b, loc, vec, pairs.quadScales, ValueRange{qd, index(0)});
  Value base = arith::MulIOp::create(b, loc, block, index(f.blockBytes));
  prefetchRows(weights, weightRow, add(base, kBlockPrefetchBytes));
  SmallVector<int64_t> even, odd, scaleLanes;
  for (int64_t j = 0; j < 2 * kBlockLanes; ++j) {
    even.push_back(j / 8 * 16 + 2 * (j % 8));
    odd.push_back(j / 8 * 16 + 2 * (j % 8) + 1);
    // Block QuadLaneBlock(j)'s d: pair j / 8's half at byte (j / 2 % 2) * blockBytes.
    scaleLanes.push_back(j / 8 * 32 + (j / 2 % 2) * f.blockBytes / 2);
  }
  for (int64_t r = 0; r < rows; ++r) {
    Value both[2], lanes[2];
    for (int64_t h = 0; h < 2; ++h) {
      both[h] = loadPair(weights, weightRow[r], add(base, 2 * h * f.blockBytes), 2 * f.blockBytes);
      lanes[h] = unsignedDotLanes(f.int8QuantsPair(b, loc, both[h]), q[h], bias[h]);
    }
    Value summed = arith::AddIOp::create(b, loc, vector::ShuffleOp::create(b, loc, lanes[0], lanes[1], even),
                                         vector::ShuffleOp::create(b, loc, lanes[0], lanes[1], odd));
    Value h0 = vector::BitCastOp::create(b, loc, halves, both[0]), h1 = vector::BitCastOp::create(b, loc, halves, both[1]);
    Value wScales = arith::ExtFOp::create(b, loc, vec, vector::ShuffleOp::create(b, loc, h0, h1, scaleLanes).getResult());
    Value scales = arith::MulFOp::create(b, loc, wScales, xScales);
    next[r] = vector::FMAOp::create(b, loc, scales, arith::SIToFPOp::create(b, loc, vec, summed), next[r]);
  }
  return next;
}

// K-quant super-blocks dotted with q8_K activations (BlockFormat::SuperBlockInt8; AVX-512:
// 64 values a vector). Per row and block:
//   isum (16 int32 lanes) = sum_c lanes(u_c . q_c) * sc(c's groups) - offset * sc * xsum16
//   acc[r] (16 f32) += (d_w d_x) * isum;  with mins accMin[r] (8 f32) += (dmin_w d_x) * m * xsum32
// y[n] += sum(acc) - sum(accMin): llama.cpp's vec_dot_<k>_q8_K, exact within a block.
void MatvecEmitter::emitInt8SuperBlocks(const BlockMatvec& m, linalg::GenericOp op) {
  const BlockFormat& f = *m.format;
  const BlockFormat::SuperBlockInt8& s = *f.superInt8;
  constexpr int64_t kChunk = 64, kGroups = kSuperBlockElements / 16, kMinGroups = kSuperBlockElements / 32;
  const int64_t blocks = cast<ShapedType>(m.x.getType()).getDimSize(0);
  VectorType accType = VectorType::get({kGroups}, b.getF32Type()), minType = VectorType::get({kMinGroups}, b.getF32Type());
  VectorType i32s = VectorType::get({kGroups}, b.getI32Type()), i32Mins = VectorType::get({kMinGroups}, b.getI32Type());
  VectorType bytes = VectorType::get({kChunk}, b.getI8Type());
  Block& entry = op->getParentOfType<func::FuncOp>().getBody().front();
  SuperBlockActivations x = QuantizeSuperBlockActivations(b, loc, m.x, entry, s.order);
  const bool hasMin = f.hasMin;
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

}  // namespace hexir::codegen::matvec
