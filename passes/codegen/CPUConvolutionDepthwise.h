// f32 depthwise convolutions of CPU kernels (one input channel per filter, the ONNX importer's
// form matched by MatchConvolution in CPUConvolutionKernel.h), on bufferized kernels:
//
//   out[n][f][oh][ow] += x[n][f][oh * sh + kh * dh][ow * sw + kw * dw] * w[f][0][kh][kw]
//
// Two loop nests, chosen per call:
// - Channel lanes (the default): a block of `lanes` channels is one vector. Per block, its
//   KH x KW weights are gathered once into a stack table of vectors; per output tile of
//   kTileRows x kTileColumns positions, the input window the tile reads is gathered once into
//   a stack buffer laid out [row][column][channel] (the layout change of a channel-blocked
//   network, done in the kernel: NCHW stays the layout between ops); then every output
//   vector is its accumulator gathered from out, KH x KW taps unrolled (fused multiply-adds
//   of a buffer vector and a weight vector, kOutputsPerStep neighbouring positions sharing each
//   weight load) and scattered back. No lane is idle on small planes (MobileNetV3's 2x2 to 8x8)
//   and strides and dilations cost nothing in the inner loop.
// - Output rows (stride 1 along W and rows of at least 2 x lanes outputs, where each row fills
//   its vectors): out's row in vectors, the KH x KW weights broadcast, x loaded contiguously,
//   the last vector of a row masked.
// Both read x, w and out through their strides (any window of a larger plane, dynamic batch
// and spatial dims); channel lanes need each operand's channel stride times `lanes` below
// 2^31 (32-bit gather offsets), the row loop nest runs otherwise.
#pragma once

#include "mlir/IR/Builders.h"
#include "passes/codegen/CPUConvolutionKernel.h"

namespace hexir::codegen {

// Output positions a channel-lane tile covers; its input window lives on the stack.
constexpr int64_t kDepthwiseTileRows = 8;
constexpr int64_t kDepthwiseTileColumns = 8;
// Neighbouring output positions (along ow) accumulated together in registers.
constexpr int64_t kDepthwiseOutputsPerStep = 4;

// Emits the depthwise convolution `out += conv(x, w)` at `b`'s insertion point; the stack
// buffers are allocated at the entry of `kernel` (never inside a loop).
void EmitDepthwiseConvolution(mlir::OpBuilder& b, mlir::Location loc, mlir::func::FuncOp kernel,
                              const MatmulTiles& tiles, const ConvolutionGeometry& g,
                              mlir::Value x, mlir::Value w, mlir::Value out);

}  // namespace hexir::codegen
