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

// Values per K-quant super-block (ggml's QK_K) and the q8_K activations its dots take:
// per 256 values
//   amax = max |x[j]|, s = 127 / amax, q[j] = roundeven(x[j] * s), d = 1 / s   (0 if amax = 0)
// d kept f32, and the integer sums of q over each 16 and each 32 values (ggml's
// quantize_row_q8_K takes s = -127 / x[j] at the largest |x[j]|: q and d of the opposite
// signs when that x is positive, the same products).
inline constexpr int64_t kSuperBlockElements = 256;

struct SuperBlockActivations {
  mlir::Value quants;  // memref<B x 256 x i8>
  mlir::Value scales;  // memref<B x f32>: d
  mlir::Value sums16;  // memref<B x 16 x i32>
  mlir::Value sums32;  // memref<B x 8 x i32>
};

// Emits the q8_K quantization of `x` (a memref<B x 256 x f32>, B static, unit inner stride)
// at the builder's insertion point, its buffers allocated at the start of `entry`. The quants
// of each block's 32-value groups are stored in `order` (slot i holds group order[i]; empty:
// natural order), the sums in natural order.
SuperBlockActivations QuantizeSuperBlockActivations(mlir::OpBuilder& b, mlir::Location loc, mlir::Value x,
                                                    mlir::Block& entry, llvm::ArrayRef<int64_t> order = {});

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

// The K-quants' scaled lanes: `acc` (vector<16 x i32>) plus, in lane i, the sum over the byte
// pairs 2i and 2i + 1 of (u . q)_pair * s_pair for `u` (vector<64 x i8>, each in [0, 127]),
// `q` (each in [-127, 127]) and `s` (vector<32 x i16>, one per pair; |s| <= 127):
// vpmaddubsw (|pair| <= 2 * 127 * 127, never saturates), then with `vnni` one vpdpwssd,
// else vpmaddwd + vpaddd.
mlir::Value Int8ScaledDotLanesAvx512(mlir::OpBuilder& b, mlir::Location loc, mlir::Value u, mlir::Value q,
                                     mlir::Value s, bool vnni, mlir::Value acc);

}  // namespace hexir::codegen
