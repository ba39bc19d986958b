// GGUF block-format decode matvecs on CUDA (used by CUDADistributeThreads before it picks a
// kernel shape). The llama importer writes the decode step's product with a block-format
// weight as a generic over (n, b, j) marked `hexir.block_matvec = "<ggml type>"`
// (compiler/importers/llama/BlockDecode.h):
//   out[n] += x[b][j] * decode(W[n], b, j)        x: [blocks][B], W: i8 [N][row bytes]
// whose body reads the element's bytes from W with tensor.extract and decodes them in
// registers. Two reduction loops keep such an op off the warp-reduction path
// (CUDAWarpReduce.h: exactly one reduction loop), which left one thread per output row
// walking its row element by element on a few SMs. Regrouped over units of 32 values
// (u = b B/32 + j / 32; every format's blocks hold a multiple of 32):
//   out[n] += sum_{t < 32} x[b][j0 + t] * decode(W[n], b, j0 + t),
//             b = u / (B/32), j0 = (u % (B/32)) 32
// it has one reduction loop, over u: a warp (or several) per row, each lane decoding whole
// units (adjacent across the lanes, so a warp's loads cover consecutive bytes of the row).
// Within a unit t is a constant, so the decode's offsets and shifts fold and what the 32
// values share (the block's scale, a K-quant's sub-block scale and minimum) is computed once.
// A prompt's M-row form (m, n, b, j), x [M][blocks][B] with M dynamic, is regrouped the same
// way into (m, n, u): a warp per (m, n). Unregrouped, each of its threads walked a whole row
// value by value, decoding a K-quant's sub-block scale per value, in a grid of N M / 256
// threads: a 1-token prompt of a TinyLlama-shaped q4_k model took most of a 200-token call
// (H200, session 23, 200 tokens greedy from BOS, ms/token of the whole call: q4_k 1.856 ->
// 1.250, q4_0 1.025 -> 0.940, q8_0 1.130 -> 1.041; the decode loop alone unchanged; ids
// equal).
#pragma once

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace hexir::cuda {

// Values a lane decodes per step of the regrouped reduction.
inline constexpr int64_t kBlockMatvecUnit = 32;

// The op's addition acc + f when `op` (tensor or buffer form) is out[n] += f(x[b][j], n, b, j)
// over loops (n, b, j), or out[m][n] += f(x[m][b][j], m, n, b, j) over (m, n, b, j), marked
// `hexir.block_matvec`, with x [blocks][B] or [M][blocks][B] (blocks and B static, B % 32 ==
// 0), and only that addition reading acc; null otherwise.
mlir::arith::AddFOp BlockMatvecSum(mlir::linalg::GenericOp op);

// Pairwise sum of `terms` (non-empty; short dependence chains).
mlir::Value SumTree(mlir::OpBuilder& b, mlir::Location loc, llvm::SmallVector<mlir::Value> terms);

// Rewrites each generic of `kernel` marked `hexir.block_matvec` that has the form above (one
// input x [blocks][B] or [M][blocks][B], B a multiple of 32, indexed (b, j) or (m, b, j); one
// init indexed (n) or (m, n); loops parallel (one or two), reduction, reduction; a body
// `yield acc + f(...)` in which only that addition reads acc) into a generic over (n, u) or
// (m, n, u) whose body reads x with tensor.extract and
// yields acc + (f_0 + ... + f_31) (a pairwise tree). Its only input is an unread
// `tensor.empty` of [units] i8, which gives the u loop its extent (a linalg loop must index
// some operand). The marker is dropped (the op no longer has the (n, b, j) form it states).
// Returns how many ops were rewritten; others are left as they are.
int RegroupBlockMatvecs(mlir::func::FuncOp kernel);

}  // namespace hexir::cuda
