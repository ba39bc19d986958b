// The tensor-core GEMM kernel of CUDAMatmul.h, built over the bufferized kernel's arguments:
// cp.async stages, ldmatrix fragments, mma.sync m16n8k16 accumulators, the fused epilogue.
#include <functional>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "passes/codegen/CUDAColumnReduce.h"
#include "passes/codegen/CUDAMatmul.h"
#include "passes/codegen/CUDAMatmulBody.h"

namespace hexir::cuda {
using namespace mlir;

namespace {
constexpr int64_t kTileK = kMatmulTileK;
constexpr int64_t kChunk = 8;       // elements per 16-byte chunk

class MatmulKernel : KernelArith {
 public:
  MatmulKernel(OpBuilder& b, Location loc, const TensorCoreMatmul& s, const MatmulBody& body)
      : KernelArith{b, loc}, s(s), body(body) {}

  LogicalResult build(func::FuncOp kernel);

 private:
  const TensorCoreMatmul& s;
  const MatmulBody& body;
  Type element;                    // bf16 or f16
  Value smem, smemBase;            // the stages (memref and !llvm.ptr<3>)
  Value aBase, bBase;              // !llvm.ptr<1>
  Value tid, lane, warpRow, warpCol;
  Value batchIndex, rowBase, colBase;
  Value M, N, K;
  int64_t warpTileM() const { return s.tileM / s.warpsM; }
  int64_t warpTileN() const { return s.tileN / s.warpsN; }
  int64_t fragmentsM() const { return warpTileM() / 16; }
  int64_t fragmentsN() const { return warpTileN() / 8; }

  // Element offsets inside one stage: chunk c of row r of a tile whose rows hold
  // `rowElements` (32, 64 or 128). Rows of 4 chunks (A [tileM][32], B^T [tileN][32]):
  // c ^ ((r >> 1) & 3); of 8 or 16 chunks (B [32][tileN]): c ^ (r & 7). Either
  // way the 8 rows one ldmatrix matrix reads fall in 8 different 16-byte bank groups.
  Value swizzledOffset(Value row, Value chunk, int64_t rowElements) {
    Value swizzle = rowElements / kChunk >= 8 ? rem(row, idx(8)) : rem(div(row, idx(2)), idx(4));
    return add(mul(row, idx(rowElements)), mul(xori(chunk, swizzle), idx(kChunk)));
  }
  Value kMajorOffset(Value row, Value chunk) { return swizzledOffset(row, chunk, kTileK); }
  Value nMajorOffset(Value row, Value chunk) { return swizzledOffset(row, chunk, s.tileN); }
  int64_t stageElements() const { return s.stageElements(); }
  int64_t bTileOffset() const { return s.tileM * kTileK; }

  void loadStage(Value stage, Value kTile);
  void copyChunk(Value memref, Value base, ArrayRef<Value> rowCol, Value inBounds, Value smemElement);
  SmallVector<Value> loadFragments(Value stage, int64_t kStep);
  SmallVector<Value> mmaStep(Value stage, ValueRange acc);
  void epilogue(ValueRange acc);
};

// One stage: the A tile rows [rowBase, +tileM) x k [kTile*32, +32) and the B tile, as
// 16-byte chunks spread over the threads (consecutive threads, consecutive chunks of a row).
void MatmulKernel::loadStage(Value stage, Value kTile) {
  Value stageBase = mul(stage, idx(stageElements()));
  Value k0 = mul(kTile, idx(kTileK));
  auto chunks = [&](int64_t rows, int64_t perRow, auto emit) {
    for (int64_t i = 0; i < rows * perRow / s.threads(); ++i) {
      Value q = add(tid, idx(i * s.threads()));
      emit(div(q, idx(perRow)), rem(q, idx(perRow)));
    }
  };
  auto batchRows = [&](Value operand, Value row, Value col) { return MatmulIndices(operand, batchIndex, row, col); };
  chunks(s.tileM, kTileK / kChunk, [&](Value r, Value c) {
    Value row = add(rowBase, r), k = add(k0, mul(c, idx(kChunk)));
    copyChunk(body.a, aBase, batchRows(body.a, row, k), both(ult(row, M), ult(k, K)),
              add(stageBase, kMajorOffset(r, c)));
  });
  Value bStage = add(stageBase, idx(bTileOffset()));
  if (s.transposedB) {
    chunks(s.tileN, kTileK / kChunk, [&](Value r, Value c) {
      Value col = add(colBase, r), k = add(k0, mul(c, idx(kChunk)));
      copyChunk(body.b, bBase, batchRows(body.b, col, k), both(ult(col, N), ult(k, K)),
                add(bStage, kMajorOffset(r, c)));
    });
  } else {
    chunks(kTileK, s.tileN / kChunk, [&](Value r, Value c) {
      Value k = add(k0, r), col = add(colBase, mul(c, idx(kChunk)));
      copyChunk(body.b, bBase, batchRows(body.b, k, col), both(ult(k, K), ult(col, N)),
                add(bStage, nMajorOffset(r, c)));
    });
  }
}

// 8 elements from `memref` at `at` (the last index the first of 8 along the contiguous dim)
// into shared element `smemElement`: zeros where out of bounds. Aligned rows: one cp.async
// of 16 bytes (0 source bytes when out of bounds, from the base address); otherwise 8
// bounds-checked scalar loads and shared stores.
void MatmulKernel::copyChunk(Value memref, Value base, ArrayRef<Value> at, Value inBounds,
                             Value smemElement) {
  auto type = cast<MemRefType>(memref.getType());
  if (s.aligned) {
    Value linear = linearIndex(memref, at);
    Value bytes = arith::SelectOp::create(b, loc, inBounds, mul(linear, idx(2)), idx(0));
    Value src = byteOffset(base, i64(bytes), 1);
    Value dst = byteOffset(smemBase, i32(mul(smemElement, idx(2))), 3);
    Value size = arith::SelectOp::create(b, loc, inBounds, arith::ConstantIntOp::create(b, loc, b.getI32Type(), 16),
                                         arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
    NVVM::CpAsyncOp::create(b, loc, dst, src, 16, NVVM::LoadCacheModifierKind::CG, size);
    return;
  }
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0));
  Value last = at.back();
  Value extent = memref::DimOp::create(b, loc, memref, type.getRank() - 1);
  for (int64_t e = 0; e < kChunk; ++e) {
    SmallVector<Value> indices(at.begin(), at.end());
    Value col = add(last, idx(e));
    Value ok = both(inBounds, ult(col, extent));
    // inBounds holds for the chunk's first element; each element checks its own column.
    // Out-of-bounds reads are redirected to element 0.
    for (Value& i : indices) i = arith::SelectOp::create(b, loc, ok, i, idx(0));
    indices.back() = arith::SelectOp::create(b, loc, ok, col, idx(0));
    Value v = memref::LoadOp::create(b, loc, memref, indices);
    v = arith::SelectOp::create(b, loc, ok, v, zero);
    memref::StoreOp::create(b, loc, v, smem, ValueRange{add(smemElement, idx(e))});
  }
}

// The A and B fragments of k step `kStep` (16 deep) of `stage`: per m fragment 4 i32 (a
// 16x16 block by ldmatrix.x4), per n fragment 2 i32 (ldmatrix.x4 covers two n fragments;
// `.trans` for B stored [K][N]).
SmallVector<Value> MatmulKernel::loadFragments(Value stage, int64_t kStep) {
  MLIRContext* ctx = b.getContext();
  Type i32Type = b.getI32Type();
  auto quad = LLVM::LLVMStructType::getLiteral(ctx, {i32Type, i32Type, i32Type, i32Type});
  auto shape = NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8);
  Value stageBase = mul(stage, idx(stageElements()));
  auto ldmatrix = [&](Value element, NVVM::MMALayout layout) {
    Value at = byteOffset(smemBase, i32(mul(element, idx(2))), 3);
    Value q = NVVM::LdMatrixOp::create(b, loc, quad, at, 4, layout, shape, NVVM::LdStMatrixEltType::B16);
    SmallVector<Value> regs;
    for (int64_t r = 0; r < 4; ++r) regs.push_back(LLVM::ExtractValueOp::create(b, loc, q, r));
    return regs;
  };
  SmallVector<Value> frags;
  // A: lane l addresses row l % 16, k chunk 2 kStep + l / 16.
  Value aRow = add(warpRow, rem(lane, idx(16)));
  Value aChunk = add(idx(2 * kStep), div(lane, idx(16)));
  for (int64_t i = 0; i < fragmentsM(); ++i)
    llvm::append_range(frags, ldmatrix(add(stageBase, kMajorOffset(add(aRow, idx(16 * i)), aChunk)),
                                       NVVM::MMALayout::row));
  // B: lane l, matrix j = l / 8, row r = l % 8: k half j % 2, n half j / 2.
  Value j = div(lane, idx(8)), r = rem(lane, idx(8));
  Value kHalf = rem(j, idx(2)), nHalf = div(j, idx(2));
  Value bStage = add(stageBase, idx(bTileOffset()));
  for (int64_t p = 0; p < fragmentsN() / 2; ++p) {
    Value n0 = add(warpCol, idx(16 * p));
    SmallVector<Value> regs;
    if (s.transposedB) {  // [N][K]: rows n, chunks of k
      Value row = add(add(n0, mul(nHalf, idx(8))), r);
      regs = ldmatrix(add(bStage, kMajorOffset(row, add(idx(2 * kStep), kHalf))), NVVM::MMALayout::row);
    } else {              // [K][N]: rows k, chunks of n, transposed
      Value row = add(add(idx(16 * kStep), mul(kHalf, idx(8))), r);
      Value chunk = add(div(n0, idx(kChunk)), nHalf);
      regs = ldmatrix(add(bStage, nMajorOffset(row, chunk)), NVVM::MMALayout::col);
    }
    llvm::append_range(frags, regs);  // b0, b1 of fragment 2p, then of 2p + 1
  }
  return frags;
}

// acc[i][j] += A_i B_j over the 32 k of `stage` (two k steps of 16).
SmallVector<Value> MatmulKernel::mmaStep(Value stage, ValueRange accIn) {
  MLIRContext* ctx = b.getContext();
  Type f32 = b.getF32Type();
  auto result = LLVM::LLVMStructType::getLiteral(ctx, {f32, f32, f32, f32});
  SmallVector<Value> acc(accIn.begin(), accIn.end());
  NVVM::MMATypes type = s.f16 ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
  auto operand = [&](Value reg) -> Value {  // f16 operands are typed as pairs
    return s.f16 ? LLVM::BitcastOp::create(b, loc, VectorType::get({2}, b.getF16Type()), reg).getResult()
                 : reg;
  };
  for (int64_t kStep = 0; kStep < kTileK / 16; ++kStep) {
    SmallVector<Value> frags = loadFragments(stage, kStep);
    int64_t bFirst = 4 * fragmentsM();
    for (int64_t i = 0; i < fragmentsM(); ++i)
      for (int64_t jn = 0; jn < fragmentsN(); ++jn) {
        SmallVector<Value> aRegs, bRegs, cRegs;
        for (int64_t r = 0; r < 4; ++r) aRegs.push_back(operand(frags[4 * i + r]));
        int64_t pair = jn / 2, half = jn % 2;
        // ldmatrix.x4 of pair p: [b0 of 2p, b1 of 2p, b0 of 2p+1, b1 of 2p+1].
        bRegs.push_back(operand(frags[bFirst + 4 * pair + 2 * half]));
        bRegs.push_back(operand(frags[bFirst + 4 * pair + 2 * half + 1]));
        int64_t at = 4 * (i * fragmentsN() + jn);
        cRegs.assign(acc.begin() + at, acc.begin() + at + 4);
        Value d = NVVM::MmaOp::create(b, loc, result, aRegs, bRegs, cRegs,
                                      ArrayRef<int64_t>{16, 8, 16}, std::nullopt, std::nullopt,
                                      std::array<NVVM::MMATypes, 2>{type, type},
                                      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row, NVVM::MMALayout::col});
        for (int64_t r = 0; r < 4; ++r) acc[at + r] = LLVM::ExtractValueOp::create(b, loc, d, r);
      }
  }
  return acc;
}

// Accumulator (i, j) register r holds row warpRow + 16 i + lane / 4 + 8 (r / 2), column
// warpCol + 8 j + 2 (lane % 4) + r % 2 of the tile.
void MatmulKernel::epilogue(ValueRange acc) {
  Value laneRow = div(lane, idx(4)), laneCol = mul(rem(lane, idx(4)), idx(2));
  for (int64_t i = 0; i < fragmentsM(); ++i)
    for (int64_t jn = 0; jn < fragmentsN(); ++jn)
      for (int64_t r = 0; r < 4; ++r) {
        Value row = add(add(rowBase, warpRow), add(laneRow, idx(16 * i + 8 * (r / 2))));
        Value col = add(add(colBase, warpCol), add(laneCol, idx(8 * jn + r % 2)));
        StoreMatmulElement(b, loc, body, batchIndex, acc[4 * (i * fragmentsN() + jn) + r], row, col, M, N);
      }
}

LogicalResult MatmulKernel::build(func::FuncOp kernel) {
  element = getElementTypeOrSelf(body.a.getType());
  smem = WorkgroupArray(b, loc, kernel, element, s.stages * stageElements());
  smemBase = pointer(smem, 3);
  if (s.aligned) aBase = pointer(body.a, 1), bBase = pointer(body.b, 1);
  MatmulExtents extents = ReadMatmulExtents(b, loc, body, s.transposedB);
  M = extents.M, K = extents.K, N = extents.N;
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = rem(tid, idx(32));
  Value warp = div(tid, idx(32));
  warpRow = mul(div(warp, idx(s.warpsN)), idx(warpTileM()));
  warpCol = mul(rem(warp, idx(s.warpsN)), idx(warpTileN()));
  Value kTiles = ceilDiv(K, kTileK);
  TileWalk walk = BeginTileWalk(*this, s, M, N);
  batchIndex = walk.batchIndex, rowBase = walk.rowBase, colBase = walk.colBase;

  // Prologue: stages 0 .. S-2 in flight.
  for (int64_t st = 0; st + 1 < s.stages; ++st) {
    loadStage(idx(st), idx(st));
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
  }
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  SmallVector<Value> init(4 * fragmentsM() * fragmentsN(), zero);
  auto kLoop = scf::ForOp::create(b, loc, idx(0), kTiles, idx(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(kLoop.getBody());
    Value kt = kLoop.getInductionVar();
    // Stage kt has landed (at most S-2 younger groups pending) and every warp is done with
    // stage kt-1, which the next load overwrites.
    NVVM::CpAsyncWaitGroupOp::create(b, loc, s.stages - 2);
    gpu::BarrierOp::create(b, loc);
    Value ahead = add(kt, idx(s.stages - 1));
    loadStage(rem(ahead, idx(s.stages)), ahead);  // past K: zero-filled, never read
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
    SmallVector<Value> next = mmaStep(rem(kt, idx(s.stages)), kLoop.getRegionIterArgs());
    scf::YieldOp::create(b, loc, next);
  }
  // No copy may still write a stage the next tile's prologue refills.
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  gpu::BarrierOp::create(b, loc);
  epilogue(kLoop.getResults());
  return success();
}
}  // namespace

LogicalResult LowerTensorCoreMatmul(func::FuncOp kernel, const TensorCoreMatmul& s) {
  if (kernel.getFunctionType().getNumResults() != 0)
    return kernel.emitError("internal: tensor-core matmul kernel still returns values");
  FailureOr<MatmulBody> body = FindMatmulBody(kernel, s);
  if (failed(body)) return failure();
  // The new body goes after the old one (whose constants the epilogue's clones may use);
  // then the linalg ops and the buffers only they used go.
  Block& entry = kernel.getBody().front();
  OpBuilder b(entry.getTerminator());
  if (s.wgmma) {
    if (failed(BuildWgmmaMatmul(b, kernel, s, *body))) return failure();
  } else if (s.simt) {
    if (failed(BuildSimtMatmul(b, kernel, s, *body))) return failure();
  } else {
    MatmulKernel builder(b, kernel.getLoc(), s, *body);
    if (failed(builder.build(kernel))) return failure();
  }
  return EraseMatmulBody(*body);
}

}  // namespace hexir::cuda
