// Tensor-core GEMM on CUDA (f16/bf16 operands, f32 accumulation), shared by
// CUDADistributeThreads (which recognizes the kernel and picks tile and launch) and
// CUDALowerExecutables (which replaces the bufferized body):
//   C[b][m][n] = init + sum_k A[b][m][k] B[b][k][n]      (or B[b][n][k]: "transposed B")
//   out        = epilogue(C)                                (the elementwise generics fused
//                                                             after the contraction: bias,
//                                                             activation, residual, casts)
// for a linalg.matmul / batch_matmul / matmul-shaped linalg.generic with f16 or bf16 kernel
// arguments as A and B (or f32 ones: the SIMT kernel below), an f32 result initialized by a
// linalg.fill, and M dynamic or > 16 (M <= 16 stays on the GEMV kernels).
//
// The kernel: one block per BM x BN output tile (a grid-stride loop over the tiles, grouped
// 8 tile rows at a time so that a wave's A rows and B columns stay in L2); 32-deep k tiles
// staged through `stages` shared-memory buffers filled by cp.async (16-byte chunks, zero
// filled past M, N, K; plain loads when rows are not 16-byte aligned); XOR-swizzled rows so
// that ldmatrix reads are free of bank conflicts; each warp owns a (BM / warpsM) x
// (BN / warpsN) sub-tile of m16n8k16 `mma.sync` accumulators in registers; the epilogue
// applies the fused generics to each accumulator and stores it (bounds-checked).
//
// f32 operands (any chip) take a kernel of the same shape without tensor cores
// (CUDAMatmulSimt.cpp): 128 x 128 tiles, 256 threads of 8 x 8 register-blocked accumulators,
// two shared stages of 8-deep k tiles (A transposed), 16-byte global and shared loads. With
// TF32 allowed (hexir-compile --allow-tf32; off by default: products then keep 10 of f32's
// 23 mantissa bits) the same stages hold the operands rounded to TF32 and feed m16n8k8
// tf32 `mma.sync` (sm_80 and later) with f32 accumulation.
//
// On sm_90 (Hopper) rows aligned for cp.async take the warpgroup kernel instead
// (CUDAMatmulWgmma.cpp): two warpgroups per 128 x BN tile (BN = 256, 128 or 64), each
// issuing `wgmma.mma_async` m64nBNk16 on operands read by the tensor cores straight from
// shared memory; 64-deep k tiles in the 128-byte swizzle layout of wgmma descriptors,
// filled by cp.async S - 2 stages ahead of the one being multiplied while one wgmma group is in
// flight; stages in dynamic shared memory above 48 KiB (`cuda.shared_bytes.<entry>`, raised
// by the CUDA driver at load); the PTX targets sm_90a. Where the output has too few tiles to
// fill the SMs (prefill: M = 128 against 2048 x 2048 is 32 tiles of 128x64), K is split over
// a cluster of 2, 4 or 8 blocks per tile, whose f32 partial tiles are summed in rank order
// through distributed shared memory before the epilogue (deterministic; no workspace).
#pragma once

#include <optional>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::cuda {

// The k depth of one shared-memory stage (mma.sync kernel; the wgmma kernel's is 64).
inline constexpr int64_t kMatmulTileK = 32;
inline constexpr int64_t kWgmmaTileK = 64;
inline constexpr int64_t kSimtTileK = 8;  // the f32 kernel's (CUDAMatmulSimt.cpp)
// Dynamic shared memory the wgmma kernel may use (of the H200's 227 KiB per block).
inline constexpr int64_t kMaxWgmmaSharedBytes = 200 * 1024;
// Shared memory the kernel may use (the static limit without opting in).
inline constexpr int64_t kMaxMatmulSharedBytes = 48 * 1024;
// (The largest M left to the GEMV kernels: codegen::kMaxGemvRows, MatmulLayout.h.)

struct TensorCoreMatmul {
  int64_t batch = 1;       // static; 1 when the op has no batch loop
  int64_t m = -1;          // -1: dynamic
  int64_t n = 0, k = 0;    // static
  bool transposedB = false;  // B is [N][K]
  bool f16 = false;          // else bf16
  int64_t a = 0, b = 0;      // argument numbers of A and B
  int64_t tileM = 128, tileN = 128, warpsM = 2, warpsN = 4, stages = 3;
  bool aligned = true;  // rows of A and B start 16-byte aligned: cp.async chunks
  bool wgmma = false;   // the sm_90a warpgroup kernel (warpsM = 2 warpgroups of 4 warps)
  int64_t splits = 1;   // wgmma only: blocks per output tile, one K slice each (a cluster)
  bool simt = false;    // f32 operands: the register-blocked kernel without tensor cores
  bool tf32 = false;    // simt only: the products on TF32 tensor cores (--allow-tf32)

  int64_t threads() const { return 32 * warpsM * warpsN; }
  int64_t tileK() const { return wgmma ? kWgmmaTileK : simt ? kSimtTileK : kMatmulTileK; }
  // Blocks per SM the entry asks registers for (`.minnctapersm`): two of the 8-warp
  // mma.sync tile (128 registers a thread instead of ~165: 16 warps per SM), 0 (no bound)
  // otherwise (the wgmma kernel holds BN / 2 accumulators a thread).
  int64_t minBlocksPerSM() const { return !wgmma && threads() == 256 ? 2 : 0; }
  // Elements of one operand type in one shared stage (A tile + B tile).
  int64_t stageElements() const { return (tileM + tileN) * tileK(); }
  // Dynamic shared memory of the launch: the wgmma stages plus 1 KiB to align them to the
  // 1024-byte swizzle atom; 0 for the mma.sync kernel (static shared memory).
  int64_t sharedBytes() const { return wgmma ? stages * stageElements() * 2 + 1024 : 0; }
  // Row stride (f32 words) of the partial tile a split block leaves in its shared memory: 8
  // words of padding put the 8 rows one warp stores in different banks.
  int64_t partialStride() const { return tileN + 8; }
  std::vector<int64_t> encode() const;
  static std::optional<TensorCoreMatmul> decode(llvm::ArrayRef<int64_t> words);
};

// The kernel attribute carrying TensorCoreMatmul::encode() from distribution to lowering.
inline constexpr char kTensorCoreMatmulAttr[] = "hexir.cuda.tensor_core_matmul";

// The matmul of `kernel` (tensor form, before distribution) with tile and launch chosen, or
// nullopt when the kernel is not the computation above (a remark on the kernel says why
// when its contraction has f16/bf16 operands). `hopper` (chip sm_90/sm_90a): aligned rows
// with N, K >= 64 and M dynamic or >= 64 take the wgmma kernel, tiles 128x256, 128x128,
// 128x64, the first giving >= 132 tiles (one wave on the H200), else 128x64 (dynamic M:
// 128x128); at most 32 tiles (static M) split K over a cluster of 8, 4 or 2 blocks per
// tile; stages as many as fit kMaxWgmmaSharedBytes, at most 6. Otherwise mma.sync
// tiles: 128x128 (8 warps), 128x64, 64x64 (4 warps), the first giving >= 120 tiles, else
// 64x64; stages: as many as fit 48 KiB, at most 4. f32 operands: the SIMT kernel, on TF32
// tensor cores when `allowTf32`.
std::optional<TensorCoreMatmul> MatchTensorCoreMatmul(mlir::func::FuncOp kernel, bool hopper,
                                                      bool allowTf32);

// Records the launch of `shape` on `kernel`'s executable (block size, workgroup count:
// static, or from M's parameter word) and the kernel attributes lowering reads.
void ScheduleTensorCoreMatmul(mlir::func::FuncOp kernel, const TensorCoreMatmul& shape);

// Replaces the body of the bufferized `kernel` with the kernel above (mma.sync, wgmma when
// shape.wgmma, the f32 SIMT kernel when shape.simt).
mlir::LogicalResult LowerTensorCoreMatmul(mlir::func::FuncOp kernel, const TensorCoreMatmul& shape);

// The chip the wgmma kernel's PTX and cubin target (wgmma needs the arch-specific sm_90a).
inline constexpr char kWgmmaChip[] = "sm_90a";

}  // namespace hexir::cuda
