// The f32 GEMM kernel of CUDAMatmul.h (no tensor cores): 256 threads per 128 x 128 output
// tile, each holding an 8 x 8 block of accumulators in registers (rows 4 ty + i and
// 64 + 4 ty + i, columns 4 tx + j and 64 + 4 tx + j of the tile, tx = tid % 16,
// ty = tid / 16), fed from two shared-memory stages of 8-deep k tiles:
//   A^T [8 k][128 m]  and  B [8 k][128 n]      (f32 words; stage st at st * 2048)
// so that each k step reads its 8 A and 8 B values as four 16-byte shared loads. Each thread
// copies one 4-element chunk of A and of B per k tile (a 16-byte global load when rows are
// 16-byte aligned, else 4 bounds-checked scalar loads; zeros past M, N, K), issued before the
// stage in hand is multiplied and stored to the other stage after it (one barrier a k tile).
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "passes/codegen/CUDAColumnReduce.h"  // WorkgroupArray
#include "passes/codegen/CUDAMatmulBody.h"

namespace hexir::cuda {
using namespace mlir;

namespace {
constexpr int64_t kTile = 128;          // tileM = tileN
constexpr int64_t kDepth = 8;           // k per stage
constexpr int64_t kVector = 4;          // f32 per 16-byte chunk
constexpr int64_t kHalf = kTile / 2;    // a thread's second row (column) block starts here
constexpr int64_t kStageWords = 2 * kDepth * kTile;

class SimtKernel : KernelArith {
 public:
  SimtKernel(OpBuilder& b, Location loc, const TensorCoreMatmul& s, const MatmulBody& body)
      : KernelArith{b, loc}, s(s), body(body) {}

  LogicalResult build(func::FuncOp kernel);

 private:
  const TensorCoreMatmul& s;
  const MatmulBody& body;
  Value smem;           // !llvm.ptr<3>
  Value aBase, bBase;   // !llvm.ptr<1>
  Value tid, tx, ty;
  Value batchIndex, rowBase, colBase;
  Value M, N, K;

  Type f32() { return b.getF32Type(); }
  VectorType chunkType() { return VectorType::get({kVector}, f32()); }
  Value i32Const(int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v); }
  SmallVector<Value> at(Value memref, Value x, Value y) { return MatmulIndices(memref, batchIndex, x, y); }
  SmallVector<Value> loadChunk(Value memref, Value base, ArrayRef<Value> indices, Value rowInBounds);
  SmallVector<Value> loadTile(Value kTile);
  void storeTile(Value stage, ArrayRef<Value> chunks);
  SmallVector<Value> multiply(Value stage, ValueRange acc);
  Value sharedWord(Value word) { return byteOffset(smem, i32(mul(word, idx(4))), 3); }
  void epilogue(ValueRange acc);
};

// kVector elements of `memref` from `indices` (the last one the chunk's first element along
// the contiguous dim): one 16-byte load when rows are aligned (the chunk is then entirely
// inside or outside the extent), else scalar loads; zeros outside.
SmallVector<Value> SimtKernel::loadChunk(Value memref, Value base, ArrayRef<Value> indices,
                                         Value rowInBounds) {
  auto type = cast<MemRefType>(memref.getType());
  Value extent = memref::DimOp::create(b, loc, memref, type.getRank() - 1);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  SmallVector<Value> values;
  if (s.aligned) {
    Value inside = both(rowInBounds, ult(indices.back(), extent));
    Value offset = arith::SelectOp::create(b, loc, inside, mul(linearIndex(memref, indices), idx(4)), idx(0));
    Value v = LLVM::LoadOp::create(b, loc, chunkType(), byteOffset(base, i64(offset), 1), /*alignment=*/16);
    for (int64_t e = 0; e < kVector; ++e) {
      Value x = LLVM::ExtractElementOp::create(b, loc, v, i32Const(e));
      values.push_back(arith::SelectOp::create(b, loc, inside, x, zero));
    }
    return values;
  }
  for (int64_t e = 0; e < kVector; ++e) {
    SmallVector<Value> element(indices.begin(), indices.end());
    Value col = add(indices.back(), idx(e));
    Value ok = both(rowInBounds, ult(col, extent));
    for (Value& i : element) i = arith::SelectOp::create(b, loc, ok, i, idx(0));
    element.back() = arith::SelectOp::create(b, loc, ok, col, idx(0));
    Value v = memref::LoadOp::create(b, loc, memref, element);
    values.push_back(arith::SelectOp::create(b, loc, ok, v, zero));
  }
  return values;
}

// This thread's chunk of A (row tid / 2, k 4 (tid % 2)) and of B ([K][N]: k tid / 32, column
// 4 (tid % 32); [N][K]: column tid / 2, k 4 (tid % 2)) of k tile `kTile`.
SmallVector<Value> SimtKernel::loadTile(Value kTile) {
  Value k0 = mul(kTile, idx(kDepth));
  Value pairRow = div(tid, idx(2)), pairK = add(k0, mul(rem(tid, idx(2)), idx(kVector)));
  Value row = add(rowBase, pairRow);
  SmallVector<Value> chunks = loadChunk(body.a, aBase, at(body.a, row, pairK), ult(row, M));
  if (s.transposedB) {
    Value col = add(colBase, pairRow);
    llvm::append_range(chunks, loadChunk(body.b, bBase, at(body.b, col, pairK), ult(col, N)));
  } else {
    Value k = add(k0, div(tid, idx(32)));
    Value col = add(colBase, mul(rem(tid, idx(32)), idx(kVector)));
    llvm::append_range(chunks, loadChunk(body.b, bBase, at(body.b, k, col), ult(k, K)));
  }
  return chunks;
}

// The chunks of loadTile into `stage`: A transposed (4 scalar stores), B [K][N] as one
// 16-byte store, B [N][K] transposed.
void SimtKernel::storeTile(Value stage, ArrayRef<Value> chunks) {
  Value stageWord = mul(stage, idx(kStageWords)), bWord = add(stageWord, idx(kDepth * kTile));
  Value pairRow = div(tid, idx(2)), pairK = mul(rem(tid, idx(2)), idx(kVector));
  auto transposed = [&](Value first, ArrayRef<Value> values) {
    for (int64_t e = 0; e < kVector; ++e)
      LLVM::StoreOp::create(b, loc, values[e], sharedWord(add(first, add(mul(add(pairK, idx(e)), idx(kTile)), pairRow))),
                            /*alignment=*/4);
  };
  transposed(stageWord, chunks.take_front(kVector));
  if (s.transposedB) {
    transposed(bWord, chunks.drop_front(kVector));
    return;
  }
  Value v = LLVM::PoisonOp::create(b, loc, chunkType());
  for (int64_t e = 0; e < kVector; ++e)
    v = LLVM::InsertElementOp::create(b, loc, v, chunks[kVector + e], i32Const(e));
  Value word = add(bWord, add(mul(div(tid, idx(32)), idx(kTile)), mul(rem(tid, idx(32)), idx(kVector))));
  LLVM::StoreOp::create(b, loc, v, sharedWord(word), /*alignment=*/16);
}

// acc[8 i + j] += A[row i][k] B[k][col j] over the 8 k of `stage`.
SmallVector<Value> SimtKernel::multiply(Value stage, ValueRange accIn) {
  SmallVector<Value> acc(accIn.begin(), accIn.end());
  Value stageWord = mul(stage, idx(kStageWords)), bWord = add(stageWord, idx(kDepth * kTile));
  auto eight = [&](Value first, Value lane) {  // words 4 lane .. +3 and 64 + 4 lane .. +3
    SmallVector<Value> values;
    for (int64_t half = 0; half < 2; ++half) {
      Value word = add(first, add(mul(lane, idx(kVector)), idx(half * kHalf)));
      Value v = LLVM::LoadOp::create(b, loc, chunkType(), sharedWord(word), /*alignment=*/16);
      for (int64_t e = 0; e < kVector; ++e) values.push_back(LLVM::ExtractElementOp::create(b, loc, v, i32Const(e)));
    }
    return values;
  };
  for (int64_t k = 0; k < kDepth; ++k) {
    SmallVector<Value> a = eight(add(stageWord, idx(k * kTile)), ty);
    SmallVector<Value> bv = eight(add(bWord, idx(k * kTile)), tx);
    for (int64_t i = 0; i < 8; ++i)
      for (int64_t j = 0; j < 8; ++j) acc[8 * i + j] = LLVM::FMAOp::create(b, loc, a[i], bv[j], acc[8 * i + j]);
  }
  return acc;
}

// Accumulator 8 i + j: row 4 ty + i % 4 (+ 64 for i >= 4), column likewise with tx and j.
void SimtKernel::epilogue(ValueRange acc) {
  auto offset = [&](Value lane, int64_t i) { return add(mul(lane, idx(kVector)), idx(i % 4 + (i / 4) * kHalf)); };
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 8; ++j)
      StoreMatmulElement(b, loc, body, batchIndex, acc[8 * i + j], add(rowBase, offset(ty, i)),
                         add(colBase, offset(tx, j)), M, N);
}

LogicalResult SimtKernel::build(func::FuncOp kernel) {
  if (s.tileM != kTile || s.tileN != kTile || s.threads() != 256 || s.splits != 1)
    return emitError(loc, "internal: f32 matmul tile ") << s.tileM << "x" << s.tileN << ", " << s.threads()
                                                        << " threads";
  smem = pointer(WorkgroupArray(b, loc, kernel, f32(), 2 * kStageWords), 3);
  aBase = pointer(body.a, 1), bBase = pointer(body.b, 1);
  int64_t rank = cast<MemRefType>(body.a.getType()).getRank();
  M = memref::DimOp::create(b, loc, body.a, rank - 2);
  K = memref::DimOp::create(b, loc, body.a, rank - 1);
  N = memref::DimOp::create(b, loc, body.b, rank - (s.transposedB ? 2 : 1));
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  tx = rem(tid, idx(16)), ty = div(tid, idx(16));
  Value kTiles = ceilDiv(K, kDepth);
  TileWalk walk = BeginTileWalk(*this, s, M, N);
  batchIndex = walk.batchIndex, rowBase = walk.rowBase, colBase = walk.colBase;

  storeTile(idx(0), loadTile(idx(0)));
  gpu::BarrierOp::create(b, loc);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  auto kLoop = scf::ForOp::create(b, loc, idx(0), kTiles, idx(1), SmallVector<Value>(64, zero));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(kLoop.getBody());
    Value kt = kLoop.getInductionVar(), next = add(kt, idx(1));
    SmallVector<Value> chunks = loadTile(next);  // past K: zeros, stored but never read
    SmallVector<Value> acc = multiply(rem(kt, idx(2)), kLoop.getRegionIterArgs());
    storeTile(rem(next, idx(2)), chunks);
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, acc);
  }
  // The loop's last barrier also ends every read of the stages before the next tile's stores.
  epilogue(kLoop.getResults());
  return success();
}
}  // namespace

LogicalResult BuildSimtMatmul(OpBuilder& b, func::FuncOp kernel, const TensorCoreMatmul& s,
                              const MatmulBody& body) {
  return SimtKernel(b, kernel.getLoc(), s, body).build(kernel);
}

}  // namespace hexir::cuda
