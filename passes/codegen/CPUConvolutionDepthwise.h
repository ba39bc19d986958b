// f32 depthwise convolutions of CPU kernels (one input channel per filter, the ONNX importer's
// form matched by MatchConvolution in CPUConvolutionKernel.h), on bufferized kernels:
//
//   out[n][f][oh][ow] += x[n][f][oh * sh + kh * dh][ow * sw + kw * dw] * w[f][0][kh][kw]
//
// On staged planes: the output positions of one channel in the vector lanes, each tap a
// broadcast weight, no gather or scatter at strides 1 and 2 (NCHW puts a plane's positions, not its channels, at
// unit stride; the channel-lane kernel this replaced gathered its window, its weights and its
// output per block of channels: a 5x5 over 1152 x 6 x 6 took 62 us for 0.23 MFLOP).
//
// Per channel and output tile (R rows x T columns), the input rows the tile reads are copied
// ("staged") into a stack buffer, split into sh x sw phase planes (phase (a, b) holds the
// input's rows a, a + sh, ... and columns b, b + sw, ...) of one row pitch P = T + (KW - 1) * dw
// / sw, zero where the input has no element (its border). Output (r, q) and tap (i, j) then
// read phase ((i * dh) % sh, (j * dw) % sw) at row r + (i * dh) / sh, column q + (j * dw) / sw,
// so that over the "extended" positions e = r * P + q every tap reads one contiguous run:
//
//   ext[e] = sum over (i, j) of w[c][i][j] * phase(i, j)[e + ((i * dh) / sh) * P + (j * dw) / sw]
//
// computed in vectors of e (4 a step, two partial sums per vector to hide the FMA latency),
// then out[n][c][r][q] += ext[r * P + q] for q < T (the P - T other columns are discarded:
// 6x6 outputs of a 5x5 window fill 36 of the 60 lanes they compute). Staging reads x's rows
// with masked vector loads (zero past its last column) and stores whole vectors; stride 2
// along W deinterleaves two loads with two shuffles, wider strides gather each phase.
// x, w and out are read through their strides (dynamic batch, planes and channel slices).
//
// A zero pad fused into the kernel (hexir-form-dispatch-regions' fuse-pads-into-depthwise, CPU:
// the importer's constant-zero pad before the convolution, of static or run-time extents)
// bufferizes to a buffer of x's shape that a fill of zero and then a copy of the unpadded
// source into a window at static offsets (rows [top, top + H), columns [left, left + W),
// every batch and channel; H and W the source's extents, static or, for a dynamic export's
// pad, the run-time sizes of the view of the source that CPUDynamicPad.h copies) write
// before the convolution reads it. The kernel then stages from the source instead,
// each row and column shifted by the pad and zero outside the source (a staged row's first
// columns left of the source element by element, the rest as above), and the fill and the
// copy are erased: no padded copy of the input is written (EfficientNet-B0: 17 pad
// dispatches, MobileNetV3: 12). Pads wider than the window's reach keep the copy.
//
// On a plane of one tile (static extents) the taps that read only the zero pad at every
// output (a fused pad's rows above and columns left, or rows and columns past x's end) are
// not emitted: a 5x5 window over 2 x 2 outputs of a 2 x 2 input keeps 9 of its 25 taps, over
// a 1x1 plane the center one (MobileNetV3's and EfficientNet-B0's last stages: 576 and 1152
// channels of 2 x 2 at 64 x 64 images).
//
// With dynamic extents (a dynamic export) the same is decided per tile at run time: a tile
// whose every tap reaches x (4 compares: the bounds grow with the tap) runs the taps as
// above, any other each tap under a branch on whether it reaches x. And the tile's rows
// follow from the plane's run-time pitch (min(T, OW) + the window's extra columns) as far
// as the buffers, sized for T columns, hold: a 16-wide plane takes 25 rows a tile, not 7.
//
// Small static planes (at most kDepthwiseChannelLanePositions outputs and
// kDepthwiseChannelLaneInputs input elements, after a fused pad: 2 x 2 and 4 x 4 outputs) have
// too few positions to fill a vector per channel (a staged 4 x 4 output took ~52 ns a channel,
// mostly staging and loop overhead): there the channels are the lanes. Per batch and block
// of `lanes` channels (the last one masked), every tap reading x somewhere (the plane and the
// pad are static, so the taps and positions that read only the pad are known and skipped)
// has its weights gathered once (w's channel stride apart), every input position read is
// gathered once (x's channel stride apart), the oh * ow outputs are accumulators, fully
// unrolled FMAs, then each output position of out is gathered, added to and scattered back.
// The weights and inputs of the block two ahead are prefetched a cache line at a time (where
// each channel's are contiguous): the gathers touch a line per lane, and after a 1x1 that
// streamed its filter through the caches each waited on L3 in turn (EfficientNet-B0's 5x5
// over 1152 channels of 2 x 2: 35 us without, 14 us with).
//
// A dynamic export's planes are the same small planes at run time (its last stages: 2 x 2 at
// 64 x 64 images): before the staged kernel, run-time tests of the plane's extents choose a
// channel-lane kernel specialised on one square plane of o x o outputs (o = 1..4) and h x h
// inputs (each h whose window gives o at the stride: a fused pad's (o - 1) s + 1 .. o s, an
// unpadded input's (o - 1) s + (KH - 1) d + 1 ..; at most kDepthwiseChannelLaneInputs), the
// channel strides read from the views at run time; every other plane takes the staged kernel
// (MobileNetV3's 576-channel 5x5 over 2 x 2: 22.4 -> 3.7 us, as static). Likewise, the
// staged kernel of static extents for the square planes of kStagedPlaneOutputs outputs (and
// the inputs their window reads) that the channel lanes do not take: its tiles, rows and
// live taps compile-time constants, as in a static export (MobileNetV3's 72-channel 3x3
// over 16 x 16 at stride 2: 9.7 -> 5.4 us, static 5.3; the dynamic kernel's loops with run-time bounds
// around a few vectors of work cost 1.5-2.5x). One pair of stack buffers serves all.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "passes/codegen/CPUConvolutionKernel.h"

namespace hexir::codegen {

// Output columns a staged tile covers at most (a wider row takes several tiles) and the
// extended positions a tile computes at most (its rows follow from the row pitch).
constexpr int64_t kDepthwiseMaxColumns = 64;
constexpr int64_t kDepthwiseTileElements = 512;
// Static planes of at most this many output positions and input elements take the
// channel-lane kernel instead (see above).
constexpr int64_t kDepthwiseChannelLanePositions = 16;
constexpr int64_t kDepthwiseChannelLaneInputs = 36;
// Output sides of the square planes a dynamic export's staged kernel has static-extent
// variants for (see above).
constexpr int64_t kStagedPlaneOutputs[] = {4, 7, 8, 14, 16};

// Run-time plane-size variants of a dynamic export's convolutions (the depthwise kernels here,
// the 1x1 and grouped GEMMs in CPUConvolutionKernel.cpp, the packed-filter GEMM): x's plane
// h x w, out's oh x ow; an extent of ShapedType::kDynamic is not constrained.
struct PlaneSize {
  int64_t h, w, oh, ow;
};
// Whether the static extents of x's and out's planes (dims 2 and 3) allow `p`.
bool PlaneFitsStaticExtents(const PlaneSize& p, mlir::Value x, mlir::Value out);
// Whether x's and out's planes are `p` at run time (an i1).
mlir::Value PlaneIs(mlir::OpBuilder& b, mlir::Location loc, mlir::Value x, mlir::Value out, const PlaneSize& p);
// `m` (rank 4) seen with a static h x w plane (its strides unchanged).
mlir::Value CastPlane(mlir::OpBuilder& b, mlir::Location loc, mlir::Value m, int64_t h, int64_t w);

// Emits `out += depthwise(x, w)` of `convolution` at `b`'s insertion point (before it); its
// stack buffers are allocated at the entry of `kernel` and zeroed before the convolution. The
// caller erases `convolution`.
void EmitDepthwiseConvolution(mlir::OpBuilder& b, mlir::Location loc, mlir::func::FuncOp kernel,
                              int64_t lanes, const ConvolutionGeometry& g, mlir::Operation* convolution,
                              mlir::Value x, mlir::Value w, mlir::Value out);

}  // namespace hexir::codegen
