// A dense or grouped convolution's bias and ReLU in its kernel's register tiles
// (hexir-cpu-lower-executables, on bufferized kernels, before the convolution kernels of
// CPUConvolutionKernel.h). The ONNX importer's Conv + Relu bufferizes as three passes over
// the output, the middle one the convolution:
//
//   linalg.generic ins(bias : memref<F>) outs(T)  {yield bias[f]}     (or linalg.fill of T)
//   <convolution> ins(x, w) outs(T)                                  (T += x * w)
//   linalg.generic ins(T) outs(O)  {yield maximumf(T, 0)}             (optional)
//
// with T a temporary only these read. Absorbed, the convolution writes O (or T, without the
// ReLU) itself: its register tiles start at bias[f] (or the fill value) instead of reading
// out, and its last K block stores maximumf(acc, 0): the bias and ReLU passes and the
// temporary are gone (SqueezeNet's, bench/README.md "Convolution epilogues"). Where out's rows
// are contiguous only at run time (a dynamic export's), CPUConvolutionKernel.cpp absorbs a
// copy of the three ops under its run-time test and keeps the originals for the else branch;
// a kernel on a packed filter, which stores out at any strides, absorbs them as they are.
#pragma once

#include <optional>

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace hexir::codegen {

struct ConvolutionEpilogue {
  mlir::Value bias;   // memref<F> (out's filters): out starts at bias[f]; or
  mlir::Value fill;   // an f32 scalar out starts at
  bool relu = false;  // maximumf(v, 0) on the values stored last (needs bias or fill)
  bool initializes() const { return bias || fill; }
};

// Finds `conv`'s epilogue as above: the op writing all of its out just before it (only ops
// without memory effects between) and, when out is an allocation nothing else reads, the
// ReLU just after it writing another buffer of out's shape that x and w are not views of.
// Then erases the ops found, points `conv`'s out at the ReLU's output and returns what the
// kernel must do instead; returns an empty epilogue (and changes nothing) otherwise. With
// `outContiguous`, the ReLU's output must also pass it (the kernel writes it as rows).
// `instead`: ops that also use out but run instead of these (the originals the loop lowering
// keeps on the other side of a run-time test, when `conv` and its epilogue are copies).
ConvolutionEpilogue AbsorbConvolutionEpilogue(mlir::linalg::LinalgOp conv,
                                              bool (*outContiguous)(mlir::Type),
                                              llvm::ArrayRef<mlir::Operation*> instead = {});

// The ops AbsorbConvolutionEpilogue would absorb, changing nothing and testing no contiguity:
// the op writing out's initial value (nullopt without one), and the ReLU with the buffer it
// writes (both null when there is none to absorb).
struct EpilogueOps {
  mlir::Operation* init = nullptr;
  mlir::Operation* relu = nullptr;
  mlir::Value result;
};
std::optional<EpilogueOps> FindConvolutionEpilogue(mlir::linalg::LinalgOp conv,
                                                   llvm::ArrayRef<mlir::Operation*> instead = {});

}  // namespace hexir::codegen
