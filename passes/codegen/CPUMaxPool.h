// f32 max pools of CPU kernels (hexir-cpu-lower-executables, on bufferized kernels, before
// linalg becomes loops). The ONNX importer's MaxPool (compiler/importers/onnx/NNPool.cc; its
// input padded with -inf by a dispatch of its own, its output filled with -inf):
//
//   out[n][c][oh][ow] = maximumf(out, x[n][c][oh * sh + kh * dh][ow * sw + kw * dw])
//
// a 6-loop generic (n, c, oh, ow, kh, kw) whose second input only gives the window's extents.
//
// Lowered as vector loops: per (n, oh) and run of `lanes` outputs along ow (masked past OW),
// kMaxPoolChannels channels at a time (the rest one at a time), each channel's accumulator
// one vector, each tap's inputs one vector (stride 1: a masked load; stride 2: two masked
// loads of the row and their even lanes; wider strides a gather), combined with the same
// maximumf in the loop's tap order (bitwise the loop's result, NaNs included), stored once.
// The channels' chains are independent: x86's maximumf is six dependent instructions (NaN
// and signed-zero handling), so one chain of KH * KW taps per output vector ran at its
// latency (SqueezeNet's 3x3 / 2 pools over 64 x 31 x 31, 128 x 15 x 15 and 256 x 7 x 7:
// 44, 38 and 31 us). Where the kernel fills out with a constant just before the pool (the
// importer's -inf), the accumulators start as that constant and the fill goes (it was
// vectorized across channels as scatters).
//
// Windows that overlap along h (a static KH, sh a multiple of dh and below KH * dh: 3x3 / 2)
// run down each column of runs instead: each input row's maximum over its KW taps is computed
// once and held in registers for the output rows whose windows share it, each output the
// maximum of its KH held rows (3x3 / 2: 6 maximums an output vector where the taps took 9;
// SqueezeNet's three pools, one thread, least of 6 alternating runs under load, 33.5 -> 26.5
// us). The same values as the tap order; only which NaN's payload a result of several NaNs
// carries may differ.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hexir::codegen {

// Output channels whose maximum chains one iteration interleaves (SqueezeNet's three pools
// alone, least of 200 calls: 4 and 16 channels 0-10% slower than 8).
constexpr int64_t kMaxPoolChannels = 8;

// Rewrites every max pool of the bufferized `kernel` as above (vectors of `lanes` f32); the
// window's buffer (read by nothing else) goes too.
void LowerMaxPools(mlir::func::FuncOp kernel, int64_t lanes);

}  // namespace hexir::codegen
