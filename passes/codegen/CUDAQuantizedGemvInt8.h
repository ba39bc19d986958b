// The quantized GEMV's 8-bit activations (CUDAQuantizedGemv.h, QuantizedGemv::int8X): x is
// quantized per 32 values in shared memory, and a group's weights are dotted with it four
// bytes at a time by dp4a, as llama.cpp's MMVQ kernels do with its q8_1 activations. Each
// block of threads quantizes x itself while staging it (no kernel of its own, no launch):
//   d = max |x_j| * f32(1 / 127),  q_j = round-to-nearest-even(x_j * (1 / d))  (the product
//   rounded once: an fma; 0 where d is 0),
//   s = d * sum q_j      (the block's x as the dot sees it: x^_j = d q_j)
// and a 32-value sub-block of weights value = scale * u + offset (u the stored integer:
// a nibble, a nibble and a fifth bit, q8_0's signed byte) adds
//   scale * (d * sum_j u_j q_j) + offset * s,     sum_j u_j q_j: 8 dp4a
// (q4_0: scale d_w, offset -8 d_w; q4_1: d_w, m_w; q5_0: d_w, -16 d_w; q8_0: d_w, none; q4_k,
// q5_k: d sc, -dmin m of the sub-block). The kernel's result is W x^ in f32 sums: the test's
// reference quantizes x the same way (tests/e2e/cuda_quantized_gemv_test.cc).
// Why: the f32 decode spends about three instructions a weight (the nibble converted in
// place, an fma, the x read), which leaves the K-quants issue-bound (H200, session 26: 1622
// PTX instructions a lane per q4_k super-block) and every format far from the copy roof;
// here a weight costs about a quarter of an integer instruction plus a quarter dp4a.
//
// Shared memory, per group of the GEMV (QuantizedGemv::int8GroupBytes): the group's q bytes,
// then (d, s) as two f32 per 32 values, padded to an odd count of 16 bytes, so the 16-byte
// reads of a row's lanes (one group apart) fall in different banks.
#pragma once

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "mlir/IR/Builders.h"
#include "passes/codegen/CUDAQuantizedGemv.h"

namespace hexir::cuda {

// Values of x sharing one scale (ggml's q8_1 block).
inline constexpr int64_t kInt8XBlock = 32;

struct Int8GemvFormat;

// The format named `name` (ggml's: q4_0, q4_1, q5_0, q8_0, q4_k, q5_k) when its weights can
// be dotted with 8-bit x and its blocks are `blockValues` values in `blockBytes` bytes (the
// kernel's; another layout under that name keeps the f32 decode), else null (q6_k, whose
// blocks keep the generic kernel).
const Int8GemvFormat* FindInt8GemvFormat(llvm::StringRef name, int64_t blockValues, int64_t blockBytes);

// Emits the quantization of x into `xShared` (i32 words, s.sharedBytes() bytes) by the
// block's threads (`tid` the thread's index): task t (of K / 8) is values [8t, 8t + 8), the
// four tasks of 32 values in adjacent lanes of one warp (their maximum and sum by shuffles;
// every lane of a warp runs every shuffle). `eight(at)` returns x's values [at, at + 8) as 8
// f32 (loads, or the prologue computing them). The tasks' loads of up to 8 iterations are
// issued before any is quantized. No barrier is emitted.
void StageInt8X(mlir::OpBuilder& b, mlir::Location loc, const QuantizedGemv& s, mlir::Value xShared,
                mlir::Value tid, llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::Value at)> eight);

// Group u's x from shared memory: 8 words of q per 32 values, and their (d, s).
struct Int8XGroup {
  llvm::SmallVector<mlir::Value> words;   // i32, 4 values each, in order
  llvm::SmallVector<mlir::Value> d, sum;  // f32 per 32 values
};
Int8XGroup LoadInt8XGroup(mlir::OpBuilder& b, mlir::Location loc, const QuantizedGemv& s, mlir::Value xShared,
                          mlir::Value u);

// The dot of one group of a row (its bytes in `loads`: vectors of s.align i8, s.align >= 4)
// with x's group: an f32.
mlir::Value Int8GroupSum(mlir::OpBuilder& b, mlir::Location loc, const Int8GemvFormat& format,
                         const QuantizedGemv& s, mlir::ValueRange loads, const Int8XGroup& x);

}  // namespace hexir::cuda
