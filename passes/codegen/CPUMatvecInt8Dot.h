// 8-bit activations for the block-format matvec kernel (CPUMatvecKernel.h), computed as ggml
// computes its quantized dot products (vec_dot_type q8_0, or q8_1 for formats with a min):
// x is quantized once per matvec, per block of 32 values,
//   amax = max |x[j]|, d = amax / 127, q[j] = roundeven(x[j] * (127 / amax))   (0 if amax = 0)
//   scale = f16(d), sum = f16(d * sum_j q[j])            (both kept as f32; sum for q8_1)
// and a weight block's 32 integers w are dotted with q exactly, in int32 lanes:
//   lanes[i] = sum_{j = 4i .. 4i + 3} w[j] * q[j]                        (vector<8 x i32>)
// (the lanes ggml's AVX2 mul_sum_i8_pairs gives), in a form x86's backend selects as
// vpmovsxbw + vpmaddwd + vphaddd (CPUMatvecInt8Dot.cpp; plain vector ops, so other targets
// get their own instructions).
#pragma once

#include <cstdint>

#include "mlir/IR/Builders.h"

namespace hexir::codegen {

// Values per activation block (ggml's QK8_0).
inline constexpr int64_t kInt8BlockElements = 32;

// Quantized activations in stack buffers of the kernel function.
struct Int8Activations {
  mlir::Value quants;  // memref<B x 32 x i8>
  mlir::Value scales;  // memref<B x f32>: f16(d)
  mlir::Value sums;    // memref<B x f32>: f16(d * sum q), or null
};

// Emits the quantization of `x` (a memref<B x 32 x f32> with B static and unit inner
// stride) at the builder's insertion point; the buffers are allocated at the start of
// `entry` (the kernel function's entry block).
Int8Activations QuantizeActivations(mlir::OpBuilder& b, mlir::Location loc, mlir::Value x, bool withSums,
                                    mlir::Block& entry);

// The int32 lanes of w . q for two vector<32 x i8> (w in [-128, 127], q in [-127, 127]).
// `x86Avx2`: with AVX2's byte multiply-adds (llvm.x86.avx2.* intrinsics: vpsignb,
// vpmaddubsw, vpmaddwd), as ggml's AVX2 code; otherwise plain vector ops.
mlir::Value Int8DotLanes(mlir::OpBuilder& b, mlir::Location loc, mlir::Value w, mlir::Value q, bool x86Avx2);

// AVX-512 (AVX512BW): the lanes of two blocks at once. `w` and `q` are vector<64 x i8>
// (block 2p's 32 integers, then block 2p + 1's), `negQ` = 0 - q (computed once for all
// rows); the result is vector<16 x i32> whose lanes 0-7 are block 2p's Int8DotLanes and 8-15
// block 2p + 1's (the same integers): |w| (vpabsb) times q negated where w < 0 (vpmovb2m +
// a masked move), then Int8DotLanesUnsignedAvx512.
mlir::Value Int8DotLanesAvx512(mlir::OpBuilder& b, mlir::Location loc, mlir::Value w, mlir::Value q, mlir::Value negQ,
                               bool vnni);
// The same lanes for `u` in [0, 128] (a format's unsigned integers, or |w|), plus `acc`
// (vector<16 x i32>; null: zero): vpmaddubsw + vpmaddwd with ones (+ vpaddd), or with
// `vnni` (AVX512_VNNI) one vpdpbusd accumulating into acc. Equal: vpmaddubsw's pairs never
// saturate (|pair| <= 2 * 128 * 127).
mlir::Value Int8DotLanesUnsignedAvx512(mlir::OpBuilder& b, mlir::Location loc, mlir::Value u, mlir::Value q, bool vnni,
                                       mlir::Value acc = {});

}  // namespace hexir::codegen
