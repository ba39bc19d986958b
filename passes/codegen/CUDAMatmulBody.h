// What both tensor-core GEMM kernels of CUDAMatmul.h (mma.sync: CUDAMatmulKernel.cpp,
// wgmma: CUDAMatmulWgmma.cpp) take from the bufferized kernel they replace: A, B, the
// accumulator's fill value, the fused epilogue generics; plus the index arithmetic and the
// walk over output tiles both build.
#pragma once

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "passes/codegen/CUDAMatmul.h"

namespace hexir::cuda {

// The bufferized body, found again after bufferization.
struct MatmulBody {
  mlir::Value a, b;
  mlir::Value init;                         // f32 scalar
  mlir::Value product;                      // the contraction's output buffer
  llvm::SmallVector<mlir::linalg::GenericOp> epilogue;
  mlir::Value result;                       // the buffer the last value is stored to
  llvm::SmallVector<mlir::Operation*> erased;  // the ops the new body replaces
};

mlir::FailureOr<MatmulBody> FindMatmulBody(mlir::func::FuncOp kernel, const TensorCoreMatmul& s);

// The indices of element (x, y) of `memref`, with `batchIndex` in front for a rank-3 (batched)
// operand.
llvm::SmallVector<mlir::Value> MatmulIndices(mlir::Value memref, mlir::Value batchIndex, mlir::Value x,
                                             mlir::Value y);

// Applies the fused generics to `v` (the product at (batchIndex,) row, col; batchIndex
// unused for rank-2 results) and stores the last value to body.result.
void ApplyMatmulEpilogue(mlir::OpBuilder& b, mlir::Location loc, const MatmulBody& body,
                         mlir::Value batchIndex, mlir::Value v, mlir::Value row, mlir::Value col);

// The output element (row, col) from its f32 sum `v`, where row < M and col < N: plus the
// fill value (unless it is a constant zero), through the fused epilogue, stored.
void StoreMatmulElement(mlir::OpBuilder& b, mlir::Location loc, const MatmulBody& body,
                        mlir::Value batchIndex, mlir::Value v, mlir::Value row, mlir::Value col,
                        mlir::Value M, mlir::Value N);

// The problem's extents M, K, N read from the operands (A [..][M][K], B [..][K][N] or, with
// `transposedB`, [..][N][K]).
struct MatmulExtents {
  mlir::Value M, K, N;
};
MatmulExtents ReadMatmulExtents(mlir::OpBuilder& b, mlir::Location loc, const MatmulBody& body,
                                bool transposedB);

// Erases the linalg ops of the old body and the temporaries only they used (after the new
// body was built in front of the terminator).
mlir::LogicalResult EraseMatmulBody(const MatmulBody& body);

// Builds the wgmma kernel (CUDAMatmulWgmma.cpp) at `b`'s insertion point.
mlir::LogicalResult BuildWgmmaMatmul(mlir::OpBuilder& b, mlir::func::FuncOp kernel,
                                     const TensorCoreMatmul& s, const MatmulBody& body);

// Builds the f32 SIMT kernel (CUDAMatmulSimt.cpp) at `b`'s insertion point.
mlir::LogicalResult BuildSimtMatmul(mlir::OpBuilder& b, mlir::func::FuncOp kernel,
                                    const TensorCoreMatmul& s, const MatmulBody& body);

// Index arithmetic on `b` at `loc` (unsigned, as every index of the kernels is >= 0).
struct KernelArith {
  mlir::OpBuilder& b;
  mlir::Location loc;
  mlir::Value idx(int64_t v) { return mlir::arith::ConstantIndexOp::create(b, loc, v); }
  mlir::Value add(mlir::Value x, mlir::Value y) { return mlir::arith::AddIOp::create(b, loc, x, y); }
  mlir::Value mul(mlir::Value x, mlir::Value y) { return mlir::arith::MulIOp::create(b, loc, x, y); }
  mlir::Value div(mlir::Value x, mlir::Value y) { return mlir::arith::DivUIOp::create(b, loc, x, y); }
  mlir::Value rem(mlir::Value x, mlir::Value y) { return mlir::arith::RemUIOp::create(b, loc, x, y); }
  mlir::Value xori(mlir::Value x, mlir::Value y) { return mlir::arith::XOrIOp::create(b, loc, x, y); }
  mlir::Value ult(mlir::Value x, mlir::Value y) {
    return mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::ult, x, y);
  }
  mlir::Value both(mlir::Value x, mlir::Value y) { return mlir::arith::AndIOp::create(b, loc, x, y); }
  mlir::Value i32(mlir::Value index) {
    return mlir::arith::IndexCastUIOp::create(b, loc, b.getI32Type(), index);
  }
  mlir::Value i64(mlir::Value index) {
    return mlir::arith::IndexCastUIOp::create(b, loc, b.getI64Type(), index);
  }
  mlir::Value ceilDiv(mlir::Value x, int64_t d) { return div(add(x, idx(d - 1)), idx(d)); }
  // Base pointer of a memref in address space `space`.
  mlir::Value pointer(mlir::Value memref, unsigned space) {
    mlir::Value at = mlir::memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    return mlir::LLVM::IntToPtrOp::create(
        b, loc, mlir::LLVM::LLVMPointerType::get(b.getContext(), space), i64(at));
  }
  mlir::Value byteOffset(mlir::Value base, mlir::Value bytes, unsigned space) {
    return mlir::LLVM::GEPOp::create(b, loc, mlir::LLVM::LLVMPointerType::get(b.getContext(), space),
                                     b.getI8Type(), base, llvm::ArrayRef<mlir::LLVM::GEPArg>{bytes});
  }
  // The element offset of `at` in the row-major (dense) `memref`.
  mlir::Value linearIndex(mlir::Value memref, llvm::ArrayRef<mlir::Value> at) {
    mlir::Value linear = idx(0);
    for (auto [d, i] : llvm::enumerate(at)) {
      mlir::Value extent = mlir::memref::DimOp::create(b, loc, memref, d);
      linear = add(mul(linear, extent), i);
    }
    return linear;
  }
};

// The walk over output tiles both kernels share: a grid-stride loop over the batch x tilesM x
// tilesN tiles of s.tileM x s.tileN, taken kGroupRows tile rows at a time and down the rows
// first (so that a wave's A rows and B columns stay in L2). With s.splits > 1 the blocks run
// in clusters of s.splits (blocks [c S, c S + S) form cluster c), each cluster walks the
// tiles and block r of a cluster takes the r-th slice of K (`splitRank`).
struct TileWalk {
  mlir::scf::ForOp loop;
  mlir::Value batchIndex, rowBase, colBase;  // of the loop's tile
  mlir::Value splitRank;                     // null when s.splits == 1
};

// Builds the loop at `k`'s insertion point and leaves the insertion point at the start of its
// body. M and N: the output's extents.
TileWalk BeginTileWalk(KernelArith& k, const TensorCoreMatmul& s, mlir::Value M, mlir::Value N);

}  // namespace hexir::cuda
