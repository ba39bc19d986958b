// Matvec programs and GGUF block data for the matvec kernel tests (cpu_matvec_test,
// cuda_quantized_gemv_test): the llama importer's block-format matvec generic with its own
// decode body (compiler/importers/llama/BlockDecode.h), random blocks of a format, and the
// f64 reference dequantization (ggml's dequantize_row_<type>, written here from its
// definitions).
#pragma once

#include <cstdint>
#include <string>

#include "compiler/importers/llama/GgmlBlocks.h"
#include "tools/common/tensor_io.h"

namespace hexir::e2e {

// "?" for a negative (dynamic) dim, else the number.
std::string Dim(int64_t d);
std::string MatrixType(int64_t a, int64_t b, const char* elem);
// A zero-filled [n] output `%e` of type `out`; its size is tensor.dim %w 0 when n is dynamic.
std::string Output(int64_t n, const std::string& wType, const std::string& out);

// func.func @name(%w: i8 [n][row bytes], %x: [k] f32[, %r: [n] f32]) -> [n] f32: y = W x with W
// in `format` (n < 0: dynamic rows) through the importer's marked generic (EmitModule.cc
// BlockMatMul); with `residual`, y + r (an elementwise consumer, as the decode step's
// output projections have).
std::string BlockMatvecSource(const std::string& name, const compiler::llama::GgmlBlockInfo& format, int64_t n,
                              int64_t k, bool residual = false);

// func.func @name(%w: i8 [n][row bytes], %x: [k] f32, %cache: [rows][n] f32, %at: i64) ->
// [rows][n] f32: W x written into row %at of the cache (a [1][n] tensor.insert_slice), as the
// llama importer writes the decode step's V projection into its KV cache.
std::string BlockMatvecRowWriteSource(const std::string& name, const compiler::llama::GgmlBlockInfo& format,
                                      int64_t n, int64_t k, int64_t rows);

// func.func @name(%w1: i8 [n][row bytes], %w3: same, %x: [k] f32) -> [n] f32: SiLU(W1 x) *
// (W3 x), two marked generics of one x and their consumer, as a llama decode layer's w1, w3
// and gate (CUDA modules fuse the pair into one quantized GEMV kernel).
std::string BlockMatvecSiblingSource(const std::string& name, const compiler::llama::GgmlBlockInfo& format, int64_t n,
                                     int64_t k);

// `source` (one of the functions above, its input vector named %x: [k] f32) with that input
// replaced by RMSNorm(x0) * nw, x0 and nw [k] f32 arguments in its place (x0, then nw): the
// importer's norm (sum of squares, then nw * x0 / sqrt(ss / k + 1e-5)) as the decode step
// computes it before q/k/v and w1/w3.
std::string RmsNormedSource(const std::string& source, int64_t k);

// func.func @name(%w: i8 [n][row bytes], %x: [?][k] f32) -> [?][n] f32: the M rows of x each
// times W (the importer's prompt form: a generic over (m, n, b, j), M dynamic, marked).
std::string BlockMatmulRowsSource(const std::string& name, const compiler::llama::GgmlBlockInfo& format, int64_t n,
                                  int64_t k);

// The little-endian f16 at `p`.
float HalfAt(const uint8_t* p);

// One block of `format` at `block` -> its block_elements values.
void DequantizeBlock(const compiler::llama::GgmlBlockInfo& format, const uint8_t* block, double* values);

// An i8 [n][row bytes] tensor of random blocks: random bytes, each f16 field a finite scale
// in [0.002, 0.05] (a min of either sign).
tools::HostTensor RandomBlocks(const compiler::llama::GgmlBlockInfo& format, int64_t n, int64_t k, unsigned seed);

}  // namespace hexir::e2e
