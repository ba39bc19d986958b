// The sm_90a tensor-core GEMM kernel of CUDAMatmul.h: two warpgroups per 128 x BN output
// tile, each issuing wgmma.mma_async m64nBNk16 on A and B read from shared memory through
// matrix descriptors; cp.async stages in the 128-byte swizzle layout those descriptors name.
//
// Shared memory of one stage (bytes; rows of 64 elements = 128 bytes, 16-byte chunk c of
// row r stored at chunk c ^ (r % 8), each 8-row atom of 1024 bytes 1024-aligned):
//   A       [128 rows m][64 k]                         K-major: descriptor LBO -, SBO 1024
//   B [N][K] [BN rows n][64 k]                         K-major: LBO -, SBO 1024
//   B [K][N] [BN / 64 blocks][64 rows k][64 n]          N-major (imm-trans-b 1): LBO = one
//            block (8192), SBO = 8 k rows (1024)
// A k step of 16 advances a K-major descriptor by 32 bytes inside the swizzled row (the
// hardware applies the XOR to the final address) and an N-major one by 16 rows (2048).
//
// The k loop, S stages: tile kt + S - 2 is copied while tile kt is multiplied and the
// wgmma group of tile kt - 1 may still run; the stage refilled held tile kt - 2, whose
// group every warp waited for (wait_group 1) before the barrier at the top of the step.
//
// Split K (s.splits = S > 1, a cluster of S blocks per output tile): block r multiplies k
// tiles [r T / S, (r + 1) T / S) of the T, copies nothing past its slice (zero-filled), and
// leaves its f32 partial tile in its own shared memory (the stages, now free:
// [tileM][tileN + 8]); after a cluster barrier block r sums the r-th S-th of the tile's
// elements over the S blocks' shared memory, in rank order (deterministic), applies the
// epilogue and stores; a second cluster barrier keeps every block's shared memory until the
// others have read it.
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "passes/codegen/CUDAMatmulBody.h"

namespace hexir::cuda {
using namespace mlir;

namespace {
constexpr int64_t kChunk = 8;            // elements per 16-byte chunk
constexpr int64_t kRowBytes = 128;       // one swizzled row: kWgmmaTileK elements
constexpr int64_t kBlockBytes = kWgmmaTileK * kRowBytes;  // [64 k][64 n] of B [K][N]
constexpr int64_t kWarpgroupRows = 64;   // the m of wgmma
constexpr int64_t kStepK = 16;           // the k of wgmma
constexpr int64_t kPartialVector = 4;    // f32 words a thread sums at once (split K)

class WgmmaKernel : KernelArith {
 public:
  WgmmaKernel(OpBuilder& b, Location loc, const TensorCoreMatmul& s, const MatmulBody& body)
      : KernelArith{b, loc}, s(s), body(body) {}

  LogicalResult build();

 private:
  const TensorCoreMatmul& s;
  const MatmulBody& body;
  Value smem;         // !llvm.ptr<3>: the stages, 1024-byte aligned
  Value smemAddress;  // its shared-window address (index)
  Value aBase, bBase;  // !llvm.ptr<1>
  Value tid, lane, warpgroup, warpInGroup;
  Value batchIndex, rowBase, colBase;
  Value M, N, K;
  Value kBound;  // copies at k >= kBound are zero-filled: K, or the end of the block's K slice

  int64_t stageBytes() const { return s.stageElements() * 2; }
  int64_t aBytes() const { return s.tileM * kRowBytes; }
  // Byte offset of chunk c of row r of a swizzled tile.
  Value swizzled(Value r, Value c) {
    return add(mul(r, idx(kRowBytes)), mul(xori(c, rem(r, idx(8))), idx(16)));
  }
  void loadStage(Value stage, Value kTile);
  void copyChunk(Value memref, Value base, ArrayRef<Value> at, Value inBounds, Value dstByte);
  Value descriptor(Value address, int64_t leadingBytes, int64_t strideBytes);
  Value multiply(Value stage, Value acc);
  void epilogue(Value acc);
  void storePartial(Value acc);
  void reduceSplits(Value splitRank);
  void finish(Value v, Value row, Value col) { StoreMatmulElement(b, loc, body, batchIndex, v, row, col, M, N); }
  SmallVector<Value> withBatch(Value memref, Value x, Value y) { return MatmulIndices(memref, batchIndex, x, y); }
};

void WgmmaKernel::copyChunk(Value memref, Value base, ArrayRef<Value> at, Value inBounds,
                            Value dstByte) {
  Value bytes = arith::SelectOp::create(b, loc, inBounds, mul(linearIndex(memref, at), idx(2)), idx(0));
  Value src = byteOffset(base, i64(bytes), 1);
  Value dst = byteOffset(smem, i32(dstByte), 3);
  Type i32Type = b.getI32Type();
  Value size = arith::SelectOp::create(b, loc, inBounds, arith::ConstantIntOp::create(b, loc, i32Type, 16),
                                       arith::ConstantIntOp::create(b, loc, i32Type, 0));
  NVVM::CpAsyncOp::create(b, loc, dst, src, 16, NVVM::LoadCacheModifierKind::CG, size);
}

// Tile kTile of A and B into `stage`: 16-byte chunks, consecutive threads on consecutive
// chunks of a row; chunks past M, N or K are zero-filled (source size 0).
void WgmmaKernel::loadStage(Value stage, Value kTile) {
  Value stageByte = mul(stage, idx(stageBytes()));
  Value bByte = add(stageByte, idx(aBytes()));
  Value k0 = mul(kTile, idx(kWgmmaTileK));
  constexpr int64_t perRow = kWgmmaTileK / kChunk;
  auto chunks = [&](int64_t rows, int64_t rowChunks, auto emit) {
    for (int64_t i = 0; i < rows * rowChunks / s.threads(); ++i) {
      Value q = add(tid, idx(i * s.threads()));
      emit(div(q, idx(rowChunks)), rem(q, idx(rowChunks)));
    }
  };
  chunks(s.tileM, perRow, [&](Value r, Value c) {
    Value row = add(rowBase, r), k = add(k0, mul(c, idx(kChunk)));
    copyChunk(body.a, aBase, withBatch(body.a, row, k), both(ult(row, M), ult(k, kBound)),
              add(stageByte, swizzled(r, c)));
  });
  if (s.transposedB) {
    chunks(s.tileN, perRow, [&](Value r, Value c) {
      Value col = add(colBase, r), k = add(k0, mul(c, idx(kChunk)));
      copyChunk(body.b, bBase, withBatch(body.b, col, k), both(ult(col, N), ult(k, kBound)),
                add(bByte, swizzled(r, c)));
    });
    return;
  }
  chunks(kWgmmaTileK, s.tileN / kChunk, [&](Value r, Value cc) {
    Value k = add(k0, r), col = add(colBase, mul(cc, idx(kChunk)));
    Value block = mul(div(cc, idx(8)), idx(kBlockBytes));
    copyChunk(body.b, bBase, withBatch(body.b, k, col), both(ult(k, kBound), ult(col, N)),
              add(bByte, add(block, swizzled(r, rem(cc, idx(8))))));
  });
}

// The wgmma matrix descriptor: start address >> 4 (bits 0-13), leading byte offset >> 4
// (16-29), stride byte offset >> 4 (32-45), 128-byte swizzle (bits 62-63 = 1).
Value WgmmaKernel::descriptor(Value address, int64_t leadingBytes, int64_t strideBytes) {
  uint64_t fixed = (uint64_t(leadingBytes >> 4) << 16) | (uint64_t(strideBytes >> 4) << 32) | (1ull << 62);
  Value start = i64(rem(div(address, idx(16)), idx(1 << 14)));
  Value bits = arith::ConstantIntOp::create(b, loc, b.getI64Type(), int64_t(fixed));
  return arith::OrIOp::create(b, loc, start, bits);
}

// acc += the 64 k of `stage`: four m64nBNk16 wgmmas of this warpgroup's 64 rows.
Value WgmmaKernel::multiply(Value stage, Value acc) {
  MLIRContext* ctx = b.getContext();
  Value stageAddress = add(smemAddress, mul(stage, idx(stageBytes())));
  Value aAddress = add(stageAddress, mul(warpgroup, idx(kWarpgroupRows * kRowBytes)));
  Value bAddress = add(stageAddress, idx(aBytes()));
  NVVM::WGMMATypes type = s.f16 ? NVVM::WGMMATypes::f16 : NVVM::WGMMATypes::bf16;
  for (int64_t step = 0; step < kWgmmaTileK / kStepK; ++step) {
    Value a = descriptor(add(aAddress, idx(step * kStepK * 2)), 16, 8 * kRowBytes);
    Value bDesc = s.transposedB
                      ? descriptor(add(bAddress, idx(step * kStepK * 2)), 16, 8 * kRowBytes)
                      : descriptor(add(bAddress, idx(step * kStepK * kRowBytes)), kBlockBytes, 8 * kRowBytes);
    acc = NVVM::WgmmaMmaAsyncOp::create(
        b, loc, acc.getType(), acc, a, bDesc, NVVM::MMAShapeAttr::get(ctx, 64, s.tileN, kStepK), type,
        type, NVVM::WGMMATypes::f32, NVVM::WGMMAScaleOut::one, NVVM::WGMMAScaleIn::one,
        NVVM::WGMMAScaleIn::one, NVVM::MMALayout::row,
        s.transposedB ? NVVM::MMALayout::col : NVVM::MMALayout::row, NVVM::MMAIntOverflowAttr());
  }
  return acc;
}

// Accumulator register v = 4 j + r of a thread holds row 16 (warp in group) + lane / 4 +
// 8 (r / 2) of its warpgroup's 64, column 8 j + 2 (lane % 4) + r % 2.
void WgmmaKernel::epilogue(Value acc) {
  Value rowOfLane = add(add(rowBase, mul(warpgroup, idx(kWarpgroupRows))),
                        add(mul(warpInGroup, idx(16)), div(lane, idx(4))));
  Value colOfLane = add(colBase, mul(rem(lane, idx(4)), idx(2)));
  for (int64_t v = 0; v < s.tileN / 2; ++v) {
    int64_t j = v / 4, r = v % 4;
    finish(LLVM::ExtractValueOp::create(b, loc, acc, v), add(rowOfLane, idx(8 * (r / 2))),
           add(colOfLane, idx(8 * j + r % 2)));
  }
}

// The accumulators into this block's shared memory as the f32 tile [tileM][partialStride],
// registers v, v + 1 (adjacent columns) as one 8-byte store.
void WgmmaKernel::storePartial(Value acc) {
  Type f32 = b.getF32Type();
  auto pair = VectorType::get({2}, f32);
  Value rowOfLane = add(mul(warpgroup, idx(kWarpgroupRows)), add(mul(warpInGroup, idx(16)), div(lane, idx(4))));
  Value colOfLane = mul(rem(lane, idx(4)), idx(2));
  for (int64_t v = 0; v < s.tileN / 2; v += 2) {
    int64_t j = v / 4, r = v % 4;
    Value row = add(rowOfLane, idx(8 * (r / 2))), col = add(colOfLane, idx(8 * j));
    Value word = add(mul(row, idx(s.partialStride())), col);
    Value columns = LLVM::PoisonOp::create(b, loc, pair);
    for (int64_t e = 0; e < 2; ++e)
      columns = LLVM::InsertElementOp::create(b, loc, columns, LLVM::ExtractValueOp::create(b, loc, acc, v + e),
                                              arith::ConstantIntOp::create(b, loc, b.getI32Type(), e));
    LLVM::StoreOp::create(b, loc, columns, byteOffset(smem, i32(mul(word, idx(4))), 3), /*alignment=*/8);
  }
}

// Block `splitRank` of the cluster: elements [rank E / S, (rank + 1) E / S) of the tile's E
// (kPartialVector consecutive columns a thread), summed over the cluster's partial tiles
// in rank order, then finished.
void WgmmaKernel::reduceSplits(Value splitRank) {
  MLIRContext* ctx = b.getContext();
  NVVM::ClusterArriveOp::create(b, loc, /*aligned=*/UnitAttr());
  NVVM::ClusterWaitOp::create(b, loc, /*aligned=*/UnitAttr());
  auto clusterPtr = LLVM::LLVMPointerType::get(ctx, /*addressSpace=*/7);
  SmallVector<Value> partials;
  for (int64_t rank = 0; rank < s.splits; ++rank)
    partials.push_back(NVVM::MapaOp::create(b, loc, clusterPtr, smem,
                                            arith::ConstantIntOp::create(b, loc, b.getI32Type(), rank)));
  auto vector = VectorType::get({kPartialVector}, b.getF32Type());
  const int64_t slice = s.tileM * s.tileN / s.splits, perStep = kPartialVector * s.threads();
  Value sliceFirst = add(mul(splitRank, idx(slice)), mul(tid, idx(kPartialVector)));
  for (int64_t step = 0; step < slice / perStep; ++step) {
    Value element = add(sliceFirst, idx(step * perStep));
    Value row = div(element, idx(s.tileN)), col = rem(element, idx(s.tileN));
    Value bytes = i64(mul(add(mul(row, idx(s.partialStride())), col), idx(4)));
    Value sum;
    for (Value partial : partials) {
      Value at = LLVM::GEPOp::create(b, loc, clusterPtr, b.getI8Type(), partial, ArrayRef<LLVM::GEPArg>{bytes});
      Value v = LLVM::LoadOp::create(b, loc, vector, at, /*alignment=*/16);
      sum = sum ? arith::AddFOp::create(b, loc, sum, v).getResult() : v;
    }
    for (int64_t e = 0; e < kPartialVector; ++e)
      finish(LLVM::ExtractElementOp::create(b, loc, sum, arith::ConstantIntOp::create(b, loc, b.getI32Type(), e)),
             add(rowBase, row), add(colBase, add(col, idx(e))));
  }
  // No block refills its stages (the next tile) or leaves while another reads them.
  NVVM::ClusterArriveOp::create(b, loc, UnitAttr());
  NVVM::ClusterWaitOp::create(b, loc, UnitAttr());
}

LogicalResult WgmmaKernel::build() {
  MLIRContext* ctx = b.getContext();
  if (s.threads() != 2 * 128 || s.tileM != 2 * kWarpgroupRows || s.tileN % 64 != 0 || s.stages < 3 ||
      s.splits < 1 || (s.tileM * s.tileN / s.splits) % (kPartialVector * s.threads()) != 0 ||
      s.tileM * s.partialStride() * 4 > s.stages * stageBytes())
    return emitError(loc, "internal: wgmma matmul tile ") << s.tileM << "x" << s.tileN << ", " << s.threads()
                                                          << " threads, " << s.stages << " stages, "
                                                          << s.splits << " splits";
  auto space = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto bytesType = MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), MemRefLayoutAttrInterface(), space);
  Value dynamic = gpu::DynamicSharedMemoryOp::create(b, loc, bytesType);
  Value raw = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, dynamic);
  smemAddress = mul(div(add(raw, idx(1023)), idx(1024)), idx(1024));
  smem = byteOffset(pointer(dynamic, 3), i32(arith::SubIOp::create(b, loc, smemAddress, raw)), 3);
  aBase = pointer(body.a, 1), bBase = pointer(body.b, 1);
  MatmulExtents extents = ReadMatmulExtents(b, loc, body, s.transposedB);
  M = extents.M, K = extents.K, N = extents.N;
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = rem(tid, idx(32));
  warpgroup = div(tid, idx(128));
  warpInGroup = rem(div(tid, idx(32)), idx(4));
  Value kTiles = ceilDiv(K, kWgmmaTileK);
  TileWalk walk = BeginTileWalk(*this, s, M, N);
  batchIndex = walk.batchIndex, rowBase = walk.rowBase, colBase = walk.colBase;
  // This block's k tiles: [kFirst, kFirst + kCount) (all of them without split K).
  Value kFirst, kCount = kTiles;
  kBound = K;
  if (s.splits > 1) {
    Value splits = idx(s.splits), rank = walk.splitRank;
    kFirst = div(mul(rank, kTiles), splits);
    Value kEnd = div(mul(add(rank, idx(1)), kTiles), splits);
    kCount = arith::SubIOp::create(b, loc, kEnd, kFirst);
    kBound = arith::MinUIOp::create(b, loc, K, mul(kEnd, idx(kWgmmaTileK)));
  }
  auto kTileAt = [&](Value local) { return kFirst ? add(kFirst, local) : local; };

  const int64_t ahead = s.stages - 2;
  for (int64_t st = 0; st < ahead; ++st) {
    loadStage(idx(st), kTileAt(idx(st)));
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
  }
  auto accType = LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(s.tileN / 2, b.getF32Type()));
  Value zero = LLVM::ZeroOp::create(b, loc, accType);
  auto kLoop = scf::ForOp::create(b, loc, idx(0), kCount, idx(1), ValueRange{zero});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(kLoop.getBody());
    Value kt = kLoop.getInductionVar();
    // This thread's copies of tile kt have landed (ahead - 1 younger groups may be
    // pending); the fence hands them to the tensor cores' (async) proxy; the barrier makes
    // every thread's copies visible and ends every warpgroup's reads of tile kt - 2.
    NVVM::CpAsyncWaitGroupOp::create(b, loc, ahead - 1);
    NVVM::FenceProxyOp::create(b, loc, NVVM::ProxyKind::async_shared,
                               NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
    gpu::BarrierOp::create(b, loc);
    Value next = add(kt, idx(ahead));
    loadStage(rem(next, idx(s.stages)), kTileAt(next));  // past the slice: zero-filled, never read
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
    NVVM::WgmmaFenceAlignedOp::create(b, loc);
    Value acc = multiply(rem(kt, idx(s.stages)), kLoop.getRegionIterArgs()[0]);
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, uint64_t{1});
    scf::YieldOp::create(b, loc, acc);
  }
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, uint64_t{0});
  // No copy may still write a stage the next tile's prologue refills, no warpgroup still
  // read one.
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  gpu::BarrierOp::create(b, loc);
  if (s.splits == 1) {
    epilogue(kLoop.getResult(0));
    return success();
  }
  storePartial(kLoop.getResult(0));
  reduceSplits(walk.splitRank);
  return success();
}
}  // namespace

LogicalResult BuildWgmmaMatmul(OpBuilder& b, func::FuncOp kernel, const TensorCoreMatmul& s,
                               const MatmulBody& body) {
  return WgmmaKernel(b, kernel.getLoc(), s, body).build();
}

}  // namespace hexir::cuda
