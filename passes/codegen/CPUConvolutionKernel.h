// f32 2-D convolutions of CPU kernels (hexir-cpu-lower-executables, on bufferized kernels,
// before linalg becomes loops). The ONNX importer's form (compiler/importers/onnx/NNConv.cc):
// a linalg.generic over (n, f, oh, ow, c, kh, kw) reading a pre-padded NCHW input,
//
//   out[n][f][oh][ow] += x[n][chan][oh * sh + kh * dh][ow * sw + kw * dw] * w[f][c][kh][kw]
//
// with chan = c (dense), f + c with one input channel per filter (depthwise), or
// (f floordiv Fg) * Cg + c (grouped: G groups of Fg filters, each over Cg channels; f * Cg + c
// when Fg = 1).
//
// Dense convolutions are the packed GEMM of CPUMatmulMicroKernel.h (implicit GEMM), per n:
//   C[f][p] += A[f][k] * B[k][p],  A = w as [F][C*KH*KW] (no copy), p = oh * OW + ow,
//   B[k = (c, kh, kw)][p] = x[n][c][oh * sh + kh * dh][ow * sw + kw * dw]
// B is never materialised: each packed panel gathers its NR columns from x, with plain vector
// loads when they are consecutive in x (stride 1 and the panel inside one output row, or a
// 1x1 convolution over a whole unpadded plane; a partial panel, the plane's last or a plane
// of fewer than NR positions, with masked loads of its columns inside N), at strides 1 and 2
// over output rows of at least one vector as two masked runs a vector (its lanes in each of
// the two output rows it spans, merged), and vector.gather otherwise; a window wider than 1x1 reads tap k's offset in x (c * channel stride + kh * dh *
// pitch + kw * dw) from a stack table filled once per GEMM (at most 4096 taps; more are
// computed per step of k). 1x1 convolutions are therefore matmuls over the plane (with dynamic planes too,
// whose gather offsets are run-time values: a 1x1 112 -> 672 over 4 x 4 took 64 us a call
// gathered, 38 us masked, 27 us static). x is read through its row pitch (a window of a larger
// plane is fine); out's rows must be one run: where its strides are dynamic (dynamic exports)
// the kernel runs when they are at run time, the loop lowering otherwise. A 1x1 convolution at
// stride 1 over such planes first tests them at run time for 2 x 2, 3 x 3, 4 x 4 and 7 x 7 and runs the
// kernel on views of that static plane there (kDensePlaneOutputs in the .cpp: EfficientNet-B0's
// 80 -> 480 over 4 x 4 16.5 -> 11.2 us, static 13.5; MobileNetV3's 96 -> 576 over 2 x 2 15.3 ->
// 9.4 us, static 3.5 on its filter packed at load; a constant shallow filter over a dynamic
// plane is now packed besides, and such a 2 x 2 plane runs on the panels: 4.4 us, as static).
//
// A dense convolution whose constant filter was packed once at load runs on the packed
// filter instead: see LowerConvolutionOnPackedFilter below; one packed besides its original
// (a dual unpack) on the panels over at most kTinyPlanePositions positions, chosen at run time.
//
// Grouped convolutions run the dense kernel once per group, on views of the group's Cg
// channels of x and its Fg filters of w and out (static F, a multiple of Fg: workgroups do not
// split them, CPUDistributeWorkgroups). With a few filters (the GEMM's rows) per group, B's
// panels cost about as much as the FMAs, so their tiles follow out's plane (GroupedTiles in
// the .cpp): a static plane of at most one vector of outputs takes one vector of the fewest
// lanes that hold them (a 2 x 2 plane 4 columns, not NR); a wider one at stride 1 or 2 the
// largest NR dividing OW, so that each panel is one output row, loaded (at stride 2 the even
// elements of two loads), not gathered. A dynamic plane is tested at run time for 2 x 2 and
// 4 x 4 outputs (out seen with that static plane there), then for the NR dividing OW (one
// vector, half a vector). The importer's generic of a dynamic export had run as loops with
// run-time bounds: RegNetY-400MF's 3x3s (groups of 8) took 200-360 us each against 35-75 us
// static.

#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "passes/codegen/CPUConvolutionEpilogue.h"
#include "passes/codegen/CPUMatmulMicroKernel.h"

namespace hexir::codegen {

enum class ConvolutionKind { kDense, kDepthwise, kGrouped };

struct ConvolutionGeometry {
  ConvolutionKind kind;
  int64_t strides[2];
  int64_t dilations[2];
  int64_t groupFilters = 1;  // kGrouped: Fg, the filters of a group
};

// The geometry of `op` when it is a convolution one of the kernels above takes (f32, the
// importer's maps, unit-stride rows of x, w and out when they are memrefs).
std::optional<ConvolutionGeometry> MatchConvolution(mlir::linalg::LinalgOp op);

// A dense convolution whose filter hexir-cpu-pack-matmul-operands prepacked (read through
// an unpack marked kPackedRhsAttr, sliced along F from a multiple of NR) runs on the packed
// filter instead (CPUConvolutionPackedFilter.cpp): the output positions are the GEMM's rows,
// the filters its columns, A loaded straight from x. Emits it before `op` and returns true,
// or emits nothing and returns false.
// Its register tiles are at most kPackedFilterMaxTileRows rows (the target's MR otherwise).
// Filters of larger C * KH * KW keep the kernels above (the packed-filter kernel's table of
// tap offsets lives on the stack), and hexir-cpu-pack-matmul-operands does not pack them.
constexpr int64_t kMaxPackedFilterDepth = 16384;
// The packed-filter kernel's register tile keeps one x address per row in a general register
// (row(p) is a run-time value unless the plane and the tile's place in it are constants, which
// only a static plane of at most one tile gives): x86-64's 15 allocatable general registers
// hold 8 of them beside the k loop's own (step, tap table, tap, B panel). AVX-512's 14 rows
// spilled a dozen accumulators a k step (vmovaps to and from the stack between the FMAs):
// 3x3 convolutions with dynamic 4x4 to 16x16 planes ran 1.2-1.7x their static export, and
// static 8x8 and 16x16 planes lost 1.1-1.3x too (bench/README.md, "Dynamic against static").
constexpr int64_t kPackedFilterMaxTileRows = 8;
// Output planes of at most this many positions (squeeze-excitation's FCs on 1 x 1, the last
// stages' 2 x 2) take a prepacked filter of any depth: there the input-packing kernel fills
// 1-4 of its NR columns, and the packed filter's tile is the few positions by NR filters (one
// position: out's filters are consecutive, loaded and stored as vectors, no gather). A
// shallower filter over a run-time plane is packed besides (hexir-cpu-pack-matmul-operands'
// dual unpack) and LowerConvolutionsToKernels chooses by this test at run time.
constexpr int64_t kTinyPlanePositions = 4;
// Output sides of the square planes a dynamic export's packed-filter kernel has static-plane
// variants for (tested at run time; see CPUConvolutionPackedFilter.cpp).
constexpr int64_t kPackedFilterPlaneOutputs[] = {2, 4};
// `epilogue` (CPUConvolutionEpilogue.h): the register tiles start at the bias of their
// filters and are stored, ReLU'd, not added to out.
bool LowerConvolutionOnPackedFilter(mlir::func::FuncOp kernel, mlir::linalg::LinalgOp op,
                                    const ConvolutionGeometry& g, const MatmulTiles& tiles,
                                    const ConvolutionEpilogue& epilogue);
// Whether LowerConvolutionOnPackedFilter takes `op` (creating nothing).
bool TakesPackedFilter(mlir::linalg::LinalgOp op, const ConvolutionGeometry& g, const MatmulTiles& tiles);

// Rewrites every such convolution of the bufferized `kernel` (max pools: CPUMaxPool.h); a
// dense or grouped one whose out (or its ReLU's output) has statically contiguous rows, or
// that runs on a packed filter (whose kernel stores out at any strides), first absorbs its
// bias fill and ReLU (CPUConvolutionEpilogue.h).
void LowerConvolutionsToKernels(mlir::func::FuncOp kernel, const MatmulTiles& tiles);

}  // namespace hexir::codegen
