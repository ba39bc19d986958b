// The f32 GEMM kernel of CUDAMatmul.h (no tensor cores): 256 threads per 128 x 128 output
// tile, each holding an 8 x 8 block of accumulators in registers (rows 4 ty + i and
// 64 + 4 ty + i, columns 4 tx + j and 64 + 4 tx + j of the tile, tx = tid % 16,
// ty = tid / 16), fed from two shared-memory stages of 8-deep k tiles:
//   A^T [8 k][128 m]  and  B [8 k][128 n]      (f32 words; stage st at st * 2048)
// so that each k step reads its 8 A and 8 B values as four 16-byte shared loads. Each thread
// copies one 4-element chunk of A and of B per k tile (a 16-byte global load when rows are
// 16-byte aligned, else 4 bounds-checked scalar loads; zeros past M, N, K), issued before the
// stage in hand is multiplied and stored to the other stage after it (one barrier a k tile).
//
// TF32 (s.tf32, hexir-compile --allow-tf32): the same stages, each element rounded to TF32
// (cvt.rna) as it is stored and rows padded to 136 words (so that the 4 k rows and 8 m or n
// columns a fragment load touches fall in 32 different banks); the 8 warps as 2 x 4 warp
// tiles of 64 x 32, each k tile one m16n8k8 tf32 `mma.sync` per 16 x 8 fragment (4 x 4 per
// warp, f32 accumulators: 64 a thread, as in the f32 kernel); fragments read as scalar
// shared loads:
//   A fragment (rows m0 = 16 i + lane / 4, k = lane % 4): A[m0][k], A[m0 + 8][k],
//              A[m0][k + 4], A[m0 + 8][k + 4]
//   B fragment (column n0 = 8 j + lane / 4):            B[k][n0], B[k + 4][n0]
//   C registers r: row m0 + 8 (r / 2), column 8 j + 2 (lane % 4) + r % 2.
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
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
constexpr int64_t kTf32Padding = 8;     // words after each stage row of the TF32 kernel
// The TF32 kernel's warp tiles: 2 x 4 warps of 64 x 32, 4 x 4 fragments of 16 x 8.
constexpr int64_t kTf32WarpsN = 4, kTf32WarpRows = 64, kTf32WarpCols = 32;
constexpr int64_t kTf32FragmentsM = kTf32WarpRows / 16, kTf32FragmentsN = kTf32WarpCols / 8;

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
  SmallVector<Value> multiplyTf32(Value stage, ValueRange acc);
  void epilogueTf32(ValueRange acc);
  // Words per stage row (k) and per stage (A^T then B).
  int64_t rowWords() const { return kTile + (s.tf32 ? kTf32Padding : 0); }
  int64_t stageWords() const { return 2 * kDepth * rowWords(); }
  // `v` as the kernel multiplies it: rounded to TF32 (still an f32 bit pattern) or as is.
  Value operand(Value v) {
    if (!s.tf32) return v;
    Value t = NVVM::ConvertFloatToTF32Op::create(b, loc, b.getI32Type(), v, NVVM::FPRoundingMode::RNA);
    return LLVM::BitcastOp::create(b, loc, f32(), t);
  }
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
void SimtKernel::storeTile(Value stage, ArrayRef<Value> loaded) {
  SmallVector<Value> chunks;
  for (Value v : loaded) chunks.push_back(operand(v));
  Value stageWord = mul(stage, idx(stageWords())), bWord = add(stageWord, idx(kDepth * rowWords()));
  Value pairRow = div(tid, idx(2)), pairK = mul(rem(tid, idx(2)), idx(kVector));
  auto transposed = [&](Value first, ArrayRef<Value> values) {
    for (int64_t e = 0; e < kVector; ++e)
      LLVM::StoreOp::create(b, loc, values[e],
                            sharedWord(add(first, add(mul(add(pairK, idx(e)), idx(rowWords())), pairRow))),
                            /*alignment=*/4);
  };
  transposed(stageWord, ArrayRef<Value>(chunks).take_front(kVector));
  if (s.transposedB) {
    transposed(bWord, ArrayRef<Value>(chunks).drop_front(kVector));
    return;
  }
  Value v = LLVM::PoisonOp::create(b, loc, chunkType());
  for (int64_t e = 0; e < kVector; ++e)
    v = LLVM::InsertElementOp::create(b, loc, v, chunks[kVector + e], i32Const(e));
  Value word = add(bWord, add(mul(div(tid, idx(32)), idx(rowWords())), mul(rem(tid, idx(32)), idx(kVector))));
  LLVM::StoreOp::create(b, loc, v, sharedWord(word), /*alignment=*/16);
}

// acc[8 i + j] += A[row i][k] B[k][col j] over the 8 k of `stage`.
SmallVector<Value> SimtKernel::multiply(Value stage, ValueRange accIn) {
  SmallVector<Value> acc(accIn.begin(), accIn.end());
  Value stageWord = mul(stage, idx(stageWords())), bWord = add(stageWord, idx(kDepth * rowWords()));
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
    SmallVector<Value> a = eight(add(stageWord, idx(k * rowWords())), ty);
    SmallVector<Value> bv = eight(add(bWord, idx(k * rowWords())), tx);
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

// acc[4 (4 i + j) + r] += the m16n8k8 tf32 product of fragments (i, j) over the 8 k of `stage`.
SmallVector<Value> SimtKernel::multiplyTf32(Value stage, ValueRange accIn) {
  MLIRContext* ctx = b.getContext();
  SmallVector<Value> acc(accIn.begin(), accIn.end());
  Value lane = rem(tid, idx(32)), warp = div(tid, idx(32));
  Value group = div(lane, idx(4)), inGroup = rem(lane, idx(4));
  Value warpRow = mul(div(warp, idx(kTf32WarpsN)), idx(kTf32WarpRows));
  Value warpCol = mul(rem(warp, idx(kTf32WarpsN)), idx(kTf32WarpCols));
  Value stageWord = mul(stage, idx(stageWords())), bWord = add(stageWord, idx(kDepth * rowWords()));
  auto word = [&](Value first, Value k, int64_t kPlus, Value x, int64_t xPlus) {
    Value at = add(first, add(mul(add(k, idx(kPlus)), idx(rowWords())), add(x, idx(xPlus))));
    return LLVM::LoadOp::create(b, loc, b.getI32Type(), sharedWord(at), /*alignment=*/4).getResult();
  };
  SmallVector<SmallVector<Value, 4>> a(kTf32FragmentsM), bFrag(kTf32FragmentsN);
  for (int64_t i = 0; i < kTf32FragmentsM; ++i) {
    Value m0 = add(warpRow, add(group, idx(16 * i)));
    a[i] = {word(stageWord, inGroup, 0, m0, 0), word(stageWord, inGroup, 0, m0, 8),
            word(stageWord, inGroup, 4, m0, 0), word(stageWord, inGroup, 4, m0, 8)};
  }
  for (int64_t j = 0; j < kTf32FragmentsN; ++j) {
    Value n0 = add(warpCol, add(group, idx(8 * j)));
    bFrag[j] = {word(bWord, inGroup, 0, n0, 0), word(bWord, inGroup, 4, n0, 0)};
  }
  auto result = LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(4, f32()));
  for (int64_t i = 0; i < kTf32FragmentsM; ++i)
    for (int64_t j = 0; j < kTf32FragmentsN; ++j) {
      int64_t at = 4 * (i * kTf32FragmentsN + j);
      SmallVector<Value> c(acc.begin() + at, acc.begin() + at + 4);
      Value d = NVVM::MmaOp::create(b, loc, result, a[i], bFrag[j], c, ArrayRef<int64_t>{16, 8, 8},
                                    std::nullopt, std::nullopt,
                                    std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::tf32, NVVM::MMATypes::tf32},
                                    std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row, NVVM::MMALayout::col});
      for (int64_t r = 0; r < 4; ++r) acc[at + r] = LLVM::ExtractValueOp::create(b, loc, d, r);
    }
  return acc;
}

// Fragment (i, j) register r: row warpRow + 16 i + lane / 4 + 8 (r / 2), column warpCol +
// 8 j + 2 (lane % 4) + r % 2 of the tile.
void SimtKernel::epilogueTf32(ValueRange acc) {
  Value lane = rem(tid, idx(32)), warp = div(tid, idx(32));
  Value rowOfLane = add(add(rowBase, mul(div(warp, idx(kTf32WarpsN)), idx(kTf32WarpRows))), div(lane, idx(4)));
  Value colOfLane = add(add(colBase, mul(rem(warp, idx(kTf32WarpsN)), idx(kTf32WarpCols))),
                        mul(rem(lane, idx(4)), idx(2)));
  for (int64_t i = 0; i < kTf32FragmentsM; ++i)
    for (int64_t j = 0; j < kTf32FragmentsN; ++j)
      for (int64_t r = 0; r < 4; ++r)
        StoreMatmulElement(b, loc, body, batchIndex, acc[4 * (i * kTf32FragmentsN + j) + r],
                           add(rowOfLane, idx(16 * i + 8 * (r / 2))), add(colOfLane, idx(8 * j + r % 2)), M, N);
}

LogicalResult SimtKernel::build(func::FuncOp kernel) {
  if (s.tileM != kTile || s.tileN != kTile || s.threads() != 256 || s.splits != 1)
    return emitError(loc, "internal: f32 matmul tile ") << s.tileM << "x" << s.tileN << ", " << s.threads()
                                                        << " threads";
  smem = pointer(WorkgroupArray(b, loc, kernel, f32(), 2 * stageWords()), 3);
  aBase = pointer(body.a, 1), bBase = pointer(body.b, 1);
  MatmulExtents extents = ReadMatmulExtents(b, loc, body, s.transposedB);
  M = extents.M, K = extents.K, N = extents.N;
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
    Value stage = rem(kt, idx(2));
    SmallVector<Value> acc = s.tf32 ? multiplyTf32(stage, kLoop.getRegionIterArgs())
                                    : multiply(stage, kLoop.getRegionIterArgs());
    storeTile(rem(next, idx(2)), chunks);
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, acc);
  }
  // The loop's last barrier also ends every read of the stages before the next tile's stores.
  if (s.tf32)
    epilogueTf32(kLoop.getResults());
  else
    epilogue(kLoop.getResults());
  return success();
}
}  // namespace

LogicalResult BuildSimtMatmul(OpBuilder& b, func::FuncOp kernel, const TensorCoreMatmul& s,
                              const MatmulBody& body) {
  return SimtKernel(b, kernel.getLoc(), s, body).build(kernel);
}

}  // namespace hexir::cuda
