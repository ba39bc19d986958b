// M = 1 matrix-vector products read at memory bandwidth (hexir-cpu-lower-executables, on
// bufferized kernels, before linalg becomes loops).
//
// y[n] += sum_k W[n][k] * x[k] with W row-major [N][K] (k, the contiguous axis, is reduced):
//   dense: `linalg.matvec`, or a generic over (n, k) reading x[k] and W[n][k] whose body is
//     the multiply-add (W f32, or f16 widened by arith.extf);
//   blocks: a generic over (n, b, j) marked `hexir.block_matvec = "<ggml type>"` (the llama
//     importer's statement that its body decodes that GGUF block format), x viewed as
//     [K / B][B], W the i8 [rows][row bytes] memref its body loads from, at a row that is a
//     function of n (cloned from the body: a workgroup's tile offset is in it); or the
//     prompt's M rows of them, a marked generic over (m, n, b, j) with x [M][K / B][B] and
//     y [M][N] (M dynamic), lowered to a loop over m running the kernel below on the views
//     x[m] and y[m] (each row reads the whole weight).
// becomes, for each group of `rows` (R) rows n..n+R-1 (R = 4 for the blocks dotted in f32; 1
// for dense weights and the int8 dots: the loads of 4 rows a row apart wait on memory, where
// one row is one sequential stream):
//
//   acc[r] = 0                                       (vectors of `lanes` f32, in registers)
//   dense:  for k in steps of lanes*unroll: xv = x[k..]; acc[r][u] += widen(W[n+r][k..]) * xv
//           the last partial step with masked loads (any K)
//   blocks: for each block b, each group g of G values sharing a scale (and a min):
//             xv = x[b][g..]                         (G / 8 vectors, loaded once for R rows)
//             p = sum_v q(W[n+r], b, v) * xv[v]      (q: the integers, decoded in registers)
//             acc[r] += scale(r, b, g) * p  (+ min(r, b, g) * sum_v xv[v])
//   y[n+r] += reduce_add(acc[r])
//
// q8_0, q4_0, q4_1, q5_0 with K static (<= 2048 blocks) instead dot with 8-bit activations,
// as ggml does (CPUMatvecInt8Dot.h): x quantized once a workgroup to blocks (q[b], d_x[b],
// sum_x[b]; hexir-cpu-distribute-workgroups gives such a matvec at least 48 rows a workgroup),
//   blocks: for each block b: acc[r] += (d_w * d_x[b]) * int32 lanes of sum_v w_q[v] * q[b][v]
//                               (+ m_w * sum_x[b] into a scalar, for q4_1's min)
//   (on AVX-512 two blocks a step, or four for the nibble formats without a min: two pairs'
//   lanes summed pairwise into one vector before the conversion and the FMA)
// (the integer lanes on AVX2 as ggml computes them: vpsignb, vpmaddubsw, vpmaddwd).
// q4_k, q5_k, q6_k with K static (<= 256 super-blocks) on AVX-512 dot ggml's q8_K activations
// (x quantized per 256 values, f32 scale, integer sums per 16 and 32 values) within each
// super-block in integers, as llama.cpp's vec_dot_<k>_q8_K:
//   isum = sum over 64-value chunks c of vpmaddubsw(u_c, q_c) * sc (per 16 values; vpdpwssd)
//          (- 32 * sc . xsum16 for q6_k)
//   acc[r] += (d_w * d_x[b]) * isum  (16 lanes)   accMin[r] += (dmin_w * d_x[b]) * m . xsum32
// rows of at most 8 super-blocks unrolled.
// Each step of the 32-value blocks first prefetches every row 8192 bytes past the bytes it
// reads; dense and super-block rows are left to the hardware prefetchers (faster here).
// The rows left below R run the same code with R = 1. No per-element scalar gathers: each
// row's bytes are read with vector loads along k, x once per group of rows. The formats
// (q8_0, q4_0, q4_1, q5_0, q4_k, q5_k, q6_k; ggml's block layouts) are decoded in
// CPUMatvecBlockFormats.cpp; an unknown name or a shape that is not the format's keeps the
// loop lowering of the generic's body.
#pragma once

#include <cstdint>

#include "dialects/hexir/IR/HexirAttributes.h"  // kBlockMatvecAttr: the importer's mark
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "passes/codegen/CPUTarget.h"

namespace hexir::codegen {

// Rewrites every such matvec of the bufferized `kernel` for `target` (dense: vectors of its
// f32 lanes; blocks: 8 lanes); the others are left as they are.
void LowerMatvecsToVectorKernels(mlir::func::FuncOp kernel, const CPUTarget& target);

// Whether `op` (tensors or buffers) is a one-row block matvec whose kernel quantizes x to
// 8-bit blocks before its rows (every workgroup does, for all of x); the K-quants' only on
// AVX-512, which this assumes.
bool QuantizesActivations(mlir::linalg::LinalgOp op);

// The x86 intrinsics of the int8 dots are calls of private declarations until the kernel's
// buffers are deallocated; this turns them into llvm.call_intrinsic (after the loops
// pipeline, before the LLVM one).
void LowerDeferredIntrinsicCalls(mlir::ModuleOp module);

}  // namespace hexir::codegen
